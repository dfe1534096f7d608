"""VizWiz-VQA: questions from blind users (wiring of ``lmms_eval.scoring.vqa``; ten answers each)."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.vqa import textvqa_accuracy

POST_PROMPT = (
    "\nWhen the provided information is insufficient, respond with 'Unanswerable'."
    "\nAnswer the question using a single word or phrase."
)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The question with ``str.capitalize`` applied (first letter upper, the rest lower), as published."""
    return with_prompts(str(doc["question"]).capitalize(), lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``exact_match``: the VQA soft accuracy (EvalAI normalisation) against the ten answers."""
    return {"exact_match": textvqa_accuracy(results[0], doc["answers"] or [])}


# The published package's names for these helpers: task YAMLs written for it reference them.
vizwiz_vqa_doc_to_text = doc_to_text
vizwiz_vqa_doc_to_visual = doc_to_visual
vizwiz_vqa_process_results = process_results
