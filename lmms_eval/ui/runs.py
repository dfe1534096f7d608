"""The runs under the logs folder: every results file (and sets of samples files without one).

The logs folder is searched (:func:`scan_logs`) to :data:`MAX_DEPTH` folders deep, and its output
files are grouped into runs with :func:`lmms_eval.results.layout.collect_runs`; results files are
read with :func:`read_json` and :class:`lmms_eval.results.ResultsFile`. A file is read again only
when its size or modification time changes, so polling the listing of a live run costs a ``stat``
per file. A run's id is its folder relative to the logs folder and its stamp
(``dummy/20261124_101500``); ids are looked up in the listing, never turned into paths.

Any file may lie in the logs folder: only regular files are opened (a FIFO, device or socket is
never opened, so it cannot block), results files over :data:`MAX_RESULTS_BYTES` or nested deeper
than :data:`MAX_JSON_DEPTH`, binary, non-UTF-8 or truncated ones are skipped, each with a note
(:attr:`RunIndex.skipped`, shown under the runs list).
"""

from __future__ import annotations

import json
import logging
import math
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

from lmms_eval.errors import LmmsEvalError
from lmms_eval.results.layout import RunFiles, collect_runs, parse_name, task_name
from lmms_eval.results.schema import ResultsFile, TaskResults
from lmms_eval.secrets import redact
from lmms_eval.ui.security import Refused

logger = logging.getLogger(__name__)

MAX_DEPTH = 32  # folders below the logs folder that are searched for runs
MAX_RESULTS_BYTES = 64 * 1024 * 1024  # a results file above this is skipped
MAX_JSON_DEPTH = 64  # a results file or samples line nested deeper is skipped


def number(value: Any) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "folder" if stat.S_ISDIR(mode) else "special file"


