"""``lmms-eval power`` (and ``lmms-eval eval --power_analysis``): how many questions a comparison needs.

The report gives the minimum number of questions for a paired comparison of two models to detect
``--effect_size`` (formulas in :mod:`lmms_eval.stats.power`). With ``--tasks`` it adds, per task, the
size of the evaluated split, the power that size gives and the smallest difference it can detect.

With ``--results A [--results B]`` the stds, the paired correlation and (for tasks with a
``cluster_key``) the intra-cluster correlation and design effect are measured on existing runs instead
of assumed, per task and metric, for any score scale (:func:`lmms_eval.stats.power.observed_design`).

Split sizes come from :mod:`lmms_eval.tasks._sizes` (metadata and row counts, never the data with
its media). A task whose size cannot be found is reported with the reason; the rest still prints.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.errors import LmmsEvalError
from lmms_eval.stats.power import (
    DEFAULT_ALPHA,
    DEFAULT_CORRELATION,
    DEFAULT_EFFECT_SIZE,
    DEFAULT_POWER,
    DEFAULT_STD,
    ObservedDesign,
    achieved_power,
    check_effect_size,
    minimum_detectable_effect,
    observed_design,
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
        "--results",
        action="append",
        metavar="PATH",
        default=None,
        help="a run (results JSON, samples JSONL or a folder with one run) to measure sd, the paired "
        "correlation and the intra-cluster correlation from; give it twice for two models "
        "(with one run, --correlation is used)",
    )
    parser.add_argument(
        "--include_path", "--include-path", dest="include_path", help="extra folder(s) of task YAMLs"
    )
    parser.add_argument("--verbosity", default="WARNING", help="log level (default: WARNING)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lmms_eval.cli import configure_logging

    configure_logging(args.verbosity)
    if args.results:
        print(observed_report(args.results, args.effect_size, args.alpha, args.power, args.correlation))
        return 0
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


# -- measured on existing runs ---------------------------------------------------------------------


def observed_report(
    paths: Sequence[str],
    effect_size: float = DEFAULT_EFFECT_SIZE,
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    correlation: float = DEFAULT_CORRELATION,
) -> str:
    """Per task and metric of one or two runs: measured sd, correlation, ICC and design effect, and the
    questions needed, the power and the MDE they give (``effect_size`` in the metric's own units)."""
    from lmms_eval.cli._format import markdown_table
    from lmms_eval.compare import compare_runs, load_doc_scores

    if len(paths) > 2:
        raise LmmsEvalError(f"--results takes one or two runs, got {len(paths)}")
    effect = check_effect_size(effect_size)
    runs = [load_doc_scores(p) for p in paths]
    rows: list[list[str]] = []
    for task, key, a, b, clusters in _paired_columns(runs, compare_runs):
        design = observed_design(a, b, clusters)
        in_points = all(0.0 <= v <= 1.0 for v in [*a, *(b or [])])
        rows.append(_observed_row(task, key, design, (effect, alpha, power, correlation), in_points))
    names = " vs ".join(paths)
    return "\n".join(
        [
            f"Power analysis measured on {names} (paired z test, normal approximation; effect "
            f"{effect:g} in each metric's own units)",
            "",
            markdown_table(
                [
                    "Task",
                    "Metric",
                    "n",
                    "sd A",
                    "sd B",
                    "rho",
                    "Clusters",
                    "ICC",
                    "deff",
                    "n needed",
                    "Power",
                    "MDE (points)",
                ],
                rows,
            ),
            "",
            "rho: correlation of the two runs' per-question scores (--correlation with one run); ICC: "
            "intra-cluster correlation of the differences; deff = 1 + (m − 1)·ICC multiplies the n needed "
            "and divides the n available. MDE: in points (as `--tasks` prints it) for scores in [0, 1], "
            "else in the metric's own units, marked 'units'.",
        ]
    )


def _paired_columns(
    runs: Sequence[Any], compare_runs: Any
) -> list[tuple[str, str, list[float], list[float] | None, list[Any] | None]]:
    """(task, metric key, scores A, scores B or None, cluster ids or None) for every compared metric."""
    import math

    out: list[tuple[str, str, list[float], list[float] | None, list[Any] | None]] = []
    first = runs[0]
    if len(runs) == 2:
        report = compare_runs(runs[0], runs[1])
        for c in report.comparisons:
            col_a = first.tasks[c.task].scores[c.key]
            col_b = runs[1].tasks[c.task_b or c.task].scores[c.key]
            ids = [
                i
                for i in sorted(set(col_a) & set(col_b))
                if not (math.isnan(col_a[i]) or math.isnan(col_b[i]))
            ]
            out.append(
                (
                    c.task,
                    c.key,
                    [col_a[i] for i in ids],
                    [col_b[i] for i in ids],
                    _clusters(first.tasks[c.task], ids),
                )
            )
        return out
    for name, task in sorted(first.tasks.items()):
        for key in task.metric_keys():
            ids = sorted(i for i, v in task.scores[key].items() if not math.isnan(v))
            out.append((name, key, [task.scores[key][i] for i in ids], None, _clusters(task, ids)))
    return out


def _clusters(task: Any, ids: Sequence[int]) -> list[Any] | None:
    if not task.clusters:
        return None
    return [task.clusters.get(i, f"__doc_{i}") for i in ids]


def _observed_row(
    task: str, key: str, design: ObservedDesign, plan: tuple[float, float, float, float], in_points: bool
) -> list[str]:
    """One row of :func:`observed_report`; ``plan`` is (effect, alpha, power, correlation)."""
    import math

    effect, alpha, power, correlation = plan
    rho = correlation if math.isnan(design.correlation) else design.correlation
    cells = [task, key, str(design.n), f"{design.std_a:.4g}", f"{design.std_b:.4g}", f"{rho:.3f}"]
    cells += (
        ["-", "-", "1"]
        if design.n_clusters is None
        else [
            str(design.n_clusters),
            "N/A" if math.isnan(design.icc) else f"{design.icc:.3f}",
            f"{design.design_effect:.2f}",
        ]
    )
    try:
        n_min = required_sample_size(effect, alpha, power, design.std_a, design.std_b, rho)
        n_eff = max(int(design.n / design.design_effect), 1)
        current = achieved_power(n_eff, effect, alpha, design.std_a, design.std_b, rho)
        mde = minimum_detectable_effect(n_eff, alpha, power, design.std_a, design.std_b, rho)
    except LmmsEvalError as exc:  # no variance (every score equal): nothing to plan with
        logger.info("%s %s: %s", task, key, exc)
        return [*cells, "N/A", "N/A", "N/A"]
    shown = _points(mde) if in_points else f"{mde:.4g} units"
    return [*cells, str(math.ceil(n_min * design.design_effect)), f"{100 * current:.1f}%", shown]


__all__ = ["add_parser", "observed_report", "run", "run_power_analysis"]
