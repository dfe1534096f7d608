"""VQAv2: prompt building and wiring of the VQA soft accuracy (``lmms_eval.scoring.vqa``)."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import doc_image, doc_question
from lmms_eval.scoring.vqa import vqav2_accuracy


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``exact_match``: the VQA soft accuracy against the answers (``[{answer, ...}, ...]``)."""
    return {"exact_match": vqav2_accuracy(results[0], doc["answers"] or [])}


# The published package's names for these helpers: task YAMLs written for it reference them.
vqav2_doc_to_text = doc_question
vqav2_doc_to_visual = doc_image
vqav2_process_results_val = process_results
