"""Point estimates with standard errors and confidence intervals.

* :func:`mean_estimate`: analytic standard error ``std(ddof=1)/sqrt(n)``; a Wilson interval for a
  proportion (0/1 values), a Student-t interval (cut to [0, 1] for scores in [0, 1]) otherwise.
* :func:`clustered_mean_estimate`: the cluster-robust standard error of a mean (Miller 2024, "Adding
  Error Bars to Evals", eq. 4) for questions that share a cluster (a video, an image, a passage).
* :func:`group_estimate`: a size-weighted or plain mean of independent subtask scores, with the
  standard error of that weighted mean.
* :func:`stability_metrics`: expected accuracy, consensus accuracy, within-question variance and
  consistency rate of repeated sampling.

Missing values (``None`` / NaN) are left out and counted; n = 1 gives a value without a standard error
(a proportion still gets its Wilson interval). ``Estimate.interval`` names the interval's method.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from lmms_eval.stats.distributions import t_ppf
from lmms_eval.stats.intervals import WILSON, clip_interval, proportion_interval, wilson_interval

DEFAULT_ALPHA = 0.05


# how an interval was formed (recorded per metric in the results as ``ci_methods``)
WILSON_CLUSTERED = "wilson-effective-n"
T = "t"
NORMAL = "normal"
PERCENTILE = "bootstrap-percentile"
CLIPPED = ", clipped to [0, 1]"


@dataclass(frozen=True)
class Estimate:
    """A score with its uncertainty. Unknown parts are NaN.

    ``interval`` names how the interval was formed (``"wilson"``, ``"t"``, ``"t, clipped to [0, 1]"``,
    ``"bootstrap-percentile"``...; empty without an interval).
    """

    value: float
    stderr: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int = 0
    method: str = "none"  # analytic | bootstrap | clustered | pooled | none
    details: dict[str, Any] = field(default_factory=dict)
    interval: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clean_numbers(values: Sequence[Any]) -> tuple[np.ndarray, int]:
    """Numeric values as floats, without None/NaN; also how many were dropped."""
    arr = np.asarray([math.nan if v is None else float(v) for v in values], dtype=float)
    keep = ~np.isnan(arr)
    return arr[keep], int((~keep).sum())


def t_interval(value: float, stderr: float, df: float, alpha: float = DEFAULT_ALPHA) -> tuple[float, float]:
    """``value ± t_{1-alpha/2, df} * stderr`` (NaN when the error or df is unknown)."""
    if math.isnan(stderr) or df <= 0:
        return math.nan, math.nan
    if stderr == 0:
        return value, value
    half = t_ppf(1.0 - alpha / 2.0, df) * stderr
    return value - half, value + half


def is_binary(values: np.ndarray) -> bool:
    """Whether every value is 0 or 1 (a mean of them is a proportion)."""
    return bool(values.size) and bool(np.all((values == 0.0) | (values == 1.0)))


def in_unit_range(values: np.ndarray) -> bool:
    """Whether every value lies in [0, 1] (the mean cannot leave it)."""
    return bool(values.size) and float(values.min()) >= 0.0 and float(values.max()) <= 1.0


def bounded_t_interval(
    values: np.ndarray, value: float, stderr: float, df: float, alpha: float = DEFAULT_ALPHA
) -> tuple[float, float, str]:
    """A t interval (normal for infinite df), cut to [0, 1] when every value lies there; the last
    item names the method and says whether it cut."""
    low, high = t_interval(value, stderr, df, alpha)
    name = NORMAL if math.isinf(df) else T
    if not in_unit_range(values):
        return low, high, name
    cut = clip_interval(low, high, 0.0, 1.0)
    return cut.low, cut.high, name + (CLIPPED if cut.clipped else "")


def mean_estimate(
    values: Sequence[Any], alpha: float = DEFAULT_ALPHA, binary_method: str = WILSON
) -> Estimate:
    """Mean, analytic standard error ``sd(ddof=1)/sqrt(n)`` and a confidence interval.

    0/1 values (a proportion) get the ``binary_method`` interval (Wilson by default, or
    Clopper-Pearson): inside [0, 1] and never of zero width, even at 0% or 100%. Other values get a
    t interval (df = n - 1), cut to [0, 1] when every value lies in [0, 1] (recorded in ``interval``).
    """
    arr, dropped = clean_numbers(values)
    n = int(arr.size)
    if n == 0:
        return Estimate(math.nan, n=0, details={"dropped": dropped})
    value = float(arr.mean())
    stderr = float(arr.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    details = {"dropped": dropped}
    if is_binary(arr):
        low, high = proportion_interval(float(arr.sum()), n, alpha, binary_method)
        return Estimate(value, stderr, low, high, n, "analytic", details, binary_method)
    if n < 2:
        return Estimate(value, n=n, method="analytic", details=details)
    low, high, how = bounded_t_interval(arr, value, stderr, n - 1, alpha)
    return Estimate(value, stderr, low, high, n, "analytic", details, how)


def cluster_label(cluster: Any) -> str:
    """A cluster id as a string key (numpy scalars compare equal to the Python numbers they hold)."""
    if hasattr(cluster, "item") and callable(cluster.item) and getattr(cluster, "ndim", 1) == 0:
        cluster = cluster.item()
    return repr(cluster)


def clustered_stderr(values: Sequence[float], clusters: Sequence[Hashable]) -> tuple[float, int]:
    """Cluster-robust standard error of the mean and the number of clusters.

    ``SE_c = sqrt( var(s, ddof=1)/n + (1/n^2) * sum_c [ (sum_{i in c} d_i)^2 - sum_{i in c} d_i^2 ] )``
    with ``d_i = s_i - mean(s)``: the plain variance plus the within-cluster covariance terms
    (Miller 2024, eq. 4). With one item per cluster it equals the plain standard error.
    """
    arr = np.asarray(values, dtype=float)
    if arr.size != len(clusters):
        raise ValueError(f"{arr.size} values but {len(clusters)} cluster ids")
    n = arr.size
    _, codes = np.unique(np.asarray([cluster_label(c) for c in clusters]), return_inverse=True)
    n_clusters = int(codes.max()) + 1 if n else 0
    if n < 2:
        return math.nan, n_clusters
    d = arr - arr.mean()
    sums = np.bincount(codes, weights=d)
    squares = np.bincount(codes, weights=d * d)
    variance = arr.var(ddof=1) / n + float(np.sum(sums**2 - squares)) / n**2
    return math.sqrt(max(variance, 0.0)), n_clusters


def clustered_mean_estimate(
    values: Sequence[Any], clusters: Sequence[Hashable], alpha: float = DEFAULT_ALPHA
) -> Estimate:
    """Mean with the cluster-robust standard error.

    0/1 values get a Wilson interval on the effective sample size ``n / deff`` with the design effect
    ``deff = (SE_clustered / SE_plain)²``, kept between 1 and ``n / clusters`` (between no clustering and
    clusters that are internally identical); at 0% or 100% the design effect cannot be estimated and
    the conservative ``n_eff = clusters`` is used. Other values get a t interval on ``clusters - 1``
    df, cut to [0, 1] when every value lies there. With a single cluster the clustered error is not
    identifiable: NaN.
    """
    pairs = [(float(v), c) for v, c in zip(values, clusters) if v is not None and not math.isnan(float(v))]
    dropped = len(values) - len(pairs)
    if not pairs:
        return Estimate(math.nan, details={"dropped": dropped, "n_clusters": 0})
    arr = np.asarray([v for v, _ in pairs])
    stderr, n_clusters = clustered_stderr(arr.tolist(), [c for _, c in pairs])
    value = float(arr.mean())
    details: dict[str, Any] = {"dropped": dropped, "n_clusters": n_clusters}
    if n_clusters < 2:
        return Estimate(value, n=arr.size, method="clustered", details=details)
    if is_binary(arr):
        n_eff = effective_sample_size(arr, stderr, n_clusters)
        details["effective_n"] = n_eff
        low, high = wilson_interval(value * n_eff, n_eff, alpha)
        return Estimate(value, stderr, low, high, arr.size, "clustered", details, WILSON_CLUSTERED)
    low, high, how = bounded_t_interval(arr, value, stderr, n_clusters - 1, alpha)
    return Estimate(value, stderr, low, high, arr.size, "clustered", details, how)


def effective_sample_size(values: np.ndarray, clustered_se: float, n_clusters: int) -> float:
    """``n / deff`` with ``deff = (clustered_se / plain_se)²``, between ``n_clusters`` and ``n``."""
    n = int(values.size)
    plain_var = float(values.var(ddof=1)) / n if n > 1 else 0.0
    if plain_var <= 0.0 or math.isnan(clustered_se):
        return float(n_clusters)
    deff = clustered_se**2 / plain_var
    return float(min(max(n / max(deff, 1.0), n_clusters), n))


def group_estimate(
    estimates: Sequence[Estimate], sizes: Sequence[int], weight_by_size: bool, alpha: float = DEFAULT_ALPHA
) -> Estimate:
    """A (size-weighted or plain) mean of subtask scores with the standard error of that mean.

    Subtasks are evaluated on different documents, so their estimates are independent and
    ``Var(sum w_i x_i) = sum w_i^2 se_i^2``. A subtask without an error bar makes the group's NaN;
    the interval is normal (the subtask errors come from different methods), cut to [0, 1] when every
    subtask score lies there.
    """
    values = np.asarray([e.value for e in estimates], dtype=float)
    weights = np.asarray(sizes if weight_by_size else [1] * len(estimates), dtype=float)
    if not len(values) or weights.sum() <= 0:
        return Estimate(math.nan)
    weights = weights / weights.sum()
    value = float(np.sum(weights * values))
    ses = np.asarray([e.stderr for e in estimates], dtype=float)
    n = int(sum(sizes))
    if np.isnan(ses).any():
        return Estimate(value, n=n, method="pooled")
    stderr = float(math.sqrt(np.sum(weights**2 * ses**2)))
    low, high, how = bounded_t_interval(values, value, stderr, math.inf, alpha)
    return Estimate(value, stderr, low, high, n, "pooled", interval=how)


def stability_metrics(scores: Sequence[Sequence[Any]]) -> dict[str, float]:
    """Metrics of repeated sampling; ``scores[q]`` holds the k per-sample scores of question q.

    * expected_accuracy: mean of all k * N scores;
    * consensus_accuracy: fraction of questions whose score sum exceeds k/2 (a majority of samples
      correct);
    * internal_variance: mean over questions of the per-question variance (ddof=1);
    * consistency_rate: fraction of questions whose k scores are all equal.
    """
    rows = [clean_numbers(row)[0] for row in scores]
    rows = [r for r in rows if r.size]
    if not rows:
        return dict.fromkeys(
            ("expected_accuracy", "consensus_accuracy", "internal_variance", "consistency_rate"), math.nan
        )
    every = np.concatenate(rows)
    return {
        "expected_accuracy": float(every.mean()),
        "consensus_accuracy": float(np.mean([r.sum() > r.size / 2 for r in rows])),
        "internal_variance": float(np.mean([r.var(ddof=1) if r.size > 1 else 0.0 for r in rows])),
        "consistency_rate": float(np.mean([bool(np.all(r == r[0])) for r in rows])),
    }
