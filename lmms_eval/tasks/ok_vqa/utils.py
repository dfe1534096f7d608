"""OK-VQA: questions that need outside knowledge (wiring of ``lmms_eval.scoring.vqa``)."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.vqa import normalize_answer, textvqa_accuracy

POST_PROMPT = (
    "\nWhen the provided information is insufficient, respond with 'Unanswerable'."
    "\nAnswer the question using a single word or phrase."
)
SUBMISSION_FILE = "ok_vqa_val2014_submission.json"


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(str(doc["question"]), lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """``exact_match`` (VQA soft accuracy) and the ``submission`` item ``{question_id, answer}``."""
    return {
        "exact_match": textvqa_accuracy(results[0], doc["answers"] or []),
        "submission": {"question_id": doc["question_id"], "answer": normalize_answer(results[0])},
    }


def aggregate_submission(items: list[dict[str, Any]], context: AggregationContext) -> None:
    """Write the normalised answers keyed by question (``ok_vqa_val2014_submission.json``); no score."""
    context.write_json(SUBMISSION_FILE, items)
    return None


# The published package's names for these helpers: task YAMLs written for it reference them.
ok_vqa_doc_to_text = doc_to_text
ok_vqa_doc_to_visual = doc_to_visual
ok_vqa_process_results = process_results
