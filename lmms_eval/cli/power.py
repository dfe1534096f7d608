"""``lmms-eval power`` (and ``lmms-eval eval --power_analysis``): how many questions a comparison needs.

The report gives the minimum number of questions for a paired comparison of two models to detect
``--effect_size`` (formulas in :mod:`lmms_eval.stats.power`). With ``--tasks`` it adds, per task, the
size of the evaluated split, the power that size gives and the smallest difference it can detect.

Split sizes come from :mod:`lmms_eval.tasks._sizes` (metadata and row counts, never the data with
its media). A task whose size cannot be found is reported with the reason; the rest still prints.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping, Sequence

from lmms_eval.stats.power import (
    DEFAULT_ALPHA,
    DEFAULT_CORRELATION,
    DEFAULT_EFFECT_SIZE,
    DEFAULT_POWER,
    DEFAULT_STD,
    achieved_power,
    check_effect_size,
    minimum_detectable_effect,
    paired_design,
    required_sample_size,
)
from lmms_eval.tasks._sizes import SizeInfo, task_sizes

logger = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "power",
        help="how many questions a comparison of two models needs (power analysis)",
        description="Power analysis for a paired comparison of two models on the same questions: the "
        "minimum number of questions to detect a difference, and with --tasks the power and "
        "minimum detectable effect of each task's evaluated split (sizes are read without "
        "downloading media).",
    )
    parser.add_argument(
        "--effect_size",
        "--effect-size",
        dest="effect_size",
        type=float,
        default=DEFAULT_EFFECT_SIZE,
        help="the difference to detect, on the 0-1 scale (default: 0.03 = 3 points)",
    )
    parser.add_argument(
        "--alpha", type=float, default=DEFAULT_ALPHA, help="two-sided significance level (default: 0.05)"
    )
    parser.add_argument("--power", type=float, default=DEFAULT_POWER, help="wanted power (default: 0.8)")
    parser.add_argument(
        "--correlation",
        type=float,
        default=DEFAULT_CORRELATION,
        help="correlation of the two models' per-question scores (default: 0.5)",
    )
    parser.add_argument(
        "--std_a",
        "--std-a",
        dest="std_a",
        type=float,
        default=None,
        help=f"std of model A's per-question scores (default: {DEFAULT_STD})",
    )
    parser.add_argument(
        "--std_b",
        "--std-b",
        dest="std_b",
        type=float,
        default=None,
        help="std of model B's per-question scores (default: std_a)",
    )
    parser.add_argument(
        "--tasks", default=None, help="comma-separated tasks, groups or tags whose split sizes to check"
    )
    parser.add_argument(
        "--include_path", "--include-path", dest="include_path", help="extra folder(s) of task YAMLs"
    )
    parser.add_argument("--verbosity", default="WARNING", help="log level (default: WARNING)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lmms_eval.cli import configure_logging

    configure_logging(args.verbosity)
    return run_power_analysis(
        effect_size=args.effect_size,
        alpha=args.alpha,
        power=args.power,
        correlation=args.correlation,
        std_a=args.std_a,
        std_b=args.std_b,
        tasks=args.tasks,
        include_path=args.include_path,
    )


# -- the report -------------------------------------------------------------------------------------


def run_power_analysis(
    effect_size: float = DEFAULT_EFFECT_SIZE,
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    correlation: float = DEFAULT_CORRELATION,
    std_a: float | None = None,
    std_b: float | None = None,
    tasks: Sequence[str] | str | None = None,
    include_path: str | Sequence[str] | None = None,
) -> int:
    """Print the power-analysis report; return the exit status (0).

    Invalid inputs raise :class:`~lmms_eval.errors.LmmsEvalError` (one line naming the value) before
    anything is printed; unknown task names raise too. A task whose size cannot be read is listed
    with the reason.
    """
    names = _task_names(tasks)
    n_min = required_sample_size(effect_size, alpha, power, std_a, std_b, correlation)  # validates all
    sizes = task_sizes(names, include_path) if names else {}
    print(format_report(effect_size, alpha, power, correlation, std_a, std_b, n_min, sizes))
    return 0


def _task_names(tasks: Sequence[str] | str | None) -> list[str]:
    if tasks is None:
        return []
    parts = tasks.split(",") if isinstance(tasks, str) else [p for t in tasks for p in str(t).split(",")]
    return list(dict.fromkeys(p.strip() for p in parts if p.strip()))


def _points(value: float) -> str:
    return f"{100.0 * value:.2f}"


def format_report(
    effect_size: float,
    alpha: float,
    power: float,
    correlation: float,
    std_a: float | None,
    std_b: float | None,
    n_min: int,
    sizes: Mapping[str, SizeInfo],
) -> str:
    """The text report: inputs, sd of the difference, minimum n, and a table of the tasks in ``sizes``."""
    from lmms_eval.cli._format import markdown_table

    design = paired_design(std_a, std_b, correlation)
    effect = check_effect_size(effect_size)
    lines = [
        "Power analysis: paired comparison of two models on the same questions "
        "(two-sided z test, normal approximation)",
        "",
        f"  effect size        {effect:g} ({_points(effect)} points)",
        f"  alpha              {alpha:g} (two-sided)",
        f"  power              {power:g}",
        f"  std A / std B      {design.std_a:g} / {design.std_b:g}",
        f"  correlation        {design.correlation:g}",
        f"  sd of difference   {design.sd_diff:.4f} (var_diff = {design.var_diff:.4f})",
        f"  standardized d     {effect / design.sd_diff:.4f}",
        "",
        f"Minimum sample size: {n_min} questions to detect a difference of {_points(effect)} points "
        f"with {100 * power:g}% power at alpha = {alpha:g}.",
    ]
    if not sizes:
        lines.append("Add --tasks to check the evaluated split of each task against this size.")
        return "\n".join(lines)
    rows: list[list[str]] = []
    for info in sizes.values():
        notes = info.notes()
        if info.n is None:
            rows.append([info.task, "?", "-", "-", "Unknown", "; ".join(notes)])
            continue
        if info.n < 1:
            rows.append([info.task, "0", "-", "-", "Insufficient", "; ".join(notes)])
            continue
        current = achieved_power(info.n, effect, alpha, design.std_a, design.std_b, design.correlation)
        mde = minimum_detectable_effect(info.n, alpha, power, design.std_a, design.std_b, design.correlation)
        status = "Sufficient" if info.n >= n_min else "Insufficient"
        rows.append([info.task, str(info.n), f"{100 * current:.1f}%", _points(mde), status, "; ".join(notes)])
    lines += [
        "",
        markdown_table(["Task", "n", "Power", "MDE (points)", "Status", "Notes"], rows),
        "",
        f"n: size of the evaluated split; Power: chance of detecting {_points(effect)} points with n "
        f"questions; MDE: smallest difference detected with {100 * power:g}% power; "
        f"Sufficient: n >= {n_min}.",
    ]
    return "\n".join(lines)


__all__ = ["add_parser", "run", "run_power_analysis"]
