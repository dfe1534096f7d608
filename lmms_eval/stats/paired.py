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

Binary (0/1) scores on both sides change two things (``test`` and ``ci_method`` record which was used):

* with fewer than :data:`MCNEMAR_MAX_DISCORDANT` discordant pairs the p-value is McNemar's exact test
  (a binomial test of the pairs A won against all discordant pairs at 1/2), where the t distribution
  is a poor description of a handful of ±1 differences; with more, the paired t-test (the two agree
  closely there);
* the interval is Newcombe's (1998, method 10) for paired proportions: inside [-1, 1] and of non-zero
  width even when every difference is the same; the clustered interval widens each of its halves by
  ``sqrt(deff)``, the design effect of the differences.

Other scores get the t interval, cut to ``[lo - hi, hi - lo]`` when both runs score in ``[lo, hi]`` =
[0, 1] (recorded as clipped). Fewer than :data:`SMALL_N` pairs or :data:`SMALL_CLUSTERS` clusters
add a warning to ``warnings``.

Edge cases: pairs with a missing value (None / NaN) on either side are dropped and counted; n = 0
gives NaN everywhere; n = 1 gives the difference without an error bar; when every difference is the
same the standard error is 0: for non-binary scores the interval collapses to the point and p is 0
(``diff != 0``) or 1 (``diff == 0``), with a warning; the clustered p-value is then a sign test on the
clusters' mean differences.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from lmms_eval.stats.distributions import t_sf_two_sided
from lmms_eval.stats.estimates import (
    DEFAULT_ALPHA,
    T,
    cluster_label,
    clustered_stderr,
    in_unit_range,
    is_binary,
    t_interval,
)
from lmms_eval.stats.intervals import (
    binomial_two_sided_p,
    clip_interval,
    mcnemar_exact_p,
    paired_proportion_interval,
)

