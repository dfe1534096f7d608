"""Intervals that stay inside the possible range: binomial proportions, paired proportions, clipping.

* :func:`wilson_interval`: the Wilson score interval of a proportion ``k/n`` (the default for a mean of
  0/1 scores: it never has zero width at 0 or 1 and never leaves [0, 1]);
* :func:`clopper_pearson_interval`: the exact (conservative) interval, from beta quantiles;
* :func:`beta_ppf`: the beta quantile, by bisection on the regularized incomplete beta function of
  :mod:`lmms_eval.stats.distributions` (no scipy needed);
* :func:`binomial_two_sided_p`: the exact two-sided binomial test at ``p = 1/2``, which is McNemar's
  exact test when applied to the discordant pairs of a paired comparison (:func:`mcnemar_exact_p`);
* :func:`paired_proportion_interval`: Newcombe's (1998, method 10) interval of the difference of two
  paired proportions, built from the two Wilson intervals and the phi correlation of the pairs;
* :func:`clip_interval`: an interval cut to the range the estimate can take, saying whether it cut.

Everything is plain ``math``: these run inside the evaluator, which does not depend on scipy.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from lmms_eval.stats.distributions import norm_ppf, regularized_incomplete_beta

WILSON = "wilson"
CLOPPER_PEARSON = "clopper-pearson"
BINARY_METHODS = (WILSON, CLOPPER_PEARSON)


class Clipped(NamedTuple):
    """An interval and whether it had to be cut to the possible range."""

    low: float
    high: float
    clipped: bool


def _z(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return norm_ppf(1.0 - alpha / 2.0)


def _check_counts(successes: float, n: float) -> None:
    if not n > 0:
        raise ValueError(f"n must be positive, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n = {n}, got {successes}")


def wilson_interval(successes: float, n: float, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of the proportion ``successes / n`` (statsmodels ``method="wilson"``).

    ``(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)``. ``successes`` and ``n`` may be
    fractional (an effective sample size, for clustered data). At ``p = 1`` the upper bound is exactly 1 and the lower bound
    ``n / (n + z²)``; at ``p = 0`` symmetrically.
    """
    _check_counts(successes, n)
    z = _z(alpha)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def beta_ppf(q: float, a: float, b: float) -> float:
    """The ``q`` quantile of the Beta(a, b) distribution, by bisection on ``I_x(a, b)``."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {q}")
    if a <= 0 or b <= 0:
        raise ValueError(f"beta parameters must be positive, got a={a}, b={b}")
    if q in (0.0, 1.0):
        return q
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if regularized_incomplete_beta(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(hi, 1e-300):
            break
    return 0.5 * (lo + hi)


def clopper_pearson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact Clopper-Pearson interval (statsmodels ``method="beta"``): beta quantiles
    ``B(α/2; k, n−k+1)`` and ``B(1−α/2; k+1, n−k)``, with 0 and 1 at the ends."""
    _check_counts(successes, n)
    _z(alpha)
    k = int(successes)
    low = 0.0 if k == 0 else beta_ppf(alpha / 2.0, k, n - k + 1)
    high = 1.0 if k == n else beta_ppf(1.0 - alpha / 2.0, k + 1, n - k)
    return low, high


def proportion_interval(
    successes: float, n: int, alpha: float = 0.05, method: str = WILSON
) -> tuple[float, float]:
    """The interval of a proportion by ``method`` (``"wilson"`` or ``"clopper-pearson"``)."""
    if method == WILSON:
        return wilson_interval(successes, n, alpha)
    if method == CLOPPER_PEARSON:
        return clopper_pearson_interval(round(successes), n, alpha)
    raise ValueError(
        f"unknown binary interval method {method!r}; expected one of {', '.join(BINARY_METHODS)}"
    )


def binomial_two_sided_p(k: int, n: int) -> float:
    """Exact two-sided p-value of ``k`` successes in ``n`` trials at ``p = 1/2``:
    ``min(1, 2·P(X ≤ min(k, n−k)))`` (the distribution is symmetric, so this equals the
    "sum of outcomes no more likely" definition of scipy's ``binomtest``). ``n = 0`` gives 1."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 1.0
    tail = min(k, n - k)
    ways = sum(math.comb(n, i) for i in range(tail + 1))  # exact integers; one rounding at the end
    return min(1.0, (2 * ways) / 2**n)


def mcnemar_exact_p(b: int, c: int) -> float:
    """McNemar's exact test: the binomial test of ``b`` against ``b + c`` discordant pairs at 1/2."""
    return binomial_two_sided_p(min(b, c), b + c)


def paired_proportion_interval(
    both: int, only_a: int, only_b: int, neither: int, alpha: float = 0.05
) -> tuple[float, float]:
    """Newcombe's interval (1998, method 10) of ``p_a − p_b`` for paired 0/1 outcomes.

    ``both``/``only_a``/``only_b``/``neither`` count the pairs (1,1), (1,0), (0,1), (0,0). With the
    Wilson intervals ``(l_a, u_a)``, ``(l_b, u_b)`` of the two proportions and the phi coefficient
    ``φ = (both·neither − only_a·only_b) / sqrt(row and column totals)`` (0 when a total is 0)::

        L = Δ − sqrt((p_a − l_a)² − 2φ(p_a − l_a)(u_b − p_b) + (u_b − p_b)²)
        U = Δ + sqrt((p_b − l_b)² − 2φ(p_b − l_b)(u_a − p_a) + (u_a − p_a)²)

    It lies inside [−1, 1] and does not collapse when every pair is discordant the same way.
    """
    n = both + only_a + only_b + neither
    if min(both, only_a, only_b, neither) < 0 or n < 1:
        raise ValueError("pair counts must be non-negative with at least one pair")
    p_a, p_b = (both + only_a) / n, (both + only_b) / n
    l_a, u_a = wilson_interval(both + only_a, n, alpha)
    l_b, u_b = wilson_interval(both + only_b, n, alpha)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / math.sqrt(margins) if margins > 0 else 0.0
    diff = p_a - p_b
    da, ub = p_a - l_a, u_b - p_b
    db, ua = p_b - l_b, u_a - p_a
    low = diff - math.sqrt(max(da * da - 2.0 * phi * da * ub + ub * ub, 0.0))
    high = diff + math.sqrt(max(db * db - 2.0 * phi * db * ua + ua * ua, 0.0))
    return max(low, -1.0), min(high, 1.0)


def clip_interval(low: float, high: float, lower_bound: float, upper_bound: float) -> Clipped:
    """``[low, high]`` cut to ``[lower_bound, upper_bound]`` (NaN passes through, unclipped)."""
    if math.isnan(low) or math.isnan(high):
        return Clipped(low, high, False)
    new_low, new_high = max(low, lower_bound), min(high, upper_bound)
    return Clipped(new_low, new_high, new_low != low or new_high != high)


__all__ = [
    "BINARY_METHODS",
    "CLOPPER_PEARSON",
    "WILSON",
    "Clipped",
    "beta_ppf",
    "binomial_two_sided_p",
    "clip_interval",
    "clopper_pearson_interval",
    "mcnemar_exact_p",
    "paired_proportion_interval",
    "proportion_interval",
    "wilson_interval",
]
