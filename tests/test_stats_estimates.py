"""Estimates with error bars (``lmms_eval.stats.estimates``) against independent references.

References: ``scipy.stats.sem`` and ``scipy.stats.t.interval`` for the analytic mean; a direct
numpy transcription of Miller (2024) eq. 4 written here, and statsmodels' cluster-robust OLS, for
the clustered error; hand-worked cases for the group error and the stability metrics.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from lmms_eval.stats import (
    Estimate,
    clustered_mean_estimate,
    clustered_stderr,
    group_estimate,
    mean_estimate,
    stability_metrics,
)

# ------------------------------------------------------------------------------------------------
# independent references
# ------------------------------------------------------------------------------------------------


def miller_eq4(scores: Sequence[float], clusters: Sequence[Hashable]) -> float:
    """Miller (2024) eq. 4, term by term, with explicit loops over the clusters.

    SE_c^2 = var(s, ddof=1)/n + (1/n^2) * sum_c [ (sum_{i in c} d_i)^2 - sum_{i in c} d_i^2 ],
    d_i = s_i - mean(s).
    """
    s = np.asarray(scores, dtype=float)
    n = s.size
    d = s - s.mean()
    cross = 0.0
    for cluster in set(clusters):
        members = [i for i, c in enumerate(clusters) if c == cluster]
        within = d[members]
        cross += within.sum() ** 2 - (within**2).sum()
    return math.sqrt(s.var(ddof=1) / n + cross / n**2)


def statsmodels_cluster_variance(scores: np.ndarray, groups: np.ndarray, correction: bool) -> float:
    """Variance of the intercept of OLS(s ~ 1) with a cluster-robust covariance."""
    model = sm.OLS(scores, np.ones((scores.size, 1)))
    kwds: dict[str, Any] = {"groups": groups, "use_correction": correction}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(cov_type="cluster", cov_kwds=kwds)
    return float(fit.bse[0] ** 2)


def _clustered_data(seed: int, n: int, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores with a shared cluster effect (so within-cluster covariance is positive)."""
    rng = np.random.default_rng(seed)
    clusters = rng.integers(0, n_clusters, size=n)
    effect = rng.normal(0, 1, size=n_clusters)
    p = 1 / (1 + np.exp(-(0.3 + effect[clusters])))
    return (rng.random(n) < p).astype(float), clusters


