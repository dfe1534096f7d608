"""Text-answer matching rules: ChartQA relaxed accuracy, OCRBench substring matching, ANLS.

* :func:`relaxed_correctness` (ChartQA): when both answers read as numbers (Python ``float``, so
  ``nan`` and ``inf`` are numbers too; a trailing ``"%"`` divides by 100) and the target is
  non-zero, the prediction is correct within 5% of the target (``|p - t| / |t| <= 0.05``); otherwise
  the two strings must match ignoring case. A ``nan`` or ``inf`` on either side of the numeric
  comparison is never correct (``"nan"`` does not even match ``"nan"``), as in the official code.
* :func:`ocrbench_match` (OCRBench): correct when any ground truth, normalised, is a substring of
  the normalised prediction. Normalisation folds full-width ASCII (U+FF01-U+FF5E, and the
  ideographic space) to ASCII, lower-cases, strips, and turns newlines into spaces; for the
  ``HME100k`` source dataset (handwritten formulas) it strips, turns newlines into spaces and then
  removes every space instead, keeping case.
* :func:`anls_score` (DocVQA, InfographicVQA): Average Normalized Levenshtein Similarity as the
  official DocVQA script computes it. The edit distance is measured between the two answers
  lower-cased, stripped and with inner whitespace collapsed, but it is divided by the length of the
  longer of the *raw* answers (as given, spaces included), so padding lowers nothing when the
  normalised strings are equal and lowers the penalty of a difference otherwise:
  ``"  abd "`` against ``"abc"`` is ``1 - 1/6``. The best reference counts; a best similarity
  below the threshold (0.5) scores 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "anls_score",
    "edit_distance",
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
    """``text`` as a float (``"12.5%"`` -> 0.125, ``"nan"`` -> nan), or None when it is not a number.

    Trailing ``%`` signs are all removed and divide by 100 once, as in the official code.
    """
    text = text.strip()
    scale = 1.0
    if text.endswith("%"):
        text, scale = text.rstrip("%"), 0.01
    try:
        return float(text) * scale
    except ValueError:
        return None


def relaxed_correctness(prediction: Any, target: Any, tolerance: float = RELAXED_TOLERANCE) -> bool:
    """ChartQA relaxed accuracy (see the module docstring); the tolerance is relative to the target."""
    pred_text, target_text = str(prediction).strip(), str(target).strip()
    pred_number = parse_relaxed_number(pred_text)
    target_number = parse_relaxed_number(target_text)
    if pred_number is not None and target_number is not None and target_number != 0:
        error = abs(pred_number - target_number) / abs(target_number)
        return math.isfinite(error) and error <= tolerance  # nan / inf anywhere: never correct
    return pred_text.lower() == target_text.lower()


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance of two strings (insertions, deletions, substitutions all cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _anls_normalise(text: str) -> str:
    return " ".join(text.lower().split())


def anls_score(prediction: Any, references: Sequence[Any] | str, threshold: float = 0.5) -> float:
    """ANLS of one prediction against its references (see the module docstring)."""
    raw_prediction = str(prediction)
    golds = [references] if isinstance(references, str) else [str(r) for r in references]
    pred = _anls_normalise(raw_prediction)
    best = 0.0
    for gold in golds:
        # the official script measures the raw lengths, upper-cased (one "ß" counts as "SS")
        longest = max(len(gold.upper()), len(raw_prediction.upper()))
        similarity = 1.0 - edit_distance(pred, _anls_normalise(gold)) / longest if longest else 1.0
        best = max(best, similarity)
    return best if best >= threshold else 0.0


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
