"""Intervals at the edges (issue 19): Wilson, Clopper-Pearson, McNemar, Newcombe, ICC and design effect,
against statsmodels/scipy and hand-worked cases at n = 1, 2, 3, 12, 50, 1000 and p = 0, 1/2, 1."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from stats_refs import newcombe
from statsmodels.stats.proportion import proportion_confint

from lmms_eval.stats import mean_estimate, paired_comparison
from lmms_eval.stats.intervals import (
    beta_ppf,
    binomial_two_sided_p,
    clip_interval,
    clopper_pearson_interval,
    mcnemar_exact_p,
    paired_proportion_interval,
    wilson_interval,
)
from lmms_eval.stats.power import design_effect, intra_cluster_correlation, observed_design

SIZES = (1, 2, 3, 12, 50, 1000)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_binary_means_match_statsmodels(n: int, share: float) -> None:
    k = round(share * n) if share != 0.5 else n // 2
    values = [1] * k + [0] * (n - k)
    est = mean_estimate(values)
    ref = proportion_confint(k, n, method="wilson")
    assert (est.ci_low, est.ci_high) == pytest.approx(ref, abs=1e-12)
    assert 0.0 <= est.ci_low < est.ci_high <= 1.0  # never zero width, never outside [0, 1]
    assert est.interval == "wilson"
    assert clopper_pearson_interval(k, n) == pytest.approx(proportion_confint(k, n, method="beta"), abs=1e-10)


def test_fifty_of_fifty_hand_worked() -> None:
    # Wilson at p = 1: lower = n / (n + z^2) = 50 / (50 + 1.959964^2) = 0.928652...
    est = mean_estimate([1] * 50)
    z = sps.norm.ppf(0.975)
    assert est.value == 1.0 and est.ci_high == 1.0
    assert est.ci_low == pytest.approx(50 / (50 + z * z), rel=1e-12)
    # Clopper-Pearson at p = 1: lower = (alpha/2)^(1/n)
    assert clopper_pearson_interval(50, 50)[0] == pytest.approx(0.025 ** (1 / 50), rel=1e-10)


@pytest.mark.parametrize(
    ("q", "a", "b"), [(0.025, 1, 1), (0.975, 3, 10), (0.5, 0.5, 0.5), (1e-6, 50, 1), (0.3, 700, 301)]
)
def test_beta_ppf_matches_scipy(q: float, a: float, b: float) -> None:
    assert beta_ppf(q, a, b) == pytest.approx(float(sps.beta.ppf(q, a, b)), rel=1e-9)


@pytest.mark.parametrize(
    ("k", "n"), [(0, 0), (0, 1), (1, 2), (0, 3), (12, 12), (3, 12), (20, 50), (480, 1000)]
)
def test_binomial_test_matches_scipy(k: int, n: int) -> None:
    expected = 1.0 if n == 0 else float(sps.binomtest(k, n, 0.5).pvalue)
    assert binomial_two_sided_p(k, n) == pytest.approx(expected, rel=1e-12)


def test_constant_differences_at_n12_use_mcnemar_and_a_real_interval() -> None:
    # every one of 12 pairs won by A: McNemar exact p = 2 / 2^12 = 0.00048828125 (the t-test said p = 0)
    result = paired_comparison([1] * 12, [0] * 12)
    assert result.p_value == 2 / 2**12 == mcnemar_exact_p(12, 0)
    assert result.test == "mcnemar-exact" and result.discordant == (12, 0)
    assert (result.ci_lower, result.ci_upper) == pytest.approx(newcombe([1] * 12, [0] * 12), rel=1e-12)
    assert 0.6 < result.ci_lower < result.ci_upper == 1.0  # not [1, 1]
    assert any("12 pair(s)" in w for w in result.warnings)


def test_n3_paired_interval_stays_in_the_possible_range() -> None:
    # d = [1, 0, 0]: the t interval was 0.333 +- 4.303 * 0.333 = [-1.10, +1.77], outside [-1, 1]
    result = paired_comparison([1, 0, 0], [0, 0, 0])
    assert -1.0 <= result.ci_lower < result.diff < result.ci_upper <= 1.0
    assert (result.ci_lower, result.ci_upper) == pytest.approx(newcombe([1, 0, 0], [0, 0, 0]), rel=1e-12)
    assert result.p_value == 1.0  # one discordant pair
    # continuous scores in [0, 1]: the t interval is cut to [-1, 1] and says so
    cont = paired_comparison([0.9, 0.1, 0.0], [0.0, 0.0, 0.1])
    assert cont.ci_method == "t, clipped to [-1, 1]" and cont.ci_lower >= -1.0 and cont.ci_upper <= 1.0


def test_mcnemar_switches_to_t_with_many_discordant_pairs() -> None:
    rng = np.random.default_rng(3)
    a = (rng.random(1000) < 0.6).astype(float).tolist()
    b = (rng.random(1000) < 0.5).astype(float).tolist()
    result = paired_comparison(a, b)
    assert result.test == "paired-t" and result.p_value == pytest.approx(sps.ttest_rel(a, b).pvalue, rel=1e-8)
    assert (result.ci_lower, result.ci_upper) == pytest.approx(newcombe(a, b), rel=1e-10)
    assert result.warnings == ()


def test_newcombe_properties_and_clip() -> None:
    for counts in [(0, 0, 0, 1), (1, 0, 0, 0), (0, 1, 0, 0), (36, 12, 2, 0), (5, 5, 5, 35)]:
        low, high = paired_proportion_interval(*counts)
        n = sum(counts)
        diff = (counts[1] - counts[2]) / n
        assert -1.0 <= low <= diff <= high <= 1.0
    assert clip_interval(-0.2, 1.3, 0.0, 1.0) == (0.0, 1.0, True)
    assert clip_interval(0.2, 0.3, 0.0, 1.0) == (0.2, 0.3, False)
    assert wilson_interval(0, 1) == pytest.approx(proportion_confint(0, 1, method="wilson"), abs=1e-12)


def test_clustered_binary_means_and_small_cluster_warning() -> None:
    clusters = [i // 5 for i in range(50)]
    result = paired_comparison([1] * 50, [0] * 50, clusters=clusters)
    # constant differences: a sign test on 10 clusters, 2 / 2^10
    assert result.test_clustered == "cluster-sign-test" and result.p_value_clustered == 2 / 2**10
    assert result.ci_lower_clustered < result.ci_lower  # widened by sqrt(deff) = sqrt(5)
    few = paired_comparison([1, 0, 1, 1], [0, 0, 1, 0], clusters=["a", "a", "b", "b"])
    assert any("2 cluster(s)" in w for w in few.warnings)


def test_icc_and_design_effect_hand_worked() -> None:
    # two clusters of 2: [1, 1] and [0, 0]: MSB = 2 * 2 * 0.25 / 1 = 1, MSW = 0, m0 = 2 -> ICC = 1
    icc, g, m = intra_cluster_correlation([1, 1, 0, 0], ["a", "a", "b", "b"])
    assert (icc, g, m) == (1.0, 2, 2.0)
    assert design_effect(icc, m) == 2.0
    # [1, 0] and [1, 0]: MSB = 0, MSW = 0.5, m0 = 2 -> ICC = -1, deff floored at 1/m
    icc, _, _ = intra_cluster_correlation([1, 0, 1, 0], ["a", "a", "b", "b"])
    assert icc == -1.0 and design_effect(icc, 2.0) == 0.5
    assert design_effect(math.nan, 3.0) == 1.0


def test_icc_matches_the_anova_decomposition_of_statsmodels() -> None:
    sm = pytest.importorskip("statsmodels.formula.api")
    import pandas as pd

    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(12), rng.integers(2, 7, 12))
    x = rng.normal(0, 1, 12)[groups] + rng.normal(0, 1, groups.size)
    frame = pd.DataFrame({"x": x, "g": groups.astype(str)})
    table = sm_anova(sm, frame)
    msb, msw = table.loc["C(g)", "mean_sq"], table.loc["Residual", "mean_sq"]
    n, sizes = groups.size, np.bincount(groups)
    m0 = (n - np.sum(sizes**2) / n) / (12 - 1)
    icc, g, _ = intra_cluster_correlation(x.tolist(), groups.tolist())
    assert g == 12 and icc == pytest.approx((msb - msw) / (msb + (m0 - 1) * msw), rel=1e-10)


def sm_anova(sm: Any, frame: Any) -> Any:
    from statsmodels.stats.anova import anova_lm

    return anova_lm(sm.ols("x ~ C(g)", data=frame).fit())  # type: ignore[attr-defined]


def test_observed_design_from_two_runs() -> None:
    rng = np.random.default_rng(5)
    a = rng.normal(1500, 200, 300)  # an MME-like score scale
    b = a + rng.normal(20, 50, 300)
    design = observed_design(a.tolist(), b.tolist())
    assert design.std_a == pytest.approx(float(np.std(a, ddof=1)))
    assert design.correlation == pytest.approx(float(np.corrcoef(a, b)[0, 1]), rel=1e-12)
    assert design.design_effect == 1.0 and design.n_clusters is None
    single = observed_design(a.tolist())
    assert math.isnan(single.correlation) and single.std_b == single.std_a
