"""Normal and Student-t functions of ``lmms_eval.stats.distributions`` against scipy.stats.

scipy is the independent reference: every expected value below comes from ``scipy.stats.t`` /
``scipy.stats.norm``, never from the functions under test.
"""

from __future__ import annotations

import math

import pytest
from scipy import special
from scipy import stats as sps

from lmms_eval.stats.distributions import (
    norm_cdf,
    norm_ppf,
    regularized_incomplete_beta,
    t_cdf,
    t_ppf,
    t_sf_two_sided,
)

DFS = (1, 2, 5, 30, 1e6)
T_VALUES = (
    -1e6, -1e3, -300.0, -40.0, -10.0, -5.0, -2.5, -1.96, -1.0, -0.1, -1e-3,
    0.0, 1e-3, 0.1, 0.5, 1.0, 1.96, 2.5, 5.0, 10.0, 40.0, 300.0, 1e3, 1e6,
)  # fmt: skip
PROBABILITIES = (1e-12, 1e-8, 1e-6, 1e-3, 0.025, 0.1, 0.3, 0.5, 0.7, 0.9, 0.975, 0.999, 1 - 1e-6)


def _close(actual: float, expected: float, rel: float, abs_: float) -> bool:
    return abs(actual - expected) <= max(rel * abs(expected), abs_)


def _cdf_tolerance(df: float) -> tuple[float, float]:
    """(relative, absolute) tolerance of the t CDF.

    Up to df = 30 the CDF is accurate to 1e-9 relative everywhere, tails included. At df = 1e6 the
    log-beta prefactor loses digits (see ``test_t_cdf_accuracy_for_huge_df``): about 5e-9 absolute,
    still far below anything a confidence interval or p-value can resolve.
    """
    return (1e-9, 1e-300) if df <= 1e3 else (1e-6, 1e-8)


@pytest.mark.parametrize("df", DFS)
def test_t_cdf_matches_scipy_over_grid_including_tails(df: float) -> None:
    # relative accuracy matters in the tails (p-values of 1e-40), absolute accuracy near 0.5
    bad = []
    for t in T_VALUES:
        expected = float(sps.t.cdf(t, df))
        actual = t_cdf(t, df)
        if not _close(actual, expected, *_cdf_tolerance(df)):
            bad.append((t, actual, expected))
    assert not bad


@pytest.mark.parametrize("df", DFS)
def test_two_sided_p_value_matches_scipy(df: float) -> None:
    bad = []
    for t in T_VALUES:
        expected = float(2 * sps.t.sf(abs(t), df))
        actual = t_sf_two_sided(t, df)
        if not _close(actual, expected, *_cdf_tolerance(df)):
            bad.append((t, actual, expected))
    assert not bad
    # symmetric in t, 1 at t = 0, in [0, 1]
    assert t_sf_two_sided(0.0, df) == 1.0
    assert t_sf_two_sided(-2.0, df) == t_sf_two_sided(2.0, df)


@pytest.mark.parametrize("df", DFS)
def test_t_ppf_matches_scipy(df: float) -> None:
    bad = []
    for p in PROBABILITIES:
        expected = float(sps.t.ppf(p, df))
        actual = t_ppf(p, df)
        # central quantiles to 1e-9; tail quantiles (p <= 1e-6 or >= 1 - 1e-6) to 1e-4, because the
        # lower tail is computed as -t_ppf(1 - p) (see test_t_ppf_deep_lower_tail)
        rel = 1e-9 if 1e-3 <= p <= 1 - 1e-3 else 1e-4
        if not _close(actual, expected, rel=rel, abs_=1e-12):
            bad.append((p, actual, expected))
    assert not bad


@pytest.mark.parametrize("df", DFS)
def test_t_ppf_inverts_t_cdf(df: float) -> None:
    for p in (0.01, 0.2, 0.5, 0.8, 0.975, 0.995):
        assert t_cdf(t_ppf(p, df), df) == pytest.approx(p, rel=1e-10)


def test_confidence_multipliers_are_the_textbook_values() -> None:
    # hand-checked table values: t_{0.975, 1} = 12.706, t_{0.975, 30} = 2.042, z_{0.975} = 1.960
    assert t_ppf(0.975, 1) == pytest.approx(12.7062047, rel=1e-7)
    assert t_ppf(0.975, 30) == pytest.approx(2.0422725, rel=1e-7)
    assert t_ppf(0.975, math.inf) == pytest.approx(1.9599640, rel=1e-7)
    # df = 1 is Cauchy: cdf(t) = 1/2 + atan(t)/pi
    for t in (-7.0, -1.0, 0.3, 2.0, 50.0):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, rel=1e-12)
    # df = 2 has a closed form: cdf(t) = 1/2 + t / (2 sqrt(2 + t^2))
    for t in (-3.0, -0.5, 0.7, 4.0):
        assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), rel=1e-12)


