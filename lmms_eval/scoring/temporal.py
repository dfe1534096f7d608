"""Temporal grounding: reading an answer as a time interval, and temporal IoU.

- :func:`parse_interval` reads the first ``start - end`` (or ``start to end``) pair of times in a
  model's answer, as the published Charades-STA scorer reads it: ``"The event happens in the 2.5 -
  8.1 seconds"``, ``"2.5-8.1s"``, ``"from 3 to 10 seconds"``, ``"0:05 - 0:10"`` (a clock time is
  read as seconds: ``m:ss`` or ``h:mm:ss``). The two ends come back in order (``10 - 5`` is
  ``(5, 10)``). Answers without such a pair (``"[2.5, 8.1]"``, ``"at 4 seconds"``) give ``None``,
  which scores an IoU of 0.
- :func:`temporal_iou` is the intersection over union of two intervals (0 when they do not
  overlap or the union is empty).
- :func:`recall_at_iou` is the share of IoUs at or above a threshold (``R@0.5``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Interval = tuple[float, float]

_TIME = r"(?:\d+:)?\d+:\d+(?:\.\d+)?|\d+(?:\.\d+)?"
_PAIR = re.compile(rf"(?<![\d.:])({_TIME})\s*s?\s*(?:-|–|—|~|\bto\b)\s*({_TIME})", re.IGNORECASE)


def time_seconds(text: str) -> float:
    """Seconds of ``"12.5"``, ``"1:05"`` (m:ss) or ``"1:02:05.5"`` (h:mm:ss)."""
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def parse_interval(answer: object) -> Interval | None:
    """The first ``start - end`` / ``start to end`` pair of times in ``answer``, in order; None."""
    match = _PAIR.search(str(answer or ""))
    if match is None:
        return None
    start, end = time_seconds(match.group(1)), time_seconds(match.group(2))
    return (min(start, end), max(start, end))


def temporal_iou(predicted: Interval | None, gold: Interval) -> float:
    """Intersection over union of two ``(start, end)`` intervals in seconds; 0 for ``None``."""
    if predicted is None:
        return 0.0
    (p0, p1), (g0, g1) = sorted(predicted), sorted(gold)
    intersection = max(0.0, min(p1, g1) - max(p0, g0))
    union = max(p1, g1) - min(p0, g0)
    return intersection / union if union > 0 else 0.0


def recall_at_iou(ious: Sequence[float], threshold: float) -> float:
    """The share of ``ious`` at or above ``threshold`` (0 for none)."""
    return sum(1 for iou in ious if iou >= threshold) / len(ious) if ious else 0.0


__all__ = ["Interval", "parse_interval", "recall_at_iou", "temporal_iou", "time_seconds"]