def open_regular(path: Path, limit: int | None = None) -> IO[bytes]:
    """``path`` opened for reading, refused (:class:`Refused` 422, one line) unless it is a regular
    file (links followed) of at most ``limit`` bytes. A FIFO or device is never opened for good: the
    kind is checked before opening and again on the open file, opened without blocking."""
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise Refused(422, f"{path.name}: not a regular file ({_kind(mode)}); skipped")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise Refused(422, f"{path.name}: cannot read ({reason})") from None
    handle = os.fdopen(fd, "rb")
    opened = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(opened.st_mode):
        problem = f"not a regular file ({_kind(opened.st_mode)}); skipped"
    elif limit is not None and opened.st_size > limit:
        problem = f"{opened.st_size} bytes, over the limit of {limit}; skipped"
    if problem:
        handle.close()
        raise Refused(422, f"{path.name}: {problem}")
    return handle


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether parsed JSON nests lists and objects more than ``limit`` levels (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_json(text: bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """JSON from UTF-8 bytes; ``ValueError`` (one line) for binary, non-UTF-8, truncated or too deep text."""
    try:
        data = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not JSON or truncated ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise ValueError(f"nested deeper than {limit} levels") from None
    # counting brackets first keeps the walk off the (usual) shallow texts
    if text.count(b"[") + text.count(b"{") > limit and too_deep(data, limit):
        raise ValueError(f"nested deeper than {limit} levels")
    return data


def read_json(path: Path, limit: int = MAX_RESULTS_BYTES) -> Any:
    """A JSON file of the logs folder, refused (:class:`Refused` 422, one line naming the file) unless
    it is a regular file of at most ``limit`` bytes holding UTF-8 JSON at most :data:`MAX_JSON_DEPTH` deep."""
    with open_regular(path, limit) as handle:
        text = handle.read(limit + 1)
    try:
        return parse_json(text)
    except ValueError as exc:
        raise Refused(422, f"{path.name}: {exc}") from None


def note(root: Path, path: Path, reason: str) -> dict[str, str]:
    """One skipped file of the listing: its path under ``root`` and why."""
    try:
        shown = path.relative_to(root).as_posix()
    except ValueError:
        shown = path.name
    return {"path": shown, "reason": reason}


def scan_logs(root: Path, max_depth: int = MAX_DEPTH) -> tuple[list[Path], list[dict[str, str]]]:
    """The output files (results and samples files, regular files only) under ``root``, searched
    ``max_depth`` folders deep without following folder links, and notes on what was skipped."""
    files: list[Path] = []
    skipped: list[dict[str, str]] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(note(root, folder, f"cannot list this folder ({exc.strerror or exc})"))
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if depth < max_depth:
                    stack.append((path, depth + 1))
                else:
                    skipped.append(note(root, path, f"more than {max_depth} folders deep; not searched"))
            elif parse_name(entry.name) is not None:
                try:
                    mode = entry.stat().st_mode  # follows a link
                except OSError as exc:
                    skipped.append(note(root, path, f"cannot read ({exc.strerror or exc})"))
                    continue
                if stat.S_ISREG(mode):
                    files.append(path)
                else:
                    skipped.append(note(root, path, f"not a regular file ({_kind(mode)}); skipped"))
    return files, skipped


@dataclass
class Run:
    """One run: its files and its results file as read (``error`` when it could not be read)."""

    id: str
    files: RunFiles
    results: ResultsFile | None = None
    error: str | None = None

    def tasks(self) -> list[str]:
        """Task names: those of the results file, else those of the samples files."""
        known = list(self.results.results) if self.results else []
        named = [task_name(safe, known) for safe in self.files.samples]
        return known + [n for n in named if n not in known]

    def samples_file(self, task: str) -> Path:
        path = self.files.samples_for(task)
        if path is None:
            raise Refused(
                404,
                f"run '{self.id}' has no samples file for task '{task}'; it has: {', '.join(self.files.samples) or 'none'}",
            )
        return path

    def main_metric(self, task: str) -> str | None:
        """The task's first metric in its config's ``metric_list``, else its first aggregated metric."""
        if self.results is None:
            return None
        config = self.results.configs.get(task) or {}
        listed = config.get("metric_list")
        if isinstance(listed, list) and listed and isinstance(listed[0], dict) and listed[0].get("metric"):
            return str(listed[0]["metric"])
        entry = self.results.results.get(task)
        rows = entry.metrics() if entry else []
        return rows[0].metric if rows else None


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_unset=True, mode="json")


def metric_rows(entry: TaskResults) -> list[dict[str, Any]]:
    return [
        {
            "metric": row.metric,
            "filter": row.filter,
            "value": number(row.value),
            "stderr": number(row.stderr),
            "ci_lower": number(row.ci_lower),
            "ci_upper": number(row.ci_upper),
        }
        for row in entry.metrics()
    ]


class RunIndex:
    """The runs under ``root``, refreshed on each listing; results files cached by (mtime, size)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._runs: dict[str, Run] = {}
        self._cache: dict[Path, tuple[tuple[float, int], ResultsFile | None, str | None]] = {}
        self._lock = threading.Lock()
        self.skipped: list[dict[str, str]] = []  # files of the last listing that could not be read

    def _read(self, path: Path) -> tuple[ResultsFile | None, str | None]:
        try:
            info = path.stat()
        except OSError as exc:
            return None, f"{path.name}: cannot read ({exc.strerror or exc})"
        key = (info.st_mtime, info.st_size)
        cached = self._cache.get(path)
        if cached and cached[0] == key:
            return cached[1], cached[2]
        results, error = None, None
        try:
            data = read_json(path)
            if not isinstance(data, dict):
                raise LmmsEvalError(f"{path.name}: not a results file (expected a JSON object)")
            results = ResultsFile.from_dict(data, path.name)
        except Refused as exc:
            error = exc.message
        # a file being rewritten, or not a results file; whatever it holds, the listing goes on
        except (LmmsEvalError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            error = str(exc)[:500] or type(exc).__name__
        if error:
            logger.warning("results file unreadable: %s", error)
        self._cache[path] = (key, results, error)
        return results, error

    def refresh(self) -> list[Run]:
        """Every run, newest first; what could not be read is noted in :attr:`skipped`."""
        with self._lock:
            runs: dict[str, Run] = {}
            files, skipped = scan_logs(self.root) if self.root.is_dir() else ([], [])
            for found in collect_runs(files):
                folder = found.folder.relative_to(self.root).as_posix()
                run_id = found.stamp if folder == "." else f"{folder}/{found.stamp}"
                run = Run(run_id, found)
                if found.results is not None:
                    run.results, run.error = self._read(found.results)
                    if run.error:
                        skipped.append(note(self.root, found.results, run.error))
                runs[run_id] = run
            self._runs = runs
            self.skipped = skipped
            return list(runs.values())

    def get(self, run_id: str) -> Run:
        run = self._runs.get(run_id)
        if run is None:
            run = next((r for r in self.refresh() if r.id == run_id), None)
        if run is None:
            raise Refused(404, f"no run '{run_id}' under the logs folder {self.root}")
        return run


def summary(run: Run) -> dict[str, Any]:
    """One line of the runs list: model, tasks, date, status and the main score of each task."""
    results = run.results
    scores = []
    for task in run.tasks():
        entry = results.results.get(task) if results else None
        rows = metric_rows(entry) if entry else []
        main = run.main_metric(task)
        row = next((r for r in rows if r["metric"] == main), rows[0] if rows else None)
        if row is not None:
            scores.append({"task": task, **row})
    status = (results.status if results else None) or ("unreadable" if run.error else "no results file")
    return {
        "id": run.id,
        "model": (results.model_name if results else None) or run.files.folder.name,
        "tasks": run.tasks(),
        "date": (results.start_time if results else None) or run.files.stamp,
        "stamp": run.files.stamp,
        "status": status,
        "duration_s": number(results.total_evaluation_time_seconds) if results else None,
        "n_samples": sum((n.effective or 0) for n in results.n_samples.values()) if results else None,
        "scores": scores,
        "samples": sorted(run.files.samples),
        "error": run.error,
    }


def detail(run: Run) -> dict[str, Any]:
    """Everything the run view shows: per-task metrics, groups, config, versions, usage, failures."""
    out = summary(run)
    results = run.results
    if results is None:
        return out
    tasks = {}
    for name, entry in results.tasks():
        n = results.n_samples.get(name)
        tasks[name] = {
            "group": name in results.groups,
            "alias": entry.alias,
            "main_metric": run.main_metric(name),
            "metrics": metric_rows(entry),
            "samples": entry.samples,
            "failed": entry.failed,
            "n_samples": _dump(n) if n else None,
            "higher_is_better": results.higher_is_better.get(name),
            "has_samples": run.files.samples_for(name) is not None,
        }
    out.update(
        {
            "task_results": tasks,
            "group_subtasks": results.group_subtasks,
            "config": redact(_dump(results.config)) if results.config else None,
            "versions": {
                "lmms_eval": results.lmms_eval_version,
                "git_hash": results.git_hash,
                "git_branch": results.git_branch,
                "schema": results.loaded_version,
                "tasks": results.versions,
            },
            "throughput": redact(results.throughput),
            "timings": results.timings,
            "usage": redact(_dump(results.usage)) if results.usage else None,
            "failures": {t: _dump(f) for t, f in results.failures.items()},
            "start_time": results.start_time,
            "end_time": results.end_time,
        }
    )
    return out