def test_infinite_df_is_the_normal_distribution() -> None:
    for t in (-5.0, -1.5, 0.0, 0.4, 3.0, 6.0):
        assert t_cdf(t, math.inf) == pytest.approx(float(sps.norm.cdf(t)), rel=1e-9, abs=1e-15)
    for t in (-4.0, -1.5, 0.0, 0.4, 3.0):
        assert t_sf_two_sided(t, math.inf) == pytest.approx(float(2 * sps.norm.sf(abs(t))), rel=1e-9)
    assert t_ppf(0.9, math.inf) == pytest.approx(float(sps.norm.ppf(0.9)), rel=1e-12)


def test_t_cdf_special_values_and_errors() -> None:
    assert t_cdf(math.inf, 3) == 1.0
    assert t_cdf(-math.inf, 3) == 0.0
    assert math.isnan(t_cdf(math.nan, 3))
    assert math.isnan(t_sf_two_sided(math.nan, 3))
    assert t_sf_two_sided(math.inf, 3) == 0.0
    assert t_cdf(0.0, 7) == 0.5
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_cdf(1.0, 0)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_cdf(1.0, -2)
    for p in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="probability"):
            t_ppf(p, 5)
    assert t_ppf(0.5, 5) == 0.0
    assert t_ppf(0.3, 5) == pytest.approx(-t_ppf(0.7, 5), rel=1e-12)  # 1 - 0.7 is not exactly 0.3


def test_norm_functions_match_scipy() -> None:
    # the lower tail down to -5 (p ~ 3e-7); deeper tails: test_norm_cdf_deep_lower_tail
    for x in (-5.0, -3.0, -1.0, 0.0, 0.25, 1.96, 5.0, 8.0, 40.0):
        assert norm_cdf(x) == pytest.approx(float(sps.norm.cdf(x)), rel=1e-9, abs=1e-300)
    for p in (1e-15, 1e-9, 1e-4, 0.025, 0.31, 0.5, 0.8, 0.975, 1 - 1e-9):
        assert norm_ppf(p) == pytest.approx(float(sps.norm.ppf(p)), rel=1e-9, abs=1e-15)
    for p in (0.0, 1.0, -1.0, 2.0):
        with pytest.raises(ValueError, match="probability"):
            norm_ppf(p)


def test_regularized_incomplete_beta_matches_scipy_betainc() -> None:
    for a, b in ((0.5, 0.5), (1.0, 1.0), (2.5, 0.5), (15.0, 0.5), (0.7, 9.0), (40.0, 60.0)):
        for x in (1e-6, 0.01, 0.2, 0.5, 0.77, 0.99, 1 - 1e-9):
            expected = float(special.betainc(a, b, x))
            assert regularized_incomplete_beta(a, b, x) == pytest.approx(expected, rel=1e-10, abs=1e-15)
    assert regularized_incomplete_beta(2.0, 3.0, 0.0) == 0.0
    assert regularized_incomplete_beta(2.0, 3.0, 1.0) == 1.0
    assert regularized_incomplete_beta(1.0, 1.0, 0.3) == pytest.approx(0.3, rel=1e-14)  # uniform


# ------------------------------------------------------------------------------------------------
# Precision in the hard places: deep tails, huge df, t near 0 (regression tests for fixed defects).
# ------------------------------------------------------------------------------------------------


def test_t_ppf_deep_lower_tail() -> None:
    assert t_ppf(1e-12, 5) == pytest.approx(float(sps.t.ppf(1e-12, 5)), rel=1e-8, abs=0)
    assert t_ppf(1e-17, 5) == pytest.approx(float(sps.t.ppf(1e-17, 5)), rel=1e-8, abs=0)


def test_t_cdf_accuracy_for_huge_df() -> None:
    # the cancelling log-beta, the subtracted 1 - x and the capped continued fraction are gone
    for df in (1e6, 1e9):
        for t in (-2.0, -1.0, 1.0, 2.0):
            assert t_cdf(t, df) == pytest.approx(float(sps.t.cdf(t, df)), rel=1e-10, abs=0)


def test_t_cdf_near_zero_keeps_the_slope() -> None:
    # df = 1 is the Cauchy distribution: 1/2 + atan(t)/pi (scipy itself is off by 3e-9 there)
    assert t_cdf(1e-8, 1) == pytest.approx(0.5 + math.atan(1e-8) / math.pi, rel=1e-13, abs=0)
    for df in (5, 30):
        assert t_cdf(1e-8, df) == pytest.approx(float(sps.t.cdf(1e-8, df)), rel=1e-13, abs=0)


def test_norm_cdf_deep_lower_tail() -> None:
    # abs=0: pytest.approx would otherwise accept anything within 1e-12
    assert norm_cdf(-8.0) == pytest.approx(float(sps.norm.cdf(-8.0)), rel=1e-9, abs=0)
    assert norm_cdf(-37.0) == pytest.approx(float(sps.norm.cdf(-37.0)), rel=1e-9, abs=0)
    assert t_sf_two_sided(8.0, math.inf) == pytest.approx(float(2 * sps.norm.sf(8.0)), rel=1e-9, abs=0)
