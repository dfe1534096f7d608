"""The one place that knows the names and layout of output files.

A run writes into ``{output_path}/{model_name_sanitized}/``:

* ``{stamp}_results.json``: the results file (:class:`~lmms_eval.results.schema.ResultsFile`);
* ``{stamp}_samples_{task}.jsonl``: one per task with ``--log_samples``
  (:class:`~lmms_eval.results.samples.SampleRecord` lines); a ``/`` in a task name is written
  ``__``.

``stamp`` is the run's start time in UTC, ``YYYYMMDD_HHMMSS``, followed by ``_2``, ``_3``... when
another run in the same folder started in the same second (published files may carry fractions of
a second, ``YYYYMMDD_HHMMSS.ffffff``). The files of one run are those with the same stamp in the
same folder; :func:`find_runs` lists them newest first, including sets of samples files without a
results file (a run killed before its first task ended, or samples copied alone).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

RESULTS_SUFFIX = "_results.json"
SAMPLES_MARK = "_samples_"
SAMPLES_SUFFIX = ".jsonl"
_STAMP_RE = re.compile(r"^(?P<stamp>\d{8}_\d{6}(?:\.\d+)?)(?:_(?P<n>\d+))?$")

PathLike = str | os.PathLike[str]


def file_safe(task: str) -> str:
    """A task name as it appears in file names (``/`` becomes ``__``)."""
    return task.replace("/", "__")


def results_file_name(stamp: str) -> str:
    return f"{stamp}{RESULTS_SUFFIX}"


def samples_file_name(stamp: str, task: str) -> str:
    return f"{stamp}{SAMPLES_MARK}{file_safe(task)}{SAMPLES_SUFFIX}"


@dataclass(frozen=True)
class OutputName:
    """What a file name says: results or samples, the run's stamp, the (file-safe) task name."""

    kind: Literal["results", "samples"]
    stamp: str
    task: str | None = None


def parse_name(name: str) -> OutputName | None:
    """The parts of an output file name (a base name), or ``None`` for any other file."""
    if name.endswith(RESULTS_SUFFIX):
        return OutputName("results", name[: -len(RESULTS_SUFFIX)])
    if SAMPLES_MARK in name and name.endswith(SAMPLES_SUFFIX):
        stamp, _, task = name[: -len(SAMPLES_SUFFIX)].partition(SAMPLES_MARK)
        return OutputName("samples", stamp, task)
    return None


def stamp_order(stamp: str) -> tuple[str, int]:
    """Sort key of a stamp: the time, then the ``_2``, ``_3`` suffix (a plain stamp counts as 1)."""
    match = _STAMP_RE.match(stamp)
    return (match["stamp"], int(match["n"] or 1)) if match else ("", 0)


def taken_stamps(directory: PathLike) -> set[str]:
    """Stamps of the output files already in ``directory``."""
    names = (parse_name(name) for name in os.listdir(directory))
    return {parsed.stamp for parsed in names if parsed is not None}


@dataclass
class RunFiles:
    """The output files of one run: same folder, same stamp."""

    folder: Path
    stamp: str
    results: Path | None = None
    samples: dict[str, Path] = field(default_factory=dict)  # file-safe task name -> file

    def sample_files(self) -> list[Path]:
        return sorted(self.samples.values())

    def samples_for(self, task: str) -> Path | None:
        """The samples file of ``task`` (its real name or the file-safe one)."""
        return self.samples.get(file_safe(task))

    def newness(self) -> tuple[str, int, float]:
        """Sort key: the stamp, then the newest modification time among the files."""
        files = [p for p in [self.results, *self.samples.values()] if p is not None]
        mtime = max((_mtime(p) for p in files), default=0.0)
        return (*stamp_order(self.stamp), mtime)


def task_name(safe: str, known: Iterable[str]) -> str:
    """The task name a file-safe name stands for, among ``known`` names (else the name as it is)."""
    return next((name for name in known if file_safe(name) == safe), safe)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def collect_runs(paths: Iterable[Path]) -> list[RunFiles]:
    """The runs the output files among ``paths`` make up (other files are left out), newest first."""
    runs: dict[tuple[Path, str], RunFiles] = {}
    for path in paths:
        parsed = parse_name(path.name)
        if parsed is None:
            continue
        run = runs.setdefault((path.parent, parsed.stamp), RunFiles(path.parent, parsed.stamp))
        if parsed.kind == "results":
            run.results = path
        else:
            run.samples[parsed.task or ""] = path
    return sorted(runs.values(), key=RunFiles.newness, reverse=True)


def _walk(folder: Path, recursive: bool) -> Iterable[Path]:
    if not recursive:
        return (p for p in folder.iterdir() if p.is_file())
    return (Path(root) / name for root, _, names in os.walk(folder) for name in names)


def find_runs(folder: PathLike, recursive: bool = True) -> list[RunFiles]:
    """Every run under ``folder`` (searched recursively), newest first."""
    return collect_runs(_walk(Path(folder), recursive))


def run_of(path: PathLike) -> RunFiles:
    """The run a results or samples file belongs to (its siblings with the same stamp)."""
    path = Path(path)
    parsed = parse_name(path.name)
    if parsed is None:
        return RunFiles(path.parent, "", samples={path.stem: path} if path.suffix == ".jsonl" else {})
    siblings = (p for p in path.parent.iterdir() if p.name.startswith(parsed.stamp))
    runs = [run for run in collect_runs(siblings) if run.stamp == parsed.stamp]
    return runs[0] if runs else RunFiles(path.parent, parsed.stamp)


def sibling_results(sample_file: PathLike) -> Path | None:
    """The results file of the run a samples file belongs to, if it is there."""
    path = Path(sample_file)
    parsed = parse_name(path.name)
    if parsed is None or parsed.kind != "samples":
        return None
    candidate = path.parent / results_file_name(parsed.stamp)
    return candidate if candidate.is_file() else None


def latest_samples(paths: Iterable[Path]) -> dict[str, Path]:
    """``{file-safe task: samples file}``, the newest file of each task among ``paths``.

    Files whose names are not samples file names are left out.
    """
    newest: dict[str, tuple[tuple[str, int, float], Path]] = {}
    for path in paths:
        parsed = parse_name(path.name)
        if parsed is None or parsed.kind != "samples" or parsed.task is None:
            continue
        key = (*stamp_order(parsed.stamp), _mtime(path))
        if parsed.task not in newest or key >= newest[parsed.task][0]:
            newest[parsed.task] = (key, path)
    return {task: path for task, (_, path) in sorted(newest.items())}


def samples_files_under(folder: PathLike) -> list[Path]:
    """Every samples file under ``folder``, searched recursively."""
    return sorted(
        p for p in _walk(Path(folder), True) if (parsed := parse_name(p.name)) and parsed.kind == "samples"
    )
