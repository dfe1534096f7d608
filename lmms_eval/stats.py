"""Statistics: standard errors, bootstrap, pooled group errors.

Used by the evaluator (and later by the comparer and the server), tested in isolation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

MEAN_TYPE_AGGREGATIONS = ("mean",)


def mean_stderr(values: Sequence[float]) -> float:
    """Analytic standard error of a mean: ``std(ddof=1) / sqrt(n)`` (NaN for n < 2)."""
    arr = np.asarray([float(v) for v in values if v is not None], dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size < 2:
        return float("nan")
    return float(arr.std(ddof=1) / math.sqrt(arr.size))


def bootstrap_stderr(
    aggregate: Callable[[list[Any]], Any], items: Sequence[Any], iters: int, seed: int = 1234
) -> float:
    """Standard deviation of ``aggregate`` over ``iters`` resamples with replacement."""
    n = len(items)
    if n < 2 or iters <= 0:
        return float("nan")
    rng = np.random.default_rng(seed)
    values = []
    pool = list(items)
    for _ in range(iters):
        indices = rng.integers(0, n, size=n)
        value = aggregate([pool[i] for i in indices])
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values.append(float(value))
    if len(values) < 2:
        return float("nan")
    return float(np.std(values, ddof=1))


def pooled_stderr(stderrs: Sequence[float], sizes: Sequence[int]) -> float:
    """Pooled standard error of a size-weighted mean of subtask scores.

    ``sqrt( sum((n_i - 1) * se_i^2 * n_i) / (sum(n_i) - k) / sum(n_i) )``, the formula the published
    package uses for group scores.
    """
    if not stderrs or any(s is None or math.isnan(s) for s in stderrs):
        return float("nan")
    sizes_arr = np.asarray(sizes, dtype=float)
    se = np.asarray(stderrs, dtype=float)
    total = sizes_arr.sum()
    k = len(sizes_arr)
    if total - k <= 0:
        return float("nan")
    variance = float(np.sum((sizes_arr - 1) * se**2 * sizes_arr) / (total - k))
    return math.sqrt(variance / total)


def weighted_mean(values: Sequence[float], sizes: Sequence[int], weight_by_size: bool) -> float:
    weights = np.asarray(sizes if weight_by_size else [1] * len(values), dtype=float)
    return float(np.sum(np.asarray(values, dtype=float) * weights) / weights.sum())
