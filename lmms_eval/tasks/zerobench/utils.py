"""ZeroBench: hard visual questions, one or more images each, scored by exact match
(:mod:`lmms_eval.scoring.zerobench`). The prompt is ``pre_prompt + question + post_prompt``; the images
are ``question_images_decoded`` in order (chat models get them all, then the text)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.zerobench import exact_match


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    return with_prompts(str(doc["question_text"]), lmms_eval_specific_kwargs)


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    return [rgb(image) for image in doc.get("question_images_decoded") or [] if image is not None]


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """``zerobench_exact_match``: the published item ``{question_id, prediction, target, score}``."""
    prediction = str(results[0]).strip() if results else ""
    target = str(doc["question_answer"])
    score = 1.0 if exact_match(prediction, target) else 0.0
    item = {"question_id": doc.get("question_id"), "prediction": prediction, "target": target, "score": score}
    return {"zerobench_exact_match": item}


def aggregate(items: list[Mapping[str, Any]]) -> float:
    """The share of questions answered exactly (0-1, as published)."""
    return sum(float(item["score"]) for item in items) / len(items) if items else float("nan")


# The published package's names for these helpers: task YAMLs written for it reference them.
zerobench_doc_to_text = doc_to_text
zerobench_doc_to_visual = doc_to_visual
zerobench_process_results = process_results
