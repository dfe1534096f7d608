"""SimpleVQA: short factual questions about images; exact match after the EvalAI answer
normalisation of ``lmms_eval.scoring.vqa`` (case, punctuation, articles, number words)."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.vqa import normalize_answer

POST_PROMPT = "\nAnswer the question using a short phrase."


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The image (a ``datasets`` Image or a base64 string)."""
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(str(doc["question"]).strip(), lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``exact_match``: 1.0 when answer and gold normalise to the same text."""
    return {"exact_match": float(normalize_answer(results[0]) == normalize_answer(doc["answer"]))}
