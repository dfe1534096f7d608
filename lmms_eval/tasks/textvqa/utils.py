"""TextVQA: prompt building and wiring of the VQA soft accuracy (``lmms_eval.scoring.vqa``)."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.vqa import normalize_answer, textvqa_accuracy

POST_PROMPT = "\nAnswer the question using a single word or phrase."
SUBMISSION_FILE = "textvqa_test_submission.json"


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The question with ``str.capitalize`` applied (first letter upper, the rest lower), as published.

    With ``ocr: true`` in the kwargs, ``"\\nReference OCR token: t1, t2, ..."`` follows the question.
    """
    text = str(doc["question"]).capitalize()
    if (lmms_eval_specific_kwargs or {}).get("ocr"):
        text += f"\nReference OCR token: {', '.join(doc['ocr_tokens'])}"
    return with_prompts(text, lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``exact_match``: the VQA soft accuracy of the answer against the ten human answers."""
    return {"exact_match": textvqa_accuracy(results[0], doc["answers"] or [])}


def process_results_test(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    return {"submission": {"question_id": doc["question_id"], "answer": normalize_answer(results[0])}}


def aggregate_submission(items: list[dict[str, Any]], context: AggregationContext) -> None:
    """Write the EvalAI submission file (a list of ``{question_id, answer}``); no score."""
    context.write_json(SUBMISSION_FILE, items)
    return None


# The published package's names for these helpers: task YAMLs written for it reference them.
textvqa_doc_to_text = doc_to_text
textvqa_doc_to_visual = doc_to_visual
textvqa_process_results = process_results
