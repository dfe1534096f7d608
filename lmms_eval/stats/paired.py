"""Paired comparison of two runs scored on the same documents.

For per-document scores ``a_i`` and ``b_i`` the differences ``d_i = a_i - b_i`` carry the comparison:

* ``diff = mean(d)``, ``stderr = sd(d, ddof=1) / sqrt(n)``, ``t = diff / stderr`` with ``df = n - 1``;
* the two-sided p-value ``P(|T_{n-1}| >= |t|)`` (the paired t-test) and the interval
  ``diff ± t_{1-alpha/2, n-1} · stderr``;
* with cluster ids (questions sharing a video, an image, a passage) also the cluster-robust standard
  error of ``mean(d)`` (Miller 2024, "Adding Error Bars to Evals", eq. 4, applied to ``d``), whose
  interval and p-value use ``df = n_clusters - 1``.

Pairing removes the between-document variance both runs share, so the test is far more sensitive than
comparing two independent error bars.

Edge cases: pairs with a missing value (None / NaN) on either side are dropped and counted; n = 0
gives NaN everywhere; n = 1 gives the difference without an error bar; when every difference is the
same the standard error is 0, the interval collapses to the point and p is 0 (``diff != 0``) or 1
(``diff == 0``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from lmms_eval.stats.distributions import t_sf_two_sided
from lmms_eval.stats.estimates import DEFAULT_ALPHA, clustered_stderr, t_interval

NAN = math.nan


@dataclass(frozen=True)
class PairedResult:
    """The paired comparison of ``a`` against ``b``; ``diff`` is ``mean(a - b)``. Unknown parts are NaN.

    ``df = n - 1`` (0 when n = 0). The ``*_clustered`` fields are NaN and ``n_clusters`` is None when
    no cluster ids were given; with fewer than two clusters they stay NaN.
    """

    n: int
    mean_a: float
    mean_b: float
    diff: float
    stderr: float
    t: float
    df: int
    p_value: float
    ci_lower: float
    ci_upper: float
    alpha: float = DEFAULT_ALPHA
    n_dropped: int = 0
    n_clusters: int | None = None
    stderr_clustered: float = NAN
    t_clustered: float = NAN
    df_clustered: int | None = None
    p_value_clustered: float = NAN
    ci_lower_clustered: float = NAN
    ci_upper_clustered: float = NAN

    @property
    def clustered(self) -> bool:
        """Whether cluster ids were given (the clustered error may still be NaN, e.g. one cluster)."""
        return self.n_clusters is not None

    def scaled(self, factor: float) -> PairedResult:
        """The same comparison with scores multiplied by ``factor`` (t, df and p are unchanged)."""
        return replace(
            self,
            mean_a=self.mean_a * factor,
            mean_b=self.mean_b * factor,
            diff=self.diff * factor,
            stderr=self.stderr * factor,
            ci_lower=self.ci_lower * factor,
            ci_upper=self.ci_upper * factor,
            stderr_clustered=self.stderr_clustered * factor,
            ci_lower_clustered=self.ci_lower_clustered * factor,
            ci_upper_clustered=self.ci_upper_clustered * factor,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: NaN and infinities become None."""
        return {k: _json_number(v) for k, v in asdict(self).items()}


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _as_float(value: Any) -> float:
    if value is None:
        return NAN
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        value = value.item()
    return float(value)


def _test(
    diff: float, stderr: float, df: int, alpha: float, constant: bool
) -> tuple[float, float, float, float]:
    """``(t, p, ci_lower, ci_upper)`` for an estimate with a Student-t reference distribution."""
    if constant:  # every difference equal: no sampling noise at all
        if diff == 0:
            return 0.0, 1.0, diff, diff
        return math.copysign(math.inf, diff), 0.0, diff, diff
    if math.isnan(stderr) or df <= 0:
        return NAN, NAN, NAN, NAN
    if stderr == 0:  # not constant but the error vanished (cannot happen for eq. 4; kept safe)
        return _test(diff, stderr, df, alpha, constant=True)
    t = diff / stderr
    low, high = t_interval(diff, stderr, df, alpha)
    return t, t_sf_two_sided(t, df), low, high


def paired_comparison(
    a: Sequence[Any],
    b: Sequence[Any],
    clusters: Sequence[Hashable] | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> PairedResult:
    """Paired t-test of ``a`` against ``b`` (same documents, same order); see the module docstring.

    ``clusters[i]`` is the cluster id of pair ``i``; with it the result also holds the cluster-robust
    standard error of the mean difference and its interval and p-value on ``n_clusters - 1`` df.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    if clusters is not None and len(clusters) != len(a):
        raise ValueError(f"{len(a)} pairs but {len(clusters)} cluster ids")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    xa = np.asarray([_as_float(v) for v in a], dtype=float)
    xb = np.asarray([_as_float(v) for v in b], dtype=float)
    keep = ~(np.isnan(xa) | np.isnan(xb))
    xa, xb = xa[keep], xb[keep]
    kept_clusters = [c for c, k in zip(clusters, keep) if k] if clusters is not None else None
    n = int(xa.size)
    dropped = len(a) - n
    if n == 0:
        return PairedResult(
            0, NAN, NAN, NAN, NAN, NAN, 0, NAN, NAN, NAN, alpha, dropped,
            n_clusters=0 if clusters is not None else None,
        )  # fmt: skip
    d = xa - xb
    diff = float(d.mean())
    constant = n > 1 and bool(np.all(d == d[0]))
    stderr = 0.0 if constant else (float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else NAN)
    t, p, low, high = _test(diff, stderr, n - 1, alpha, constant)
    result = PairedResult(
        n, float(xa.mean()), float(xb.mean()), diff, stderr, t, n - 1, p, low, high, alpha, dropped
    )
    if kept_clusters is None:
        return result
    se_c, n_clusters = clustered_stderr(d.tolist(), kept_clusters)
    df_c = n_clusters - 1
    if n_clusters < 2:  # one cluster: the clustered error is not identifiable
        return replace(result, n_clusters=n_clusters, df_clustered=max(df_c, 0))
    se_c = 0.0 if constant else se_c
    t_c, p_c, low_c, high_c = _test(diff, se_c, df_c, alpha, constant)
    return replace(
        result,
        n_clusters=n_clusters,
        stderr_clustered=se_c,
        t_clustered=t_c,
        df_clustered=df_c,
        p_value_clustered=p_c,
        ci_lower_clustered=low_c,
        ci_upper_clustered=high_c,
    )
