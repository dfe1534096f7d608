"""Mean relative accuracy (MRA) of numeric answers, as VSI-Bench scores distances, sizes and counts.

For a prediction ``p`` and a gold value ``g``, the relative error is ``|p - g| / |g|``. At each
confidence threshold ``θ`` in 0.50, 0.55, ..., 0.95 the answer counts when the relative error is
at most ``1 - θ``; MRA is the share of the ten thresholds met. Worked example: ``g = 4, p = 5``
has a relative error of 0.25, which is within ``1 - θ`` for θ = 0.50 ... 0.75 (six thresholds),
so MRA = 0.6. The comparison is made in floating point as published, so an error that equals a
bound exactly may fall either side of it (``g = 5, p = 6``: 0.2 misses ``1 - 0.8``, MRA 0.6). A gold value of 0 has no relative error: only an exact 0 counts (MRA 1), anything
else scores 0.

:func:`first_number` reads the number an answer gives: the first number written in digits
(``"about 4.5 m"`` -> 4.5, ``"3 or 4"`` -> 3, ``"4,000"`` -> 4, as the published reader does), else
the first English number word (``"four"`` -> 4); None when there is neither (MRA 0).
"""

from __future__ import annotations

import re

# 0.50, 0.55, ..., 0.95, in floating point as numpy.linspace(0.5, 0.95, 10) gives them: the
# published comparison is exact, so an error of exactly 0.2 misses 1 - 0.8 = 0.19999999999999996
THRESHOLDS = tuple([0.5 + i * ((0.95 - 0.5) / 9) for i in range(9)] + [0.95])
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)


def first_number(answer: object) -> float | None:
    """The first number in ``answer`` (digits first, then number words up to twenty); None."""
    text = str(answer or "")
    match = _NUMBER.search(text)
    if match is not None:
        return float(match.group())
    word = _WORD.search(text)
    return float(_WORDS.index(word.group(1).lower())) if word else None


def mean_relative_accuracy(
    prediction: float | None, gold: float, thresholds: tuple[float, ...] = THRESHOLDS
) -> float:
    """The share of ``thresholds`` θ with ``|prediction - gold| / |gold| <= 1 - θ`` (module doc)."""
    if prediction is None:
        return 0.0
    if gold == 0:
        return 1.0 if prediction == 0 else 0.0
    error = abs(prediction - gold) / abs(gold)
    return sum(1 for theta in thresholds if error <= 1 - theta) / len(thresholds)


__all__ = ["THRESHOLDS", "first_number", "mean_relative_accuracy"]
