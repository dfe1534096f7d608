"""DynaMath, the ``_reasoning`` variant: seed math questions each drawn in several variants, answered
as ``<think>...</think><answer>...</answer>`` (:mod:`lmms_eval.scoring.reasoning_tags`).

Prompt (as published): a system turn with the reasoning instruction, then ``decoded_image`` and the
``question`` as is. Published keys group the documents by ``id``: ``dynamath_average`` is the mean
over groups of each group's accuracy and ``dynamath_worst`` the mean over groups of each group's
lowest score. The ``_strict`` keys (ours) follow the DynaMath definitions over the seed question
``question_id``: the share of all documents right, and the share of seed questions right in every
variant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import rgb
from lmms_eval.scoring import reasoning_tags


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> str:
    return str(doc["question"])


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    image = doc.get("decoded_image")
    return [] if image is None else [rgb(image)]


def doc_to_messages(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in doc_to_visual(doc)]
    content.append({"type": "text", "text": doc_to_text(doc)})
    return [
        {"role": "system", "content": [{"type": "text", "text": reasoning_tags.SYSTEM_PROMPT}]},
        {"role": "user", "content": content},
    ]


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    response = str(results[0]) if results else ""
    acc = reasoning_tags.acc_score(response, doc["ground_truth"])
    published = {"acc": acc, "question_id": doc["question_id"], "variant_id": doc["id"]}
    ours = {**published, "group": doc["question_id"]}
    published = {**published, "group": doc["id"]}
    return {
        "dynamath_average": published,
        "dynamath_worst": published,
        "dynamath_average_strict": ours,
        "dynamath_worst_strict": ours,
    }


def _groups(items: list[Mapping[str, Any]]) -> list[list[float]]:
    groups: dict[Any, list[float]] = {}
    for item in items:
        groups.setdefault(str(item["group"]), []).append(float(item["acc"]))
    return list(groups.values())


def aggregate_average(items: list[Mapping[str, Any]]) -> float:
    """The mean over groups of each group's accuracy."""
    groups = _groups(items)
    return sum(sum(g) / len(g) for g in groups) / len(groups) if groups else float("nan")


def aggregate_worst(items: list[Mapping[str, Any]]) -> float:
    """The mean over groups of each group's lowest score (1 only when all of a group is right)."""
    groups = _groups(items)
    return sum(min(g) for g in groups) / len(groups) if groups else float("nan")


def aggregate_all(items: list[Mapping[str, Any]]) -> float:
    """The share of all documents answered right."""
    return sum(float(item["acc"]) for item in items) / len(items) if items else float("nan")
