"""Paired comparison statistics against scipy, statsmodels and hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from stats_refs import newcombe

from lmms_eval.stats import PairedResult, paired_comparison

# ------------------------------------------------------------------------------------------------
# the paired t-test
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_matches_scipy_ttest_rel(kind: str) -> None:
    rng = np.random.default_rng(7)
    if kind == "binary":
        a = (rng.random(80) < 0.62).astype(float)
        b = (rng.random(80) < 0.50).astype(float)
    else:
        a = rng.normal(3.0, 1.0, 60)
        b = a - rng.normal(0.25, 0.8, 60)
    ref = sps.ttest_rel(a, b)
    result = paired_comparison(a.tolist(), b.tolist())
    d = a - b
    if kind == "binary":  # 40 discordant pairs: the t-test; the interval is Newcombe's
        assert result.discordant is not None and sum(result.discordant) >= 25
        assert result.test == "paired-t" and result.ci_method == "newcombe"
        assert (result.ci_lower, result.ci_upper) == pytest.approx(
            newcombe(a.tolist(), b.tolist()), rel=1e-10
        )
        assert result.t == pytest.approx(ref.statistic, rel=1e-10)
        assert result.p_value == pytest.approx(ref.pvalue, rel=1e-8)
        return
    assert result.n == len(a) and result.df == len(a) - 1
    assert result.t == pytest.approx(ref.statistic, rel=1e-10)
    assert result.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    assert result.diff == pytest.approx(d.mean(), rel=1e-12)
    assert result.mean_a == pytest.approx(a.mean()) and result.mean_b == pytest.approx(b.mean())
    se = d.std(ddof=1) / math.sqrt(len(d))
    assert result.stderr == pytest.approx(se, rel=1e-12)
    half = sps.t.ppf(0.975, len(d) - 1) * se
    assert result.ci_lower == pytest.approx(d.mean() - half, rel=1e-9)
    assert result.ci_upper == pytest.approx(d.mean() + half, rel=1e-9)
    assert not result.clustered and result.n_clusters is None


def test_hand_worked_case() -> None:
    # scores on a 0-2 scale (no clipping, no McNemar): d = [1, 0, 0, 1]: mean 0.5,
    # sd = sqrt(4 * 0.25 / 3) = sqrt(1/3), se = sqrt(1/3)/2 = 0.288675..., t = 0.5 / se = sqrt(3),
    # df = 3; t_{0.975, 3} = 3.182446305284263 (printed t tables: 3.182)
    result = paired_comparison([2, 0, 1, 2], [1, 0, 1, 1])
    se = math.sqrt(1 / 3) / 2
    assert result.diff == 0.5 and result.df == 3
    assert result.stderr == pytest.approx(se, rel=1e-12)
    assert result.t == pytest.approx(math.sqrt(3), rel=1e-12)
    assert result.ci_lower == pytest.approx(0.5 - 3.182446305284263 * se, rel=1e-9)
    assert result.ci_upper == pytest.approx(0.5 + 3.182446305284263 * se, rel=1e-9)
    # two-sided p of t(3) at sqrt(3): 2 * (1 - F(sqrt 3)); F from the closed form for 3 df,
    # F(t) = 1/2 + (1/pi) * [ x/(1+x^2) * ... ] with x = t/sqrt(3): atan(x) + x/(1+x^2)
    x = math.sqrt(3) / math.sqrt(3)
    p = 1 - 2 / math.pi * (math.atan(x) + x / (1 + x * x))
    assert result.p_value == pytest.approx(p, rel=1e-9)


def test_alpha_changes_only_the_interval() -> None:
    a, b = [0.9, 0.4, 0.7, 0.8, 0.1, 0.6], [0.5, 0.5, 0.2, 0.7, 0.3, 0.1]
    wide, narrow = paired_comparison(a, b, alpha=0.01), paired_comparison(a, b, alpha=0.2)
    d = np.subtract(a, b)
    se = d.std(ddof=1) / math.sqrt(6)
    assert narrow.p_value == wide.p_value
    assert narrow.ci_upper - narrow.diff == pytest.approx(sps.t.ppf(0.9, 5) * se, rel=1e-9)
    assert wide.ci_upper - wide.diff == pytest.approx(sps.t.ppf(0.995, 5) * se, rel=1e-9)


def test_scaled_and_to_dict() -> None:
    result = paired_comparison([1, 0, 1, 1, 1], [0, 0, 1, 0, 1], clusters=["x", "x", "y", "y", "z"])
    points = result.scaled(100)
    assert points.diff == pytest.approx(100 * result.diff)
    assert points.ci_lower == pytest.approx(100 * result.ci_lower)
    assert points.stderr_clustered == pytest.approx(100 * result.stderr_clustered)
    assert (points.t, points.p_value, points.df, points.p_value_clustered) == (
        result.t,
        result.p_value,
        result.df,
        result.p_value_clustered,
    )
    empty = paired_comparison([], []).to_dict()
    assert empty["diff"] is None and empty["n"] == 0  # NaN is written as null


# ------------------------------------------------------------------------------------------------
# edge cases
# ------------------------------------------------------------------------------------------------


def test_no_pairs() -> None:
    for result in (paired_comparison([], []), paired_comparison([None, math.nan], [1.0, None])):
        assert result.n == 0 and math.isnan(result.diff) and math.isnan(result.p_value)
        assert math.isnan(result.ci_lower) and result.df == 0
    assert paired_comparison([None], [1.0]).n_dropped == 1


def test_one_pair_gives_a_difference_without_error_bar() -> None:
    result = paired_comparison([0.75], [0.25], clusters=["v"])
    assert result.n == 1 and result.diff == 0.5 and result.df == 0
    assert math.isnan(result.stderr) and math.isnan(result.p_value) and math.isnan(result.ci_upper)
    assert result.n_clusters == 1 and math.isnan(result.stderr_clustered)


def test_constant_nonzero_difference() -> None:
    result = paired_comparison([1.0, 1.0, 1.0, 0.5], [0.9, 0.9, 0.9, 0.4], clusters=[1, 1, 2, 2])
    assert result.stderr == 0 and result.p_value == 0.0 and result.t == math.inf
    assert result.ci_lower == result.ci_upper == result.diff
    assert "every difference is the same" in " ".join(result.warnings)
    # clustered: a sign test on the 2 clusters' mean differences (both positive): 2 * (1/2)^2
    assert result.stderr_clustered == 0 and result.p_value_clustered == 0.5
    assert result.test_clustered == "cluster-sign-test"
    assert result.ci_lower_clustered == result.ci_upper_clustered == result.diff
    # 0/1 scores: McNemar's exact test on 3 discordant pairs, 2 * (1/2)^3, and Newcombe's interval
    negative = paired_comparison([0, 0, 0], [1, 1, 1])
    assert negative.t == -math.inf and negative.p_value == 0.25 and negative.diff == -1
    assert negative.test == "mcnemar-exact" and negative.discordant == (0, 3)
    assert negative.ci_lower == -1.0 and -1.0 < negative.ci_upper < 0


def test_identical_runs() -> None:
    result = paired_comparison([1, 0, 1], [1, 0, 1])
    # scipy's ttest_rel returns NaN here (0/0); a comparison of a run with itself has p = 1
    assert result.diff == 0 and result.stderr == 0 and result.p_value == 1.0 and result.t == 0.0
    assert result.test == "mcnemar-exact" and result.discordant == (0, 0)
    assert (result.ci_lower, result.ci_upper) == pytest.approx(newcombe([1, 0, 1], [1, 0, 1]), rel=1e-12)
    assert result.ci_lower < 0 < result.ci_upper
    continuous = paired_comparison([0.5, 0.2], [0.5, 0.2])
    assert continuous.p_value == 1.0 and continuous.ci_lower == continuous.ci_upper == 0.0


def test_nan_pairs_are_dropped_and_counted() -> None:
    a = [1.0, 0.0, math.nan, 1.0, 1.0, None, 0.0, 1.0]
    b = [0.0, 0.0, 1.0, math.nan, 1.0, 0.0, 1.0, 0.0]
    result = paired_comparison(a, b, clusters=list("aabbccdd"))
    keep = [0, 1, 4, 6, 7]
    ref = sps.ttest_rel([float(a[i]) for i in keep], [b[i] for i in keep])  # type: ignore[arg-type]
    assert result.n == 5 and result.n_dropped == 3
    assert result.t == pytest.approx(ref.statistic)
    # 0/1 scores with 3 discordant pairs (2 won by A, 1 by B): McNemar's exact test
    assert result.discordant == (2, 1)
    assert result.p_value == pytest.approx(sps.binomtest(1, 3).pvalue, rel=1e-12)
    assert result.n_clusters == 3  # cluster "b" lost both of its pairs


def test_invalid_input() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        paired_comparison([1, 2], [1])
    with pytest.raises(ValueError, match="cluster ids"):
        paired_comparison([1, 2], [1, 2], clusters=["a"])
    with pytest.raises(ValueError, match="alpha"):
        paired_comparison([1, 2], [1, 2], alpha=1.5)


def test_numpy_scalars_and_bools() -> None:
    result = paired_comparison([np.float32(1.0), True, np.int64(0)], [0.0, False, 0])
    assert result.n == 3 and result.diff == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------------------------
# clustered variant
# ------------------------------------------------------------------------------------------------


def test_clustered_hand_worked() -> None:
    # d = [1, 1, 0, 0] in clusters [x, x, y, y]: mean 0.5, deviations e = [.5, .5, -.5, -.5].
    # Miller eq. 4: var(d, ddof=1)/n + (1/n^2) * sum_c [(sum e)^2 - sum e^2]
    #   = (1/3)/4 + (1/16) * [(1 - 0.5) + (1 - 0.5)] = 1/12 + 1/16 = 7/48
    # 2 clusters -> df = 1, where Student t is Cauchy: two-sided p = 1 - (2/pi) atan|t|,
    # and t_{0.975, 1} = tan(0.475 pi) = 12.706204736...
    result = paired_comparison([2, 2, 1, 0], [1, 1, 1, 0], clusters=["x", "x", "y", "y"])
    se = math.sqrt(7 / 48)
    t = 0.5 / se
    assert result.n_clusters == 2 and result.df_clustered == 1
    assert result.stderr_clustered == pytest.approx(se, rel=1e-12)
    assert result.t_clustered == pytest.approx(t, rel=1e-12)
    assert result.p_value_clustered == pytest.approx(1 - 2 / math.pi * math.atan(t), rel=1e-9)
    half = math.tan(0.475 * math.pi) * se
    assert result.ci_lower_clustered == pytest.approx(0.5 - half, rel=1e-9)
    assert result.ci_upper_clustered == pytest.approx(0.5 + half, rel=1e-9)
    # the plain test is unaffected by the clusters
    plain = paired_comparison([2, 2, 1, 0], [1, 1, 1, 0])
    assert (result.t, result.p_value, result.stderr) == (plain.t, plain.p_value, plain.stderr)


def test_clustered_matches_statsmodels_cluster_robust_ols() -> None:
    """statsmodels' OLS of d on a constant with cov_type="cluster" (default use_correction=True) gives

    ``Var_sm = G/(G-1) * (N-1)/(N-K) * CR0`` with ``CR0 = sum_g (sum_{i in g} e_i)^2 / N^2`` and K = 1
    regressor, so ``CR0 = Var_sm * (G-1)/G``. Miller's eq. 4 uses ``var(d, ddof=1)`` for the diagonal,
    so ``Var_miller = CR0 + sum_i e_i^2 / (N^2 (N-1))``.
    """
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 7, size=15)
    groups = np.repeat(np.arange(15), sizes)
    shared = rng.normal(0, 0.6, 15)[groups]  # a per-cluster effect makes the correction matter
    d = 0.2 + shared + rng.normal(0, 0.5, groups.size)
    b = rng.random(groups.size)
    a = b + d
    result = paired_comparison(a.tolist(), b.tolist(), clusters=groups.tolist())

    fit = sm.OLS(d, np.ones_like(d)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    g, n = 15, d.size
    cr0 = float(fit.bse[0]) ** 2 * (g - 1) / g
    e = d - d.mean()
    miller = cr0 + float(np.sum(e**2)) / (n**2 * (n - 1))
    assert float(fit.params[0]) == pytest.approx(result.diff, rel=1e-10)
    assert result.stderr_clustered == pytest.approx(math.sqrt(miller), rel=1e-10)
    assert result.n_clusters == g and result.df_clustered == g - 1
    t = result.diff / math.sqrt(miller)
    assert result.p_value_clustered == pytest.approx(2 * sps.t.sf(abs(t), g - 1), rel=1e-8)
    half = sps.t.ppf(0.975, g - 1) * math.sqrt(miller)
    assert result.ci_upper_clustered == pytest.approx(result.diff + half, rel=1e-9)


def test_singleton_clusters_equal_the_plain_error() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random(20), rng.random(20)
    result = paired_comparison(a.tolist(), b.tolist(), clusters=list(range(20)))
    assert result.stderr_clustered == pytest.approx(result.stderr, rel=1e-12)
    assert result.df_clustered == 19 and result.p_value_clustered == pytest.approx(result.p_value)


def test_a_single_cluster_has_no_clustered_error() -> None:
    result = paired_comparison([1, 0, 1], [0, 0, 0], clusters=["v", "v", "v"])
    assert result.n_clusters == 1 and result.clustered
    assert math.isnan(result.stderr_clustered) and math.isnan(result.p_value_clustered)
    assert not math.isnan(result.p_value)


def test_result_is_frozen() -> None:
    result = paired_comparison([1, 0], [0, 0])
    assert isinstance(result, PairedResult)
    with pytest.raises(AttributeError):
        result.n = 3  # type: ignore[misc]
