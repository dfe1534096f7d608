"""``lmms-eval cache [stats|prune|clear]``: inspect and manage the response cache (``--use_cache``).

All three refuse a folder that is not a response cache. ``prune`` and ``clear`` also refuse while an
evaluation holds the cache (``--wait SECONDS`` waits for it to end instead), and ``clear`` removes
only the files the cache writes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lmms_eval.cli._format import markdown_table

ACTIONS = ("stats", "prune", "clear")


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "cache",
        help="response cache: stats, prune, clear",
        description="Inspect and manage the response cache of --use_cache. The folder defaults to "
        "$LMMS_EVAL_USE_CACHE when it names one, else $LMMS_EVAL_HOME/eval_cache.",
    )
    parser.add_argument("action", choices=ACTIONS, help="stats: entries per task and model; prune; clear")
    parser.add_argument("--path", help="the cache folder (the --use_cache value)")
    parser.add_argument("--task", help="prune: the entries of this task")
    parser.add_argument("--model", help="prune: the entries of this model (id or fingerprint)")
    parser.add_argument("--json", action="store_true", help="stats: print JSON")
    parser.add_argument(
        "--wait",
        type=_seconds,
        default=0.0,
        metavar="SECONDS",
        help="prune, clear: wait up to this long for running evaluations that hold the cache to end "
        "(default: refuse at once)",
    )
    parser.add_argument("--verbosity", default="WARNING", help="log level (default: WARNING)")
    parser.set_defaults(handler=run)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from lmms_eval.caching import ResponseCache, check_cache_folder, clear_cache, default_cache_path
    from lmms_eval.cli import configure_logging
    from lmms_eval.errors import ConfigError

    configure_logging(args.verbosity)
    path = Path(args.path).expanduser() if args.path else default_cache_path()
    if args.action == "prune" and not (args.task or args.model):
        raise ConfigError("cache prune needs --task and/or --model")
    if not path.exists():
        print(f"no response cache at {path}")
        return 0
    check_cache_folder(path, args.action)  # before anything is opened, created or removed
    if args.action == "clear":
        removed = clear_cache(path, wait=args.wait)
        print(f"removed {len(removed)} file(s) from {path}")
        return 0
    with ResponseCache(path) as cache:  # opening merges answers left by killed runs
        if args.action == "prune":
            count = cache.prune(task=args.task, model=args.model, wait=args.wait)
            print(f"removed {count} entries from {path}")
            return 0
        rows = cache.stats()
        pending = len(cache.pending_run_files())
        journal = cache.journal_mode
    total = sum(r["entries"] for r in rows)
    if args.json:
        print(json.dumps({"path": str(path), "entries": total, "by_task_model": rows}, indent=2))
        return 0
    size = (path / "cache.db").stat().st_size if (path / "cache.db").exists() else 0
    print(f"Response cache {path} (cache.db {size / 2**20:.1f} MiB, journal_mode={journal})")
    if rows:
        table = [[r["task"], r["model"], r["model_fingerprint"], str(r["entries"])] for r in rows]
        print(markdown_table(["Task", "Model", "Model fingerprint", "Entries"], table))
    print(f"{total} entries")
    if pending:
        print(f"{pending} run file(s) of evaluations still running are not merged yet")
    return 0
