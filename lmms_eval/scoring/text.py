"""Text-answer matching rules: ChartQA relaxed accuracy, OCRBench substring matching, ANLS.

* :func:`relaxed_correctness` (ChartQA): when both answers read as numbers (``"x%"`` reads as
  ``x / 100``) and the target is non-zero, the prediction is correct within 5% of the target
  (``|p - t| / |t| <= 0.05``); otherwise the two strings must match ignoring case.
* :func:`ocrbench_match` (OCRBench): correct when any ground truth, normalised, is a substring of
  the normalised prediction. Normalisation folds full-width ASCII (U+FF01-U+FF5E, and the
  ideographic space) to ASCII, lower-cases, strips, and turns newlines into spaces; for the
  ``HME100k`` source dataset (handwritten formulas) it strips, turns newlines into spaces and then
  removes every space instead, keeping case.
* :func:`anls_score` is the framework's ANLS (``lmms_eval.api.metrics``), re-exported here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from lmms_eval.api.metrics import anls_score

__all__ = [
    "anls_score",
    "ocrbench_match",
    "ocrbench_normalize",
    "parse_relaxed_number",
    "relaxed_correctness",
    "slug",
]

RELAXED_TOLERANCE = 0.05
HME_DATASET = "HME100k"
_FULL_WIDTH_OFFSET = 0xFF01 - 0x21
_FULL_WIDTH = {code: code - _FULL_WIDTH_OFFSET for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


def parse_relaxed_number(text: str) -> float | None:
    """``text`` as a finite float (``"12.5%"`` -> 0.125), or None when it is not a number."""
    text = text.strip()
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1], 0.01
    try:
        value = float(text)
    except ValueError:
        return None
    return value * scale if math.isfinite(value) else None


def relaxed_correctness(prediction: Any, target: Any, tolerance: float = RELAXED_TOLERANCE) -> bool:
    """ChartQA relaxed accuracy (see the module docstring); the tolerance is relative to the target."""
    pred_text, target_text = str(prediction).strip(), str(target).strip()
    pred_number = parse_relaxed_number(pred_text)
    target_number = parse_relaxed_number(target_text)
    if pred_number is not None and target_number:  # target_number is a non-zero number
        return abs(pred_number - target_number) / abs(target_number) <= tolerance
    return pred_text.lower() == target_text.lower()


def ocrbench_normalize(text: Any, source_dataset: str = "") -> str:
    """The OCRBench normalisation of a prediction or ground truth (see the module docstring)."""
    text = str(text)
    if source_dataset == HME_DATASET:
        return text.strip().replace("\n", " ").replace(" ", "")
    return text.translate(_FULL_WIDTH).lower().strip().replace("\n", " ")


def ocrbench_match(prediction: Any, answers: Sequence[Any] | str, source_dataset: str = "") -> bool:
    """True when a normalised ground truth is a substring of the normalised prediction."""
    references = [answers] if isinstance(answers, str) else list(answers)
    predicted = ocrbench_normalize(prediction, source_dataset)
    return any(ocrbench_normalize(ref, source_dataset) in predicted for ref in references)


def slug(name: str) -> str:
    """A category name as a result-key fragment: ``"Doc-oriented VQA"`` -> ``"doc_oriented_vqa"``."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")
