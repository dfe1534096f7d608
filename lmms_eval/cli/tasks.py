"""``lmms-eval tasks [list|groups|tags|subtasks|benchmarks|validate|info]``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from lmms_eval.cli._format import markdown_table

if TYPE_CHECKING:
    from lmms_eval.tasks import TaskManager

ACTIONS = ("list", "groups", "tags", "subtasks", "benchmarks", "validate", "info")


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("tasks", help="list, inspect and validate tasks")
    parser.add_argument(
        "action", nargs="?", default="list", choices=ACTIONS, help="what to show (default: list)"
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="validate: the tasks or groups to check (default: all); info: the task(s) to describe",
    )
    parser.add_argument("--json", action="store_true", help="info: print JSON")
    parser.add_argument(
        "--include_path", "--include-path", dest="include_path", help="extra folder(s) of task YAMLs"
    )
    parser.add_argument(
        "--data",
        action="store_true",
        help="validate: also load each dataset and check its splits and the media paths of its first docs",
    )
    parser.add_argument(
        "--dataset_root",
        "--dataset-root",
        dest="dataset_root",
        metavar="DIR",
        help="validate --data: folder of local copies of Hub datasets (default: $LMMS_EVAL_DATASET_ROOT)",
    )
    parser.add_argument("--verbosity", default="WARNING", help="log level (default: WARNING)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lmms_eval.cli import configure_logging

    configure_logging(args.verbosity)
    if args.names and args.action not in ("validate", "info"):
        print(
            f"lmms-eval: error: tasks {args.action} takes no task names (validate and info do)",
            file=sys.stderr,
        )
        return 2
    if args.action == "validate":
        return validate(args.include_path, data=args.data, dataset_root=args.dataset_root, names=args.names)
    if args.action == "info":
        return print_info(args.names, args.include_path, as_json=args.json)
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


def print_info(names: list[str], include_path: str | None, as_json: bool = False) -> int:
    """What a local copy of each named task's dataset needs (:mod:`lmms_eval.tasks.local_copy`)."""
    import json

    from lmms_eval.api.group import ConfigurableGroup
    from lmms_eval.tasks import TaskManager
    from lmms_eval.tasks.local_copy import describe, render

    if not names:
        print(
            "lmms-eval: error: tasks info needs a task name, e.g. lmms-eval tasks info mme", file=sys.stderr
        )
        return 2
    manager = TaskManager(include_path=include_path)
    unknown = _unknown(manager, names)
    if unknown:
        print(f"lmms-eval: error: {unknown}", file=sys.stderr)
        return 2
    infos = []
    for name in names:
        loaded = manager._loader.load(name)
        for node in loaded if isinstance(loaded, list) else [loaded]:
            leaves = node.leaves() if isinstance(node, ConfigurableGroup) else [node]
            infos.extend(describe(task) for task in leaves)
    if as_json:
        dumped = [info.model_dump(mode="json") for info in infos]
        print(json.dumps(dumped[0] if len(dumped) == 1 else dumped, indent=2))
    else:
        print("\n\n".join(render(info) for info in infos))
    return 0


def _unknown(manager: TaskManager, names: list[str]) -> str | None:
    """The message for the first name that is no task, group or tag, or None."""
    from lmms_eval.errors import did_you_mean

    known = manager.index.entries
    for name in names:
        if name not in known:
            return (
                f"unknown task or group '{name}'.{did_you_mean(name, list(known))} See: lmms-eval tasks list"
            )
    return None


def validate(
    include_path: str | None,
    data: bool = False,
    dataset_root: str | None = None,
    names: list[str] | None = None,
) -> int:
    """Fully load the named tasks and groups (none named: every one; with ``include_path``: those
    defined in its folders) and run the pre-flight checks on each task (with ``data`` also loading
    its dataset and calling its ``doc_to_*`` functions on the first documents, media resolved under
    ``dataset_root`` as a run resolves them); print every problem and a summary. Exit 1 if there is
    any problem."""
    from lmms_eval.data.dataset_root import exported_root
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=include_path, use_cache=False)
    if names:
        unknown = _unknown(manager, names)
        if unknown:
            print(f"error: {unknown}")
            return 1
    with exported_root(dataset_root):
        return _validate(manager, include_path, data, dataset_root, names or [])


def _validate(
    manager: TaskManager, include_path: str | None, data: bool, dataset_root: str | None, named: list[str]
) -> int:
    index = manager.index
    mine = _under(include_path)
    problems: list[str] = []
    if not named:  # the whole tree: also the files that did not index
        problems += [
            f"{b.path}: {b.error}" if not b.error.startswith(b.path) else b.error for b in index.broken
        ]
        problems = [p for b, p in zip(index.broken, problems) if mine(b.path)]
    for dup in index.duplicates.values():
        if (dup.name in named) if named else any(mine(p) for p in dup.paths):
            problems.append(f"duplicate task name '{dup.name}' in {' and '.join(dup.paths)}")
    kinds = ("task", "group", "python_task")
    names = named or [n for kind in kinds for n in index.names(kind) if mine(index.entries[n].path)]
    files = {f for f in index.files if mine(f)} if not named else {index.entries[n].path for n in named}
    data_checked: set[str] = set()
    for name in names:
        if name not in index.duplicates:  # duplicates are reported above
            problems.extend(_validate_one(manager, name, data, dataset_root, data_checked))
    problems = list(dict.fromkeys(problems))
    for problem in problems:
        print(f"error: {problem}")
    print(f"checked {len(names)} tasks and groups in {len(files)} YAML files: {len(problems)} problem(s)")
    return 1 if problems else 0


def _under(include_path: str | None) -> Callable[[str | None], bool]:
    """Whether a file lies in one of the ``include_path`` folders (every file without one)."""
    if not include_path:
        return lambda path: True
    roots = [os.path.abspath(os.path.expanduser(p.strip())) for p in include_path.split(",") if p.strip()]

    def inside(path: str | None) -> bool:
        full = os.path.abspath(path) if path else ""
        return any(full == root or full.startswith(root + os.sep) for root in roots)

    return inside


def _validate_one(
    manager: TaskManager, name: str, data: bool, dataset_root: str | None, data_checked: set[str]
) -> list[str]:
    """The problems of one task or group: loading it, then the pre-flight checks of its tasks
    (the data of each task name once)."""
    from lmms_eval.api.group import ConfigurableGroup
    from lmms_eval.errors import LmmsEvalError
    from lmms_eval.preflight import check_config, check_data

    try:
        loaded = manager._loader.load(name)
    except LmmsEvalError as exc:
        return [str(exc)]
    except Exception as exc:  # a utils.py that raises at import is a broken task too
        return [f"{manager.index.entries[name].path}: {type(exc).__name__}: {exc}"]
    nodes = loaded if isinstance(loaded, list) else [loaded]
    problems: list[str] = []
    for node in nodes:
        for task in node.leaves() if isinstance(node, ConfigurableGroup) else [node]:
            found = check_config(task)
            if data and task.task_name not in data_checked:
                data_checked.add(task.task_name)
                task.configure(replace(task.options, dataset_root=dataset_root))
                found += check_data(task)
            problems.extend(str(p) for p in found)
    return problems
