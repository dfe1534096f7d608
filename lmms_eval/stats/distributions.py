"""Normal and Student-t distribution functions (no scipy needed).

The t CDF uses the regularized incomplete beta function (continued fraction, modified Lentz),
always evaluated in its well-conditioned form: ``I_y(1/2, df/2)`` with ``y = t²/(df+t²)`` near the
centre and ``I_{1-y}(df/2, 1/2)`` in the tails, with ``1 - y`` computed directly. For very large
df an asymptotic normal form is used. Quantiles are found by bisection on the accurate CDF, in the
tail they belong to. Relative accuracy (checked against 50-digit arithmetic) is about 1e-13 up to
df = 1e5 and better than 1e-9 beyond, far finer than any interval or p-value needs.
"""

from __future__ import annotations

import math

_SQRT2 = math.sqrt(2.0)
_LARGE_DF = 1e7


def norm_cdf(x: float) -> float:
    """Standard normal CDF, accurate in both tails (``erfc`` does not cancel)."""
    return 0.5 * math.erfc(-x / _SQRT2)


def norm_ppf(p: float) -> float:
    from statistics import NormalDist

    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {p}")
    return NormalDist().inv_cdf(p)


def _log_beta(a: float, b: float) -> float:
    """log B(a, b); for b = 1/2 and large a through the asymptotic ratio Γ(a+1/2)/Γ(a)."""
    if a == 0.5 and b != 0.5:
        a, b = b, a
    if b == 0.5 and a > 50.0:
        # log Γ(a + 1/2) - log Γ(a) = 1/2 log a - 1/(8a) + 1/(192 a^3) + 1/(640 a^5) - 17/(14336 a^7)
        inv = 1.0 / a
        ratio = 0.5 * math.log(a) - inv / 8.0 + inv**3 / 192.0 + inv**5 / 640.0 - 17.0 * inv**7 / 14336.0
        return math.lgamma(0.5) - ratio
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    limit = 500 + int(20 * math.sqrt(max(a, b)))
    for m in range(1, limit):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _ibeta(
    a: float, b: float, x: float, one_minus_x: float, log_x: float | None = None, log_1mx: float | None = None
) -> float:
    """I_x(a, b) with ``1 - x`` (and optionally both logs) given separately, so that neither needs
    to be formed by a cancelling subtraction."""
    if x <= 0.0:
        return 0.0
    if one_minus_x <= 0.0:
        return 1.0
    lx = math.log(x) if log_x is None else log_x
    l1x = math.log(one_minus_x) if log_1mx is None else log_1mx
    log_front = a * lx + b * l1x - _log_beta(a, b)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        if a > 1000.0 and one_minus_x < 10.0 * (b + 1.0) / (a + b + 2.0):
            # near the switch point the direct fraction needs ~sqrt(a) terms and gathers rounding
            # error; the reflected one still converges quickly and only cancels for small results
            reflected = 1.0 - front * _beta_continued_fraction(b, a, one_minus_x) / b
            if reflected > 1e-2:
                return reflected
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, one_minus_x) / b


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b)."""
    return _ibeta(a, b, x, 1.0 - x)


def _t_logs(t: float, df: float) -> tuple[float, float, float, float]:
    """``x = df/(df+t²)``, ``1-x`` and their logs, computed without cancellation."""
    t2 = t * t
    log_x = -math.log1p(t2 / df)
    log_1mx = math.log(t2) - math.log(df + t2) if t2 > 0 else -math.inf
    return df / (df + t2), t2 / (df + t2), log_x, log_1mx


def _two_sided_tail(t: float, df: float) -> float:
    """P(|T| >= |t|) for finite df."""
    x, one_minus_x, log_x, log_1mx = _t_logs(t, df)
    return _ibeta(df / 2.0, 0.5, x, one_minus_x, log_x, log_1mx)


def _central(t: float, df: float) -> float:
    """P(|T| < |t|), accurate near 0."""
    x, one_minus_x, log_x, log_1mx = _t_logs(t, df)
    return _ibeta(0.5, df / 2.0, one_minus_x, x, log_1mx, log_x)


def _large_df_z(t: float, df: float) -> float:
    """Normal deviate equivalent to t for huge df (error O(1/df^2))."""
    return t * (1.0 - 1.0 / (4.0 * df)) / math.sqrt(1.0 + t * t / (2.0 * df))


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (normal for infinite df)."""
    if math.isnan(t):
        return math.nan
    if math.isinf(df):
        return norm_cdf(t)
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    if df >= _LARGE_DF:
        return norm_cdf(_large_df_z(t, df))
    if t * t < min(df, 1.0):  # the centre: from the small probability P(|T| < |t|)
        half = 0.5 * _central(t, df)
        return 0.5 + half if t > 0 else 0.5 - half
    tail = 0.5 * _two_sided_tail(t, df)
    return 1.0 - tail if t > 0 else tail


def t_sf_two_sided(t: float, df: float) -> float:
    """Two-sided p-value ``P(|T| >= |t|)``."""
    if math.isnan(t):
        return math.nan
    if math.isinf(df):
        return math.erfc(abs(t) / _SQRT2)
    if math.isinf(t):
        return 0.0
    if df >= _LARGE_DF:
        return math.erfc(abs(_large_df_z(t, df)) / _SQRT2)
    if t * t < min(df, 1.0):
        return 1.0 - _central(t, df)
    return _two_sided_tail(t, df)


def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t, by bisection on :func:`t_cdf` in the tail ``p`` lies in."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {p}")
    if math.isinf(df):
        return norm_ppf(p)
    if p == 0.5:
        return 0.0
    sign = 1.0 if p > 0.5 else -1.0
    lo, hi = 0.0, 1.0
    while (t_cdf(sign * hi, df) < p) if sign > 0 else (t_cdf(sign * hi, df) > p):
        lo, hi = hi, hi * 2.0
        if hi > 1e300:
            return sign * math.inf
    for _ in range(400):
        mid = 0.5 * (lo + hi)
        below = t_cdf(sign * mid, df) < p
        if (sign > 0) == below:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-14 * hi:
            break
    return sign * 0.5 * (lo + hi)
