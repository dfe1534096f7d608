"""MMStar: the question already lists its options; scores are macro means over l2 categories."""

from __future__ import annotations

import logging
from typing import Any

from lmms_eval.scoring.choice import macro_mean, mcq_match

logger = logging.getLogger(__name__)

CATEGORIES = (
    "coarse perception",
    "fine-grained perception",
    "instance reasoning",
    "logical reasoning",
    "science & technology",
    "math",
)


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    """One item ``{index, l2_category, score}`` under the doc's category and under ``average``.

    ``score`` is 1.0 when the letter found in the output (A-D) is the gold letter.
    """
    category = str(doc["category"])
    if category not in CATEGORIES:
        logger.warning("mmstar: question %s has unknown category %r", doc.get("index"), category)
    item = {
        "index": doc.get("index"),
        "l2_category": doc["l2_category"],
        "score": float(mcq_match(results[0], doc["answer"])),
    }
    return {category: item, "average": item}


def aggregate(items: list[dict[str, Any]]) -> float:
    """The mean over l2 categories of each one's accuracy (every l2 category weighs the same)."""
    return macro_mean(items, "l2_category")
