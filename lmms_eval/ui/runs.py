"""The runs under the logs folder: every results file (and sets of samples files without one).

Runs are found with :func:`lmms_eval.results.find_runs` and read with
:class:`lmms_eval.results.ResultsFile`; a file is read again only when its size or modification time
changes, so polling the listing of a live run costs a ``stat`` per file. A run's id is its folder
relative to the logs folder and its stamp (``dummy/20261124_101500``); ids are looked up in the
listing, never turned into paths.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from lmms_eval.errors import LmmsEvalError
from lmms_eval.results.layout import RunFiles, find_runs, task_name
from lmms_eval.results.schema import ResultsFile, TaskResults
from lmms_eval.secrets import redact
from lmms_eval.ui.security import Refused

logger = logging.getLogger(__name__)


def number(value: Any) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


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

    def _read(self, path: Path) -> tuple[ResultsFile | None, str | None]:
        try:
            stat = path.stat()
        except OSError as exc:
            return None, f"{path.name}: cannot read ({exc.strerror or exc})"
        key = (stat.st_mtime, stat.st_size)
        cached = self._cache.get(path)
        if cached and cached[0] == key:
            return cached[1], cached[2]
        try:
            results, error = ResultsFile.load(path), None
        except LmmsEvalError as exc:  # a file being rewritten, or not a results file
            results, error = None, str(exc)
            logger.warning("results file unreadable: %s", exc)
        self._cache[path] = (key, results, error)
        return results, error

    def refresh(self) -> list[Run]:
        """Every run, newest first."""
        with self._lock:
            runs: dict[str, Run] = {}
            for files in find_runs(self.root) if self.root.is_dir() else []:
                folder = files.folder.relative_to(self.root).as_posix()
                run_id = files.stamp if folder == "." else f"{folder}/{files.stamp}"
                run = Run(run_id, files)
                if files.results is not None:
                    run.results, run.error = self._read(files.results)
                runs[run_id] = run
            self._runs = runs
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
