"""DocVQA and InfographicVQA (the infovqa folder includes this folder's template): ANLS wiring."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import doc_image, doc_question
from lmms_eval.scoring.text import anls_score


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``anls`` of the first output against the doc's reference answers (official DocVQA rule)."""
    prediction = results[0] if results else ""
    return {"anls": anls_score(prediction, doc["answers"])}


# The published package's names for these helpers: task YAMLs written for it reference them.
docvqa_doc_to_text = doc_question
docvqa_doc_to_visual = doc_image