NAN = math.nan
MCNEMAR_MAX_DISCORDANT = 25  # below this many discordant pairs, McNemar's exact test replaces the t-test
SMALL_N = 30  # fewer pairs: a warning beside the number
SMALL_CLUSTERS = 10  # fewer clusters: a warning beside the clustered number
PAIRED_T = "paired-t"
MCNEMAR = "mcnemar-exact"
SIGN_TEST = "cluster-sign-test"
NEWCOMBE = "newcombe"
NEWCOMBE_CLUSTERED = "newcombe-design-effect"


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
    test: str = PAIRED_T  # paired-t | mcnemar-exact | none
    ci_method: str = T  # t | t, clipped to [-1, 1] | newcombe
    test_clustered: str = ""
    ci_method_clustered: str = ""
    discordant: tuple[int, int] | None = None  # binary pairs: (A right & B wrong, A wrong & B right)
    warnings: tuple[str, ...] = ()

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
        out = {k: _json_number(v) for k, v in asdict(self).items()}
        out["discordant"] = list(self.discordant) if self.discordant is not None else None
        out["warnings"] = list(self.warnings)
        return out


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
    """Paired comparison of ``a`` against ``b`` (same documents, same order); see the module docstring.

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
            n_clusters=0 if clusters is not None else None, test="none", ci_method="",
            warnings=("no pairs",),
        )  # fmt: skip
    result = _plain(xa, xb, alpha, dropped)
    if kept_clusters is None:
        return result
    return _with_clusters(result, xa - xb, kept_clusters, alpha)


def _plain(xa: np.ndarray, xb: np.ndarray, alpha: float, dropped: int) -> PairedResult:
    """The unclustered comparison: t-test or McNemar, t or Newcombe interval, small-n warnings."""
    n = int(xa.size)
    d = xa - xb
    diff = float(d.mean())
    constant = n > 1 and bool(np.all(d == d[0]))
    stderr = 0.0 if constant else (float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else NAN)
    t, p, low, high = _test(diff, stderr, n - 1, alpha, constant)
    test, how, discordant = PAIRED_T, T, None
    warnings: list[str] = []
    if is_binary(xa) and is_binary(xb):
        wins, losses = int(np.sum(d > 0)), int(np.sum(d < 0))
        discordant = (wins, losses)
        both, neither = int(np.sum((xa == 1) & (xb == 1))), int(np.sum((xa == 0) & (xb == 0)))
        low, high = paired_proportion_interval(both, wins, losses, neither, alpha)
        how = NEWCOMBE
        if wins + losses < MCNEMAR_MAX_DISCORDANT:
            test, p = MCNEMAR, mcnemar_exact_p(wins, losses)
    else:
        if constant and n > 1:
            warnings.append("every difference is the same: the interval has no width")
        if in_unit_range(xa) and in_unit_range(xb):
            cut = clip_interval(low, high, -1.0, 1.0)
            low, high, how = cut.low, cut.high, T + (", clipped to [-1, 1]" if cut.clipped else "")
    if n < SMALL_N:
        warnings.insert(
            0, f"only {n} pair(s) (fewer than {SMALL_N}): treat the interval and p-value with care"
        )
    return PairedResult(
        n, float(xa.mean()), float(xb.mean()), diff, stderr, t, n - 1, p, low, high, alpha, dropped,
        test=test, ci_method=how, discordant=discordant, warnings=tuple(warnings),
    )  # fmt: skip


def _with_clusters(
    result: PairedResult, d: np.ndarray, clusters: list[Hashable], alpha: float
) -> PairedResult:
    """Add the cluster-robust error, interval and p-value (df = clusters - 1) of the mean difference."""
    se_c, n_clusters = clustered_stderr(d.tolist(), clusters)
    df_c = n_clusters - 1
    warnings = list(result.warnings)
    if n_clusters < SMALL_CLUSTERS:
        warnings.append(
            f"only {n_clusters} cluster(s) (fewer than {SMALL_CLUSTERS}): the clustered error is unreliable"
        )
    if n_clusters < 2:  # one cluster: the clustered error is not identifiable
        return replace(result, n_clusters=n_clusters, df_clustered=max(df_c, 0), warnings=tuple(warnings))
    constant = result.n > 1 and bool(np.all(d == d[0]))
    se_c = 0.0 if constant else se_c
    t_c, p_c, low_c, high_c = _test(result.diff, se_c, df_c, alpha, constant)
    test_c, how_c = PAIRED_T, result.ci_method
    if constant and result.diff != 0:
        test_c, p_c = SIGN_TEST, _cluster_sign_test(d, clusters)
    if result.ci_method == NEWCOMBE:
        low_c, high_c = _widened(result, se_c, result.n / n_clusters)
        how_c = NEWCOMBE_CLUSTERED
    elif result.ci_method.startswith(T) and result.ci_method != T:
        cut = clip_interval(low_c, high_c, -1.0, 1.0)
        low_c, high_c, how_c = cut.low, cut.high, T + (", clipped to [-1, 1]" if cut.clipped else "")
    return replace(
        result,
        n_clusters=n_clusters,
        stderr_clustered=se_c,
        t_clustered=t_c,
        df_clustered=df_c,
        p_value_clustered=p_c,
        ci_lower_clustered=low_c,
        ci_upper_clustered=high_c,
        test_clustered=test_c,
        ci_method_clustered=how_c,
        warnings=tuple(warnings),
    )


def _widened(result: PairedResult, se_c: float, max_deff: float) -> tuple[float, float]:
    """Newcombe's interval with each half widened by ``sqrt(deff)``, ``deff = (se_c / se)²`` kept in
    ``[1, n / clusters]`` (the upper end when it cannot be estimated), cut to [-1, 1]."""
    if result.stderr > 0 and not math.isnan(se_c):
        deff = min(max((se_c / result.stderr) ** 2, 1.0), max_deff)
    else:
        deff = max(max_deff, 1.0)
    root = math.sqrt(deff)
    low = result.diff - root * (result.diff - result.ci_lower)
    high = result.diff + root * (result.ci_upper - result.diff)
    return max(low, -1.0), min(high, 1.0)


def _cluster_sign_test(d: np.ndarray, clusters: list[Hashable]) -> float:
    """Exact sign test on the clusters' mean differences (clusters with mean 0 are left out)."""
    _, codes = np.unique(np.asarray([cluster_label(c) for c in clusters]), return_inverse=True)
    sums = np.bincount(codes, weights=d)
    wins, losses = int(np.sum(sums > 0)), int(np.sum(sums < 0))
    return binomial_two_sided_p(min(wins, losses), wins + losses)


def format_p_value(value: float | None) -> str:
    """A p-value as every table prints it (CLI and UI alike): four decimals, ``<0.0001`` below 1e-4,
    ``N/A`` when there is none."""
    if value is None or value != value:
        return "N/A"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"
