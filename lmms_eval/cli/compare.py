"""``lmms-eval compare A B``: paired, doc-by-doc comparison of two runs (Diff = A − B)."""

from __future__ import annotations

import argparse
import json
import os

from lmms_eval.errors import LmmsEvalError
from lmms_eval.results.layout import RESULTS_SUFFIX, SAMPLES_MARK, SAMPLES_SUFFIX

RESULTS_GLOB = f"*{RESULTS_SUFFIX}"
SAMPLES_GLOB = f"*{SAMPLES_MARK}*{SAMPLES_SUFFIX}"
DESCRIPTION = (
    "Compare two runs doc by doc: per task and metric the mean difference A − B (in percentage points "
    "for scores in [0, 1]), its standard error, confidence interval and paired t-test p-value, plus the "
    "cluster-robust variant for tasks with a cluster_key. A and B are results folders (the newest "
    f"{RESULTS_GLOB} inside), {RESULTS_GLOB} files, or samples files ({SAMPLES_GLOB}); docs are matched "
    "by doc_id and doc_hash, and unmatched or changed docs are reported."
)


def _names(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [v.strip() for v in value.split(",") if v.strip()] or None


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "compare", help="paired comparison of two runs (t-test per task)", description=DESCRIPTION
    )
    parser.add_argument("a", metavar="A", help=f"run A: results folder, {RESULTS_GLOB} or {SAMPLES_GLOB}")
    parser.add_argument("b", metavar="B", help="run B (the reference): same kinds of path")
    parser.add_argument("--json", metavar="PATH", help="also write the comparison as JSON to PATH")
    parser.add_argument("--tasks", metavar="T1,T2", help="compare only these tasks")
    parser.add_argument(
        "--metrics", metavar="M1,M2", help="compare only these metrics (name or metric,filter)"
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="1 - confidence level of the intervals (default: 0.05)"
    )
    parser.add_argument("--verbosity", default="WARNING", help="log level (default: WARNING)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lmms_eval.cli import configure_logging
    from lmms_eval.compare import compare_runs, format_comparison, load_doc_scores

    configure_logging(args.verbosity)
    if not 0.0 < args.alpha < 1.0:
        raise LmmsEvalError(f"--alpha must be between 0 and 1 (exclusive), got {args.alpha}")
    report = compare_runs(
        load_doc_scores(args.a),
        load_doc_scores(args.b),
        alpha=args.alpha,
        tasks=_names(args.tasks),
        metrics=_names(args.metrics),
    )
    print(format_comparison(report))
    if args.json:
        path = os.path.expanduser(args.json)
        try:
            if os.path.dirname(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(report.to_dict(), handle, indent=2, ensure_ascii=False, allow_nan=False)
                handle.write("\n")
        except OSError as exc:
            raise LmmsEvalError(f"--json: cannot write {path} ({exc.strerror or exc})") from None
        print(f"\nJSON written to {path}")
    return 0
