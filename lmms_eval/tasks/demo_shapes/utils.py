"""demo_shapes: images are drawn from each document's spec by ``lmms_eval.demo.shapes``."""

from __future__ import annotations

from typing import Any

from PIL import Image

from lmms_eval.demo.shapes import SKILLS, render, score


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [render(doc)]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}{kwargs.get('post_prompt', '')}"


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float | None]:
    """Overall ``accuracy`` plus ``<skill>_accuracy``, which is None for documents of other skills."""
    correct = score(str(results[0]), str(doc["answer"]))
    metrics: dict[str, float | None] = {"accuracy": correct}
    for skill in SKILLS:
        metrics[f"{skill}_accuracy"] = correct if doc["category"] == skill else None
    return metrics
