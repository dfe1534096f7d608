"""Power analysis for a paired comparison of two models on the same questions.

Both models answer the same ``n`` questions; the test is on the per-question differences
``D = score_B − score_A``, whose variance is::

    var_diff = std_a² + std_b² − 2·ρ·std_a·std_b

where ``ρ`` is the correlation of the two models' per-question scores (models tend to get the same
questions right, so ``ρ > 0`` and the paired design needs fewer questions than two independent samples).
With the standardized effect ``d = δ / sqrt(var_diff)`` for a true difference ``δ`` and a two-sided
level-``α`` test:

* minimum sample size ``n_min = ceil(((z_{1−α/2} + z_{power}) / d)²)``;
* power at ``n`` questions ``Φ(d·sqrt(n) − z_{1−α/2})``;
* minimum detectable effect at ``n`` questions ``(z_{1−α/2} + z_{power})·sqrt(var_diff)/sqrt(n)``.

These are the usual **normal-approximation** formulas (a z test on the mean difference with the
variance taken as known). They neglect the rejections in the wrong direction, whose probability
``Φ(−d·sqrt(n) − z_{1−α/2})`` is below ``α/2``, and the few extra questions a t test needs when ``n``
is small (with ``n ≥ 30`` the difference is a question or two). Scores are on the 0–1 scale, so an
effect of 0.03 is 3 points; the default std of 0.5 is the largest a 0/1 score can have (accuracy 50%),
which makes the defaults conservative.

Measured instead of assumed (:func:`observed_design`): from the per-question scores of one or two
existing runs, the stds, the paired correlation and, for tasks whose questions share a video, image
or passage (``cluster_key``), the intra-cluster correlation ``ICC`` of the per-question differences
(one-way ANOVA estimator) and the design effect ``deff = 1 + (m − 1)·ICC`` with ``m`` the mean cluster
size (Miller 2024, "Adding Error Bars to Evals"): clustered questions carry less information, so the
required ``n`` is multiplied by ``deff`` and power and MDE use ``n / deff``. Any score scale works
(MME's 0–2800 sums, 1–10 judge ratings): the effect size is then in the metric's own units.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import NamedTuple

import numpy as np

from lmms_eval.errors import ConfigError
from lmms_eval.stats.distributions import norm_cdf, norm_ppf

DEFAULT_EFFECT_SIZE = 0.03
DEFAULT_ALPHA = 0.05
DEFAULT_POWER = 0.8
DEFAULT_CORRELATION = 0.5
DEFAULT_STD = 0.5  # the std of a 0/1 score at 50% accuracy: the largest possible, so conservative


class PairedDesign(NamedTuple):
    """The validated quantities shared by every formula of this module."""

    std_a: float
    std_b: float
    correlation: float
    var_diff: float
    sd_diff: float


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")
    return number


def _probability(name: str, value: object, meaning: str) -> float:
    number = _number(name, value)
    if not 0.0 < number < 1.0:
        raise ConfigError(f"{name} must be strictly between 0 and 1 ({meaning}), got {value!r}")
    return number


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float, or a :class:`ConfigError` naming the bad value."""
    return _probability("alpha", alpha, "the significance level, e.g. 0.05")


def check_power(power: float) -> float:
    """``power`` as a float, or a :class:`ConfigError` naming the bad value."""
    return _probability("power", power, "the wanted probability of detecting the effect, e.g. 0.8")


def check_effect_size(effect_size: float) -> float:
    """``effect_size`` as a positive float, or a :class:`ConfigError` naming the bad value."""
    number = _number("effect_size", effect_size)
    if number <= 0.0:
        raise ConfigError(
            f"effect_size must be positive (the difference to detect on the 0-1 scale, "
            f"e.g. 0.03 for 3 points), got {effect_size!r}"
        )
    return number


