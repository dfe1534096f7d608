"""``lmms-eval tasks [list|groups|tags|subtasks|benchmarks|validate]``."""

from __future__ import annotations

import argparse
import os

from lmms_eval.cli._format import markdown_table

ACTIONS = ("list", "groups", "tags", "subtasks", "benchmarks", "validate")


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("tasks", help="list, inspect and validate tasks")
    parser.add_argument(
        "action", nargs="?", default="list", choices=ACTIONS, help="what to show (default: list)"
    )
    parser.add_argument(
        "--include_path", "--include-path", dest="include_path", help="extra folder(s) of task YAMLs"
    )
    parser.add_argument("--verbosity", default="WARNING", help="log level (default: WARNING)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lmms_eval.cli import configure_logging

    configure_logging(args.verbosity)
    if args.action == "validate":
        return validate(args.include_path)
    if args.action == "benchmarks":
        return print_benchmarks(args.include_path)
    return print_listing(args.action, args.include_path)


def _location(path: str | None) -> str:
    if not path:
        return ""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def print_listing(action: str, include_path: str | None) -> int:
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=include_path)
    index = manager.index
    if action == "list":
        names = manager.all_tasks
        print(f"Available tasks ({len(names)}):")
        print("\n".join(f"  {name}" for name in names))
    elif action == "groups":
        rows = [[n, _location(index.entries[n].path)] for n in manager.all_groups]
        print(markdown_table(["Group", "Config Location"], rows))
    elif action == "tags":
        print(
            markdown_table(
                ["Tag", "Tasks"], [[n, ", ".join(index.entries[n].tasks)] for n in manager.all_tags]
            )
        )
    else:
        rows = [
            [n, _location(index.entries[n].path), index.entries[n].output_type or "generate_until"]
            for n in manager.all_subtasks
        ]
        print(markdown_table(["Task", "Config Location", "Output Type"], rows))
    for dup in index.duplicates.values():
        print(f"warning: task name '{dup.name}' is defined in several files: {', '.join(dup.paths)}")
    return 0


def print_benchmarks(include_path: str | None) -> int:
    """The benchmark catalog (tasks with ``metadata.benchmark``) as a Markdown table."""
    from lmms_eval.tasks import TaskManager
    from lmms_eval.tasks.catalog import benchmark_rows, render_markdown

    print(render_markdown(benchmark_rows(TaskManager(include_path=include_path))), end="")
    return 0


def validate(include_path: str | None) -> int:
    """Fully load every task and group; report every broken file. Exit 1 if any is broken."""
    from lmms_eval.errors import LmmsEvalError
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=include_path, use_cache=False)
    index = manager.index
    problems: list[str] = [
        f"{b.path}: {b.error}" if not b.error.startswith(b.path) else b.error for b in index.broken
    ]
    for dup in index.duplicates.values():
        problems.append(f"duplicate task name '{dup.name}' in {' and '.join(dup.paths)}")
    checked = 0
    for name in index.names("task") + index.names("group") + index.names("python_task"):
        checked += 1
        if name in index.duplicates:
            continue  # already reported above
        try:
            manager._loader.load(name)
        except LmmsEvalError as exc:
            problems.append(str(exc))
        except Exception as exc:  # a utils.py that raises at import is a broken task too
            problems.append(f"{index.entries[name].path}: {type(exc).__name__}: {exc}")
    for problem in problems:
        print(f"error: {problem}")
    print(f"checked {checked} tasks and groups in {len(index.files)} YAML files: {len(problems)} problem(s)")
    return 1 if problems else 0
