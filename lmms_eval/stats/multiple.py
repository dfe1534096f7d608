"""Multiple-comparison corrections of p-values: Holm (family-wise error) and Benjamini-Hochberg
(false discovery rate). Both return adjusted p-values in the order given; NaN stays NaN and is not
counted in the family."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Correction = Literal["holm", "bh"]
CORRECTIONS: dict[str, str] = {
    "holm": "Holm-Bonferroni (family-wise error rate)",
    "bh": "Benjamini-Hochberg (false discovery rate)",
}


def _family(p_values: Sequence[float]) -> list[int]:
    """Indices of the p-values that take part (finite ones), by increasing p."""
    return sorted((i for i, p in enumerate(p_values) if math.isfinite(p)), key=lambda i: p_values[i])


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: ``max_{j<=k} min(1, (m - j) p_(j))`` for the k-th smallest."""
    order = _family(p_values)
    m = len(order)
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjustment: ``min_{j>=k} min(1, m p_(j) / j)``."""
    order = _family(p_values)
    m = len(order)
    adjusted = [math.nan] * len(p_values)
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, m * p_values[i] / (rank + 1))
        adjusted[i] = min(1.0, running)
    return adjusted


def adjust(p_values: Sequence[float], correction: Correction = "holm") -> list[float]:
    """The p-values adjusted by ``correction`` (``holm`` or ``bh``)."""
    return holm(p_values) if correction == "holm" else benjamini_hochberg(p_values)
