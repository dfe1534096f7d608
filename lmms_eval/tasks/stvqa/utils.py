"""ST-VQA (test): scene-text questions whose answers are hidden; the run writes the submission file."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.api.prompts import rgb, user_message, with_prompts

POST_PROMPT = "\nAnswer the question using a single word or phrase."
SUBMISSION_FILE = "stvqa_test_submission.json"


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(str(doc["question"]), lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def doc_to_target(doc: dict[str, Any]) -> list[str]:
    """The answers where the copy has them (the public test split has none)."""
    return list(doc.get("answers") or [])


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    return {"submission": {"question_id": doc["question_id"], "answer": str(results[0] or "").strip()}}


def aggregate_submission(items: list[dict[str, Any]], context: AggregationContext) -> None:
    """Write ``[{question_id, answer}]`` for the ST-VQA evaluation server (ANLS); no score."""
    context.write_json(SUBMISSION_FILE, items)
    return None


# The published package's names for these helpers: task YAMLs written for it reference them.
stvqa_doc_to_text = doc_to_text
stvqa_doc_to_visual = doc_to_visual
stvqa_process_results = process_results
