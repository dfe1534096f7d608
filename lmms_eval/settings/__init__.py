"""Run settings: :class:`EvalSettings`, the one definition of every run option, and the value checks
(:mod:`lmms_eval.settings.checks`) it and other modules share."""

from lmms_eval.settings.checks import (
    check_batch_size,
    check_bootstrap_iters,
    check_gen_kwargs,
    check_limit,
    check_max_tokens,
    check_offset,
    check_repeats,
    check_seed,
    check_seeds,
    check_timezone,
    check_verbosity,
    show_value,
)
from lmms_eval.settings.model import EvalSettings, cli_of, flag_name, options, run_settings_model

__all__ = [
    "EvalSettings",
    "check_batch_size",
    "check_bootstrap_iters",
    "check_gen_kwargs",
    "check_limit",
    "check_max_tokens",
    "check_offset",
    "check_repeats",
    "check_seed",
    "check_seeds",
    "check_timezone",
    "check_verbosity",
    "cli_of",
    "flag_name",
    "options",
    "run_settings_model",
    "show_value",
]
