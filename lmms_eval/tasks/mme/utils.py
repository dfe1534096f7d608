"""MME task wiring; the answer rule and the acc/acc+ aggregation live in :mod:`lmms_eval.scoring.yesno`."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.yesno import MME_YES_NO_SUFFIX, mme_items, mme_report, mme_split


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The question with the pre/post prompts; a post prompt replaces the " Please answer yes or no." suffix."""
    kwargs = lmms_eval_specific_kwargs or {}
    question = str(doc["question"]).strip()
    if kwargs.get("post_prompt"):
        question = question.replace(MME_YES_NO_SUFFIX, "")
    return with_prompts(question, kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results_batch(docs: list[dict[str, Any]], results: list[list[Any]]) -> list[dict[str, Any]]:
    """Per doc, ``mme_perception_score`` or ``mme_cognition_score`` (by category).

    The value is ``{question_id, category, score, image_score}``; scoring the run as one batch lets
    each question carry its image's pair score for the error-bar bootstrap.
    """
    rows = [
        (str(doc["question_id"]), str(doc["category"]), str(doc["answer"]), str(result[0]))
        for doc, result in zip(docs, results)
    ]
    return [{f"mme_{mme_split(item['category'])}_score": item} for item in mme_items(rows)]


def aggregate_perception(items: list[dict[str, Any]], context: AggregationContext) -> dict[str, float]:
    """Sum of the 10 perception category scores, plus each category's score.

    Bootstrap resamples (``context.dry``) are scored image by image from each question's
    ``image_score``; the two-questions check applies to the real results.
    """
    return mme_report(items, "perception", resample=context.dry)


def aggregate_cognition(items: list[dict[str, Any]], context: AggregationContext) -> dict[str, float]:
    """Sum of the 4 cognition category scores, plus each category's score (see aggregate_perception)."""
    return mme_report(items, "cognition", resample=context.dry)


# The published package's names for these helpers: task YAMLs written for it reference them.
mme_doc_to_text = doc_to_text
mme_doc_to_visual = doc_to_visual
