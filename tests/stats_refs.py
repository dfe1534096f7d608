"""Reference computations for the statistics tests, written from the papers on top of statsmodels/scipy."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint


def newcombe(a: Sequence[float], b: Sequence[float], alpha: float = 0.05) -> tuple[float, float]:
    """Newcombe (1998) method 10 for paired proportions, from statsmodels' Wilson intervals."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = xa.size
    e, f = int(np.sum((xa == 1) & (xb == 1))), int(np.sum((xa == 1) & (xb == 0)))
    g, h = int(np.sum((xa == 0) & (xb == 1))), int(np.sum((xa == 0) & (xb == 0)))
    p1, p2 = (e + f) / n, (e + g) / n
    l1, u1 = proportion_confint(e + f, n, alpha, "wilson")
    l2, u2 = proportion_confint(e + g, n, alpha, "wilson")
    den = (e + f) * (g + h) * (e + g) * (f + h)
    phi = (e * h - f * g) / math.sqrt(den) if den else 0.0
    low = p1 - p2 - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = p1 - p2 + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return max(low, -1.0), min(high, 1.0)


def mcnemar_p(a: Sequence[float], b: Sequence[float]) -> float:
    """McNemar's exact test as scipy's binomial test on the discordant pairs."""
    wins = int(np.sum((np.asarray(a) == 1) & (np.asarray(b) == 0)))
    losses = int(np.sum((np.asarray(a) == 0) & (np.asarray(b) == 1)))
    return float(sps.binomtest(wins, wins + losses).pvalue) if wins + losses else 1.0
