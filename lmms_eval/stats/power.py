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
"""

from __future__ import annotations

import math
from typing import NamedTuple

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


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_CORRELATION",
    "DEFAULT_EFFECT_SIZE",
    "DEFAULT_POWER",
    "DEFAULT_STD",
    "PairedDesign",
    "achieved_power",
    "check_alpha",
    "check_effect_size",
    "check_power",
    "check_sample_size",
    "minimum_detectable_effect",
    "paired_design",
    "paired_sd",
    "required_sample_size",
]
