"""``lmms-eval leaderboard LOGS_DIR``: every run under a folder by task, with a baseline's marks."""

from __future__ import annotations

import argparse
import json

from lmms_eval.errors import LmmsEvalError

DESCRIPTION = (
    "Rank every run under LOGS_DIR (each results file found, searched recursively): one row per run, "
    "one column per task holding the task's main metric with its 95% confidence interval, and the "
    "mean over the run's tasks. With --baseline RUN, each cell is compared doc by doc with the "
    "baseline's (the paired test of 'lmms-eval compare'), the p-values of all cells are adjusted "
    "together (Holm, or Benjamini-Hochberg with --correction bh), and cells are marked ▲ (better) or "
    "▼ (worse) where the adjusted p-value is below --alpha."
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "leaderboard", help="runs by tasks, with significance against a baseline", description=DESCRIPTION
    )
    parser.add_argument("logs_dir", metavar="LOGS_DIR", help="folder holding runs (searched recursively)")
    parser.add_argument(
        "--baseline", metavar="RUN", help="run id (as listed: <folder>/<stamp>) to test against"
    )
    parser.add_argument("--format", choices=("md", "csv", "json"), default="md", help="output (default: md)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default: 0.05)")
    parser.add_argument(
        "--correction",
        choices=("holm", "bh"),
        default="holm",
        help="multiple-comparison correction (default: holm)",
    )
    parser.add_argument("--verbosity", default="WARNING", help="log level (default: WARNING)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lmms_eval.cli import configure_logging
    from lmms_eval.leaderboard import build_leaderboard, runs_under, to_csv, to_markdown

    configure_logging(args.verbosity)
    runs, notes = runs_under(args.logs_dir)
    if not runs:
        raise LmmsEvalError(f"{args.logs_dir}: no results files found (searched recursively)")
    board = build_leaderboard(runs, args.baseline, args.alpha, args.correction)
    board.notes[:0] = notes
    if args.format == "json":
        print(json.dumps(board.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
    else:
        print(to_csv(board) if args.format == "csv" else to_markdown(board), end="")
    return 0
