"""MMStar: the question already lists its options; scores are macro means over l2 categories.

Each category key (and ``average``) scores letters by the published reader
(:func:`lmms_eval.scoring.published.published_mcq_letter`); the same key with ``_strict`` appended
scores them by ours (:func:`lmms_eval.scoring.choice.extract_mcq_answer`).
"""

from __future__ import annotations

import logging
from typing import Any

from lmms_eval.api.prompts import doc_image, doc_question
from lmms_eval.scoring.choice import macro_mean, mcq_match
from lmms_eval.scoring.published import published_mcq_letter

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
    """Items ``{index, l2_category, score}`` under the doc's category and ``average`` (the published
    letter rule) and under the same keys with ``_strict`` (ours).

    ``score`` is 1.0 when the letter read from the output (A-D) is the gold letter.
    """
    category = str(doc["category"])
    if category not in CATEGORIES:
        logger.warning("mmstar: question %s has unknown category %r", doc.get("index"), category)
    gold = str(doc["answer"]).strip()
    base = {"index": doc.get("index"), "l2_category": doc["l2_category"]}
    published = {**base, "score": float(published_mcq_letter(results[0]) == gold)}
    strict = {**base, "score": float(mcq_match(results[0], gold))}
    return {
        category: published,
        "average": published,
        f"{category}_strict": strict,
        "average_strict": strict,
    }


def aggregate(items: list[dict[str, Any]]) -> float:
    """The mean over l2 categories of each one's accuracy (every l2 category weighs the same)."""
    return macro_mean(items, "l2_category")


# The published package's names for these helpers: task YAMLs written for it reference them.
mmstar_doc_to_text = doc_question
mmstar_doc_to_visual = doc_image
mmstar_process_results = process_results