# ------------------------------------------------------------------------------------------------
# mean_estimate
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mean_estimate_matches_scipy_sem_and_t_interval(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in (2, 3, 10, 250):
        x = rng.normal(0.4, 0.3, size=n)
        est = mean_estimate(list(x))
        low, high = sps.t.interval(0.95, df=n - 1, loc=x.mean(), scale=sps.sem(x))
        if x.min() >= 0 and x.max() <= 1:  # scores in [0, 1]: the interval is clipped to [0, 1]
            low, high = max(low, 0.0), min(high, 1.0)
        assert est.value == pytest.approx(float(x.mean()), rel=1e-12)
        assert est.stderr == pytest.approx(float(sps.sem(x)), rel=1e-12)
        assert est.ci_low == pytest.approx(float(low), rel=1e-9)
        assert est.ci_high == pytest.approx(float(high), rel=1e-9)
        assert est.n == n and est.method == "analytic" and est.details["dropped"] == 0


def test_interval_of_unit_range_scores_stays_in_unit_range() -> None:
    # continuous scores in [0, 1]: t interval 0.725 +- 3.18 * 0.243 = [-0.05, 1.50] -> cut to [0, 1], recorded
    values = [1.0, 1.0, 0.9, 0.0]
    est = mean_estimate(values)
    low, high = sps.t.interval(0.95, df=3, loc=np.mean(values), scale=sps.sem(values))
    assert low < 0 and high > 1
    assert (est.ci_low, est.ci_high) == (0.0, 1.0)
    assert est.interval == "t, clipped to [0, 1]"
    wide = mean_estimate([2.0, 0.0, 1.0, 1.5])  # not a [0, 1] score: no clipping
    assert wide.ci_low < 0 and wide.interval == "t"
    inside = mean_estimate([0.4, 0.5, 0.6, 0.5, 0.45])
    assert inside.interval == "t"


def test_mean_estimate_bernoulli_and_other_alpha() -> None:
    x = [1, 0, 0, 1, 1, 1, 0, 1, 1, 0, True, False]
    est = mean_estimate(x, alpha=0.1)
    arr = np.asarray(x, dtype=float)
    low, high = proportion_confint(7, 12, alpha=0.1, method="wilson")
    assert est.value == pytest.approx(7 / 12)
    # hand: p = 7/12, sample variance = n/(n-1) * p(1-p)
    assert est.stderr == pytest.approx(math.sqrt(12 / 11 * (7 / 12) * (5 / 12) / 12), rel=1e-12)
    assert (est.ci_low, est.ci_high) == pytest.approx((low, high), rel=1e-12)
    assert est.interval == "wilson" and arr.size == 12
    exact = mean_estimate(x, alpha=0.1, binary_method="clopper-pearson")
    assert (exact.ci_low, exact.ci_high) == pytest.approx(proportion_confint(7, 12, 0.1, "beta"), rel=1e-10)


def test_mean_estimate_drops_and_counts_missing_values() -> None:
    est = mean_estimate([1.0, None, 0.0, math.nan, 1.0, float("nan"), 0.5])
    clean = np.asarray([1.0, 0.0, 1.0, 0.5])
    assert est.n == 4 and est.details["dropped"] == 3
    assert est.value == pytest.approx(0.625)
    assert est.stderr == pytest.approx(float(sps.sem(clean)), rel=1e-12)


def test_mean_estimate_edge_cases() -> None:
    single = mean_estimate([0.7])
    assert single.value == 0.7 and single.n == 1
    assert math.isnan(single.stderr) and math.isnan(single.ci_low) and math.isnan(single.ci_high)

    equal = mean_estimate([0.25] * 9)
    assert equal.stderr == 0.0
    assert equal.ci_low == equal.ci_high == 0.25  # the interval collapses to the point

    empty = mean_estimate([None, math.nan])
    assert math.isnan(empty.value) and empty.n == 0 and empty.details["dropped"] == 2
    assert math.isnan(mean_estimate([]).value)


def test_estimate_to_dict_round_trips() -> None:
    est = mean_estimate([0.0, 1.0, 1.0])
    data = est.to_dict()
    assert set(data) == {"value", "stderr", "ci_low", "ci_high", "n", "method", "details", "interval"}
    assert Estimate(**data) == est


# ------------------------------------------------------------------------------------------------
# clustered standard error
# ------------------------------------------------------------------------------------------------


def test_clustered_stderr_hand_worked() -> None:
    # s = [1, 1, 0, 0], clusters [a, a, b, b]: mean 0.5, d = [.5, .5, -.5, -.5]
    # var(ddof=1) = 1/3 -> 1/12; cross: a: (1)^2 - 0.5 = 0.5, b: 0.5 -> 1/16 ; SE^2 = 1/12 + 1/16 = 7/48
    se, g = clustered_stderr([1, 1, 0, 0], ["a", "a", "b", "b"])
    assert g == 2
    assert se == pytest.approx(math.sqrt(7 / 48), rel=1e-12)
    # mixed clusters cancel: [a, b, a, b] -> cross: a: (0)^2 - 0.5, b: -0.5 -> -1/16; SE^2 = 1/12 - 1/16
    se, _ = clustered_stderr([1, 1, 0, 0], ["a", "b", "a", "b"])
    assert se == pytest.approx(math.sqrt(1 / 48), rel=1e-12)


@pytest.mark.parametrize(("seed", "n", "n_clusters"), [(0, 30, 4), (1, 200, 17), (2, 1000, 60), (3, 57, 56)])
def test_clustered_stderr_matches_numpy_eq4(seed: int, n: int, n_clusters: int) -> None:
    scores, clusters = _clustered_data(seed, n, n_clusters)
    se, g = clustered_stderr(list(scores), list(clusters))
    assert g == len(set(clusters.tolist()))
    assert se == pytest.approx(miller_eq4(scores.tolist(), clusters.tolist()), rel=1e-10)


@pytest.mark.parametrize(("seed", "n", "n_clusters"), [(0, 30, 4), (1, 200, 17), (2, 1000, 60), (4, 80, 80)])
def test_clustered_stderr_matches_statsmodels(seed: int, n: int, n_clusters: int) -> None:
    """statsmodels' cluster-robust variance for OLS(s ~ 1), with its small-sample factor undone.

    For a constant-only model statsmodels multiplies the sandwich (1/n^2) sum_c (sum_i d_i)^2 by
    G/(G-1) * (n-1)/(n-k) with k = 1, i.e. by exactly G/(G-1) (checked below by comparing the
    corrected and uncorrected fits). Eq. 4 is that uncorrected sandwich plus the small-sample term
    var(s, ddof=1)/n - var(s, ddof=0)/n, which turns its own-cluster diagonal into the ddof=1
    variance: SE_c^2 = sandwich + sum d_i^2 / (n^2 (n-1)).
    """
    scores, clusters = _clustered_data(seed, n, n_clusters)
    g = len(set(clusters.tolist()))
    corrected = statsmodels_cluster_variance(scores, clusters, correction=True)
    sandwich = statsmodels_cluster_variance(scores, clusters, correction=False)
    assert corrected / sandwich == pytest.approx(g / (g - 1), rel=1e-10)  # the factor, measured
    undone = corrected * (g - 1) / g
    eq4 = undone + (scores.var(ddof=1) - scores.var(ddof=0)) / n
    se, _ = clustered_stderr(list(scores), list(clusters))
    assert se**2 == pytest.approx(eq4, rel=1e-9)


def test_singleton_clusters_give_the_plain_standard_error() -> None:
    rng = np.random.default_rng(7)
    x = rng.random(40)
    se, g = clustered_stderr(list(x), list(range(40)))
    assert g == 40
    assert se == pytest.approx(float(sps.sem(x)), rel=1e-12)
    est = clustered_mean_estimate(list(x), [f"doc{i}" for i in range(40)])
    plain = sps.t.interval(0.95, df=39, loc=x.mean(), scale=sps.sem(x))
    assert est.stderr == pytest.approx(float(sps.sem(x)), rel=1e-12)
    assert (est.ci_low, est.ci_high) == pytest.approx(plain, rel=1e-9)


def test_positively_correlated_clusters_widen_the_error() -> None:
    scores, clusters = _clustered_data(11, 600, 12)
    se, _ = clustered_stderr(list(scores), list(clusters))
    assert se > float(sps.sem(scores)) * 1.3


def test_clustered_mean_estimate_interval_uses_clusters_minus_one_df() -> None:
    binary, clusters = _clustered_data(5, 120, 6)
    scores = binary * 0.5 + 0.25  # continuous scores in [0.25, 0.75]: a t interval, inside [0, 1]
    est = clustered_mean_estimate(list(scores), list(clusters))
    se = miller_eq4(scores.tolist(), clusters.tolist())
    g = len(set(clusters.tolist()))
    low, high = sps.t.interval(0.95, df=g - 1, loc=scores.mean(), scale=se)
    assert est.method == "clustered" and est.n == 120 and est.interval == "t"
    assert est.details == {"dropped": 0, "n_clusters": g}
    assert est.value == pytest.approx(float(scores.mean()))
    assert est.stderr == pytest.approx(se, rel=1e-10)
    assert (est.ci_low, est.ci_high) == pytest.approx((low, high), rel=1e-9)


def test_clustered_mean_estimate_drops_missing_values_with_their_cluster_ids() -> None:
    values: list[Any] = [1.0, None, 0.0, math.nan, 1.0, 1.0, 0.0, 0.5]
    clusters = ["a", "a", "b", "b", "c", "c", "a", "b"]
    est = clustered_mean_estimate(values, clusters)
    kept_v = [1.0, 0.0, 1.0, 1.0, 0.0, 0.5]
    kept_c = ["a", "b", "c", "c", "a", "b"]
    assert est.details == {"dropped": 2, "n_clusters": 3}
    assert est.n == 6
    assert est.value == pytest.approx(np.mean(kept_v))
    assert est.stderr == pytest.approx(miller_eq4(kept_v, kept_c), rel=1e-12)


def test_clustered_edge_cases() -> None:
    # one cluster: the clustered error is not identifiable -> NaN, no interval
    one = clustered_mean_estimate([1.0, 0.0, 1.0, 1.0], ["v"] * 4)
    assert one.value == 0.75 and one.n == 4 and one.details["n_clusters"] == 1
    assert math.isnan(one.stderr) and math.isnan(one.ci_low) and math.isnan(one.ci_high)
    # n = 1
    se, g = clustered_stderr([0.3], ["x"])
    assert math.isnan(se) and g == 1
    single = clustered_mean_estimate([0.3], ["x"])
    assert single.value == 0.3 and math.isnan(single.stderr)
    # nothing left
    empty = clustered_mean_estimate([None, math.nan], ["a", "b"])
    assert math.isnan(empty.value) and empty.details == {"dropped": 2, "n_clusters": 0}
    # all-equal 0/1 scores: SE 0, but the Wilson interval on n_eff = clusters = 3 keeps its width
    flat = clustered_mean_estimate([1.0] * 6, ["a", "a", "b", "b", "c", "c"])
    assert flat.stderr == 0.0 and flat.ci_high == 1.0
    assert flat.ci_low == pytest.approx(proportion_confint(3, 3, method="wilson")[0], rel=1e-12)
    assert flat.interval == "wilson-effective-n" and flat.details["effective_n"] == 3.0
    # all-equal continuous scores: the t interval collapses
    level = clustered_mean_estimate([0.5] * 6, ["a", "a", "b", "b", "c", "c"])
    assert level.stderr == 0.0 and level.ci_low == level.ci_high == 0.5
    # mismatched lengths are an error
    with pytest.raises(ValueError, match="cluster ids"):
        clustered_stderr([1.0, 0.0], ["a"])


def test_cluster_ids_of_any_hashable_type() -> None:
    scores = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    clusters: list[Hashable] = [("vid", 1), ("vid", 1), 7, 7, None, None]
    se, g = clustered_stderr(scores, clusters)
    assert g == 3
    assert se == pytest.approx(miller_eq4(scores, clusters), rel=1e-12)


# ------------------------------------------------------------------------------------------------
# group_estimate
# ------------------------------------------------------------------------------------------------


def _est(value: float, stderr: float, n: int) -> Estimate:
    return Estimate(value, stderr, n=n, method="analytic")


def test_group_estimate_size_weighted_hand_worked() -> None:
    subtasks = [_est(0.5, 0.10, 100), _est(0.8, 0.05, 300)]
    est = group_estimate(subtasks, [100, 300], weight_by_size=True)
    # weights 1/4, 3/4: value = .125 + .6 = .725; se = sqrt((.25*.1)^2 + (.75*.05)^2)
    se = math.sqrt((0.25 * 0.10) ** 2 + (0.75 * 0.05) ** 2)
    z = float(sps.norm.ppf(0.975))
    assert est.value == pytest.approx(0.725)
    assert est.stderr == pytest.approx(se, rel=1e-12)
    assert (est.ci_low, est.ci_high) == pytest.approx((0.725 - z * se, 0.725 + z * se), rel=1e-10)
    assert est.n == 400 and est.method == "pooled"


def test_group_estimate_plain_mean_hand_worked() -> None:
    subtasks = [_est(0.5, 0.10, 100), _est(0.8, 0.05, 300), _est(0.2, 0.2, 10)]
    est = group_estimate(subtasks, [100, 300, 10], weight_by_size=False)
    assert est.value == pytest.approx(0.5)
    assert est.stderr == pytest.approx(math.sqrt(0.01 + 0.0025 + 0.04) / 3, rel=1e-12)


def test_group_estimate_equals_the_pooled_mean_for_equal_variance_halves() -> None:
    # splitting one sample into two subtasks: the size-weighted group value is the overall mean and
    # sqrt(sum w^2 se^2) with each half's own sem is close to the overall sem
    rng = np.random.default_rng(3)
    x = (rng.random(4000) < 0.6).astype(float)
    a, b = x[:1500], x[1500:]
    est = group_estimate(
        [mean_estimate(list(a)), mean_estimate(list(b))], [a.size, b.size], weight_by_size=True
    )
    assert est.value == pytest.approx(float(x.mean()), rel=1e-12)
    assert est.stderr == pytest.approx(float(sps.sem(x)), rel=0.02)


def test_group_estimate_with_a_subtask_without_error_bar() -> None:
    subtasks = [_est(0.5, 0.10, 100), Estimate(0.9, n=50)]
    est = group_estimate(subtasks, [100, 50], weight_by_size=True)
    assert est.value == pytest.approx((0.5 * 100 + 0.9 * 50) / 150)
    assert math.isnan(est.stderr) and math.isnan(est.ci_low) and math.isnan(est.ci_high)
    assert est.n == 150


def test_group_estimate_degenerate_inputs() -> None:
    assert math.isnan(group_estimate([], [], weight_by_size=True).value)
    assert math.isnan(group_estimate([_est(0.5, 0.1, 0)], [0], weight_by_size=True).value)
    zero = group_estimate([_est(0.5, 0.0, 4), _est(0.5, 0.0, 4)], [4, 4], weight_by_size=True)
    assert zero.stderr == 0.0 and zero.ci_low == zero.ci_high == 0.5


# ------------------------------------------------------------------------------------------------
# stability_metrics
# ------------------------------------------------------------------------------------------------


def test_stability_metrics_hand_worked() -> None:
    scores = [
        [1, 1, 1, 1],  # all right: majority yes, var 0, consistent
        [1, 1, 0, 0],  # tie (sum 2 = k/2): not a majority; var = 1/3
        [1, 1, 1, 0],  # majority; var = 1/4
        [0, 0, 0, 0],  # consistent, wrong
    ]
    out = stability_metrics(scores)
    assert out["expected_accuracy"] == pytest.approx(9 / 16)
    assert out["consensus_accuracy"] == pytest.approx(2 / 4)
    assert out["internal_variance"] == pytest.approx((0 + 1 / 3 + 1 / 4 + 0) / 4)
    assert out["consistency_rate"] == pytest.approx(2 / 4)


def test_stability_metrics_continuous_scores_and_missing_values() -> None:
    scores: list[list[Any]] = [[0.2, 0.4, None], [0.9, math.nan, 0.9], [0.5]]
    out = stability_metrics(scores)
    # rows after dropping: [.2,.4], [.9,.9], [.5]
    assert out["expected_accuracy"] == pytest.approx((0.2 + 0.4 + 0.9 + 0.9 + 0.5) / 5)
    # majority: .6 > 1? no; 1.8 > 1? yes; .5 > .5? no
    assert out["consensus_accuracy"] == pytest.approx(1 / 3)
    assert out["internal_variance"] == pytest.approx((np.var([0.2, 0.4], ddof=1) + 0 + 0) / 3)
    assert out["consistency_rate"] == pytest.approx(2 / 3)


def test_stability_metrics_of_nothing_is_nan() -> None:
    for scores in ([], [[None, None]]):
        out = stability_metrics(scores)
        assert set(out) == {
            "expected_accuracy",
            "consensus_accuracy",
            "internal_variance",
            "consistency_rate",
        }
        assert all(math.isnan(v) for v in out.values())