def check_sample_size(n: int) -> int:
    """``n`` (questions) as a positive int, or a :class:`ConfigError` naming the bad value."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n (the number of questions) must be a positive integer, got {n!r}")
    return n


def paired_design(
    std_a: float | None = DEFAULT_STD, std_b: float | None = None, correlation: float = DEFAULT_CORRELATION
) -> PairedDesign:
    """Validate the stds and the correlation and compute the variance of the paired difference.

    ``std_a`` defaults to 0.5 (also when None) and ``std_b`` to ``std_a``. ``var_diff`` is computed
    as ``(a − b)² + 2ab(1 − ρ)``, the same quantity as ``a² + b² − 2ρab`` without the cancellation
    that loses precision when ``ρ`` is close to 1.
    """
    a = DEFAULT_STD if std_a is None else _number("std_a", std_a)
    b = a if std_b is None else _number("std_b", std_b)
    for name, value in (("std_a", a), ("std_b", b)):
        if value <= 0.0:
            raise ConfigError(
                f"{name} must be positive (the std of a model's per-question scores; at most 0.5 "
                f"for 0/1 scores), got {value!r}"
            )
    rho = _number("correlation", correlation)
    if not -1.0 <= rho <= 1.0:
        raise ConfigError(f"correlation must be between -1 and 1, got {correlation!r}")
    var_diff = (a - b) ** 2 + 2.0 * a * b * (1.0 - rho)
    if not var_diff > 0.0:
        raise ConfigError(
            f"the paired difference has no variance (std_a={a:g}, std_b={b:g}, correlation={rho:g} give "
            "var_diff = a² + b² − 2ρab = 0): two models that always agree cannot be told apart; "
            "use a correlation below 1"
        )
    return PairedDesign(a, b, rho, var_diff, math.sqrt(var_diff))


def paired_sd(
    std_a: float | None = DEFAULT_STD, std_b: float | None = None, correlation: float = DEFAULT_CORRELATION
) -> float:
    """The std of the per-question difference, ``sqrt(std_a² + std_b² − 2ρ·std_a·std_b)``."""
    return paired_design(std_a, std_b, correlation).sd_diff


def _z_sum(alpha: float, power: float) -> float:
    """``z_{1−α/2} + z_{power}``, the distance between the null and the alternative in std errors."""
    return norm_ppf(1.0 - check_alpha(alpha) / 2.0) + norm_ppf(check_power(power))


def required_sample_size(
    effect_size: float = DEFAULT_EFFECT_SIZE,
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    std_a: float | None = DEFAULT_STD,
    std_b: float | None = None,
    correlation: float = DEFAULT_CORRELATION,
) -> int:
    """The fewest questions for a two-sided level-``alpha`` paired test to detect a true difference
    of ``effect_size`` with probability ``power``: ``ceil(((z_{1−α/2} + z_{power}) / d)²)`` with
    ``d = effect_size / sd_diff`` (at least 1).

    >>> required_sample_size(0.03)  # 3 points, std 0.5, correlation 0.5
    2181
    """
    effect = check_effect_size(effect_size)
    design = paired_design(std_a, std_b, correlation)
    exact = (_z_sum(alpha, power) * design.sd_diff / effect) ** 2
    # the tolerance keeps a value that is an integer up to rounding error from moving up by one
    return max(1, math.ceil(exact * (1.0 - 1e-12)))


def achieved_power(
    n: int,
    effect_size: float = DEFAULT_EFFECT_SIZE,
    alpha: float = DEFAULT_ALPHA,
    std_a: float | None = DEFAULT_STD,
    std_b: float | None = None,
    correlation: float = DEFAULT_CORRELATION,
) -> float:
    """The power of a two-sided level-``alpha`` paired test on ``n`` questions against a true
    difference of ``effect_size``: ``Φ(d·sqrt(n) − z_{1−α/2})`` with ``d = effect_size / sd_diff``."""
    count = check_sample_size(n)
    effect = check_effect_size(effect_size)
    design = paired_design(std_a, std_b, correlation)
    z_alpha = norm_ppf(1.0 - check_alpha(alpha) / 2.0)
    return norm_cdf(effect / design.sd_diff * math.sqrt(count) - z_alpha)


def minimum_detectable_effect(
    n: int,
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    std_a: float | None = DEFAULT_STD,
    std_b: float | None = None,
    correlation: float = DEFAULT_CORRELATION,
) -> float:
    """The smallest true difference (0-1 scale) that ``n`` questions detect with probability ``power``
    in a two-sided level-``alpha`` paired test: ``(z_{1−α/2} + z_{power})·sd_diff/sqrt(n)``."""
    count = check_sample_size(n)
    design = paired_design(std_a, std_b, correlation)
    return _z_sum(alpha, power) * design.sd_diff / math.sqrt(count)


class ObservedDesign(NamedTuple):
    """Quantities of a paired design measured on existing runs (NaN where not measurable)."""

    n: int
    std_a: float
    std_b: float
    correlation: float  # NaN with one run: the correlation needs both
    n_clusters: int | None
    icc: float  # of the per-question differences (of the scores with one run); NaN without clusters
    mean_cluster_size: float
    design_effect: float  # 1 without clusters


def intra_cluster_correlation(
    values: Sequence[float], clusters: Sequence[Hashable]
) -> tuple[float, int, float]:
    """One-way ANOVA estimator of the intra-cluster correlation, the number of clusters and the mean
    cluster size: ``ICC = (MSB − MSW) / (MSB + (m₀ − 1)·MSW)`` with ``m₀ = (n − Σ n_c²/n) / (G − 1)``.
    NaN with fewer than 2 clusters or no within-cluster replication; may be negative (kept: it gives
    a design effect below 1, i.e. clusters that mix easy and hard questions)."""
    x = np.asarray(values, dtype=float)
    labels = [repr(c) for c in clusters]
    _, codes = np.unique(np.asarray(labels), return_inverse=True)
    g, n = (int(codes.max()) + 1 if x.size else 0), int(x.size)
    mean_size = n / g if g else math.nan
    if g < 2 or n <= g:
        return math.nan, g, mean_size
    sizes = np.bincount(codes).astype(float)
    means = np.bincount(codes, weights=x) / sizes
    msb = float(np.sum(sizes * (means - x.mean()) ** 2)) / (g - 1)
    msw = float(np.sum((x - means[codes]) ** 2)) / (n - g)
    m0 = (n - float(np.sum(sizes**2)) / n) / (g - 1)
    denominator = msb + (m0 - 1.0) * msw
    return (math.nan if denominator <= 0 else (msb - msw) / denominator), g, mean_size


def design_effect(icc: float, mean_cluster_size: float) -> float:
    """``1 + (m − 1)·ICC`` (1 when the ICC is unknown), never below ``1 / m`` (at most m-fold gain)."""
    if math.isnan(icc) or math.isnan(mean_cluster_size):
        return 1.0
    return max(1.0 + (mean_cluster_size - 1.0) * icc, 1.0 / mean_cluster_size)


def observed_design(
    a: Sequence[float], b: Sequence[float] | None = None, clusters: Sequence[Hashable] | None = None
) -> ObservedDesign:
    """Stds, paired correlation, ICC and design effect measured on per-question scores.

    ``a`` and ``b`` are the two runs' scores of the same questions (same order); with only ``a`` the
    second model is assumed alike (``std_b = std_a``) and the correlation stays NaN (give it). The
    ICC is that of the differences ``a − b`` (what the paired test sees), of ``a`` with one run.
    """
    xa = np.asarray(a, dtype=float)
    xb = None if b is None else np.asarray(b, dtype=float)
    if xb is not None and xb.size != xa.size:
        raise ValueError(f"paired samples differ in length: {xa.size} vs {xb.size}")
    n = int(xa.size)
    sd_a = float(xa.std(ddof=1)) if n > 1 else math.nan
    sd_b = float(xb.std(ddof=1)) if xb is not None and n > 1 else sd_a
    rho = math.nan
    if xb is not None and n > 1 and sd_a > 0 and sd_b > 0:
        rho = float(np.corrcoef(xa, xb)[0, 1])
    if clusters is None:
        return ObservedDesign(n, sd_a, sd_b, rho, None, math.nan, 1.0, 1.0)
    target = xa - xb if xb is not None else xa
    icc, g, m = intra_cluster_correlation(target.tolist(), clusters)
    return ObservedDesign(n, sd_a, sd_b, rho, g, icc, m, design_effect(icc, m))


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_CORRELATION",
    "DEFAULT_EFFECT_SIZE",
    "DEFAULT_POWER",
    "DEFAULT_STD",
    "ObservedDesign",
    "PairedDesign",
    "achieved_power",
    "check_alpha",
    "check_effect_size",
    "check_power",
    "check_sample_size",
    "design_effect",
    "intra_cluster_correlation",
    "minimum_detectable_effect",
    "observed_design",
    "paired_design",
    "paired_sd",
    "required_sample_size",
]
