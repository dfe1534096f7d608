"""The leaderboard of many runs: ``lmms-eval leaderboard LOGS_DIR`` and the UI's leaderboard view.

Runs (models or checkpoints) by tasks; each cell holds the task's main metric (the first of its
``metric_list``) with its confidence interval as the results file records it, and each run the
mean of its cells. With a baseline run, every cell is compared with the baseline's doc by doc:
the paired test of ``lmms-eval compare`` (:func:`lmms_eval.compare.compare_runs`: paired t-test, or
exact McNemar for 0/1 scores, the clustered variant where the task has a ``cluster_key``), and the
p-values of all cells adjusted together (Holm by default, Benjamini-Hochberg on request); a cell is
marked where the adjusted p-value is below ``alpha``.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_eval.compare import ComparisonReport, RunScores, compare_runs, load_doc_scores
from lmms_eval.errors import LmmsEvalError, did_you_mean
from lmms_eval.results.layout import find_runs
from lmms_eval.results.schema import ResultsFile
from lmms_eval.stats.multiple import CORRECTIONS, Correction, adjust

logger = logging.getLogger(__name__)

DEFAULT_ALPHA = 0.05
FORMATS = ("md", "csv", "json")


@dataclass(frozen=True)
class BoardRun:
    """One run to rank: its id (folder under the logs folder and stamp), results and samples files."""

    id: str
    results: ResultsFile
    sample_files: tuple[Path, ...] = ()


@dataclass
class Cell:
    """One run's main metric on one task, and (with a baseline) its paired comparison."""

    metric: str
    filter: str
    value: float | None
    stderr: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None
    diff: float | None = None  # run - baseline, in the metric's units
    p_value: float | None = None
    p_adjusted: float | None = None
    significant: bool = False
    better: bool | None = None  # the significant difference is an improvement (higher_is_better)

    def to_dict(self) -> dict[str, Any]:
        return {k: _finite(v) if isinstance(v, float) else v for k, v in self.__dict__.items()}


@dataclass
class Row:
    id: str
    label: str
    model: str
    modality: list[str]
    training_run: str | None
    step: int | None
    cells: dict[str, Cell] = field(default_factory=dict)
    mean: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "cells"}
        return out | {"cells": {task: cell.to_dict() for task, cell in self.cells.items()}}


@dataclass
class Leaderboard:
    tasks: list[str]
    modalities: dict[str, str]  # task -> image | video | audio | text
    rows: list[Row]
    baseline: str | None = None
    alpha: float = DEFAULT_ALPHA
    correction: Correction = "holm"
    notes: list[str] = field(default_factory=list)
    tested: int = 0  # cells tested against the baseline: the family the correction adjusts over

    @property
    def correction_text(self) -> str:
        if self.baseline is None:
            return "no baseline: no tests"
        return (
            f"paired test of each cell against {self.baseline} (as lmms-eval compare); "
            f"p-values adjusted by {CORRECTIONS[self.correction]} over the {self.tested} cells tested; "
            f"marked where the adjusted p < {self.alpha:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "modalities": self.modalities,
            "baseline": self.baseline,
            "alpha": self.alpha,
            "correction": self.correction,
            "correction_text": self.correction_text,
            "rows": [r.to_dict() for r in self.rows],
            "notes": self.notes,
        }


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def modality_of(results: ResultsFile, task: str) -> str:
    """A task's modality: its config's ``metadata.modality``, else ``image`` when it shows the
    model visuals (``doc_to_visual``), else ``text``."""
    config = results.configs.get(task) or {}
    metadata = config.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("modality"), str):
        return str(metadata["modality"])
    return "image" if config.get("doc_to_visual") else "text"


def _label(results: ResultsFile, run_id: str) -> str:
    """How a run is named: ``<training run> @ step N``, else the checkpoint folder's name
    (``pretrained=``), else the folder the run was written under (``--output_path``), else the model."""
    training = results.training
    if training is not None and training.training_run is not None:
        step = training.step
        return f"{training.training_run} @ step {step}" if step is not None else training.training_run
    args = results.config.model_args if results.config else None
    if isinstance(args, str):
        pretrained = next((p.split("=", 1)[1] for p in args.split(",") if p.startswith("pretrained=")), None)
        if pretrained:
            return Path(pretrained.rstrip("/")).name or pretrained
    parts = run_id.split("/")
    return parts[0] if len(parts) >= 3 else results.model_name or run_id


def _cell(results: ResultsFile, task: str) -> Cell | None:
    entry = results.results.get(task) or results.groups.get(task)
    if entry is None:
        return None
    rows = entry.metrics()
    main = results.main_metric(task)
    row = next((r for r in rows if r.metric == main), rows[0] if rows else None)
    if row is None:
        return None
    return Cell(
        row.metric,
        row.filter,
        _finite(row.value),
        _finite(row.stderr),
        _finite(row.ci_lower),
        _finite(row.ci_upper),
    )


def _row(run: BoardRun) -> Row:
    results = run.results
    training = results.training
    cells = {task: cell for task in results.results if (cell := _cell(results, task)) is not None}
    values = [c.value for c in cells.values() if c.value is not None]
    return Row(
        id=run.id,
        label=_label(results, run.id),
        model=results.model_name or "unknown",
        modality=sorted({modality_of(results, t) for t in cells}),
        training_run=training.training_run if training else None,
        step=training.step if training else None,
        cells=cells,
        mean=sum(values) / len(values) if values else None,
    )


def _scores(run: BoardRun, notes: list[str]) -> RunScores | None:
    if not run.sample_files:
        notes.append(f"{run.id}: no samples files; not tested against the baseline")
        return None
    try:
        return load_doc_scores(list(run.sample_files))
    except LmmsEvalError as exc:
        notes.append(f"{run.id}: not tested ({exc})")
        return None


def _compare(row: Row, scores: RunScores, base: RunScores, alpha: float, notes: list[str]) -> None:
    try:
        report: ComparisonReport = compare_runs(scores, base, alpha=alpha)
    except LmmsEvalError as exc:
        notes.append(f"{row.id}: not tested ({exc})")
        return
    for comparison in report.comparisons:
        cell = row.cells.get(comparison.task)
        if cell is None or (comparison.metric, comparison.filter) != (cell.metric, cell.filter):
            continue
        raw = comparison.raw
        clustered = raw.n_clusters is not None and math.isfinite(raw.p_value_clustered)
        cell.diff = _finite(raw.diff)
        cell.p_value = _finite(raw.p_value_clustered if clustered else raw.p_value)


def _mark(board: Leaderboard, higher: dict[str, bool]) -> None:
    cells = [
        c for r in board.rows if r.id != board.baseline for c in r.cells.values() if c.p_value is not None
    ]
    p_values = [c.p_value for c in cells if c.p_value is not None]
    board.tested = len(p_values)
    for cell, adjusted in zip(cells, adjust(p_values, board.correction), strict=True):
        cell.p_adjusted = _finite(adjusted)
        cell.significant = adjusted < board.alpha
        if cell.significant and cell.diff is not None:
            cell.better = (cell.diff > 0) == higher.get(cell.metric, True)


def _resolve(baseline: str | None, ids: Sequence[str]) -> str | None:
    """A run id, or the one run under a folder (``logs/b`` -> ``b/dummy/20261124_101500``)."""
    if baseline is None or baseline in ids:
        return baseline
    under = [i for i in ids if i.startswith(baseline.strip("/") + "/")]
    if len(under) > 1:
        raise LmmsEvalError(f"baseline: '{baseline}' holds {len(under)} runs; name one: {', '.join(under)}")
    return under[0] if under else baseline


def build_leaderboard(
    runs: Sequence[BoardRun],
    baseline: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    correction: Correction = "holm",
) -> Leaderboard:
    """The leaderboard of ``runs``, best mean first; with ``baseline`` (a run id, or a folder holding
    one run), each cell is tested against it (see the module docstring). An unknown baseline is a
    one-line error."""
    if not 0.0 < alpha < 1.0:
        raise LmmsEvalError(f"alpha must be between 0 and 1 (exclusive), got {alpha}")
    if correction not in CORRECTIONS:
        raise LmmsEvalError(f"correction must be one of {', '.join(CORRECTIONS)}, got '{correction}'")
    ids = [r.id for r in runs]
    baseline = _resolve(baseline, ids)
    if baseline is not None and baseline not in ids:
        raise LmmsEvalError(
            f"baseline: no run '{baseline}'.{did_you_mean(baseline, ids)} Runs: {', '.join(ids) or 'none'}"
        )
    rows = sorted((_row(r) for r in runs), key=lambda r: (r.mean is None, -(r.mean or 0.0), r.id))
    tasks = sorted({t for r in rows for t in r.cells})
    modalities: dict[str, str] = {}
    higher: dict[str, bool] = {}
    for run in runs:
        for task in run.results.results:
            modalities.setdefault(task, modality_of(run.results, task))
            for metric, flag in (run.results.higher_is_better.get(task) or {}).items():
                if flag is not None:
                    higher.setdefault(metric, bool(flag))
    board = Leaderboard(tasks, modalities, rows, baseline, alpha, correction)
    if baseline is not None:
        by_id = {r.id: r for r in runs}
        base = _scores(by_id[baseline], board.notes)
        for row in rows:
            if base is not None and row.id != baseline and (scores := _scores(by_id[row.id], board.notes)):
                _compare(row, scores, base, alpha, board.notes)
        _mark(board, higher)
    return board


def runs_under(folder: str | Path) -> tuple[list[BoardRun], list[str]]:
    """Every run with a results file under ``folder`` (ids: folder relative to it / stamp), and
    notes on the results files that could not be read."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise LmmsEvalError(f"{root}: no such folder of runs")
    runs: list[BoardRun] = []
    notes: list[str] = []
    for found in find_runs(root):
        if found.results is None:
            continue
        relative = found.folder.resolve().relative_to(root.resolve()).as_posix()
        run_id = found.stamp if relative == "." else f"{relative}/{found.stamp}"
        try:
            results = ResultsFile.load(found.results)
        except LmmsEvalError as exc:
            notes.append(f"skipped: {exc}")
            continue
        runs.append(BoardRun(run_id, results, tuple(found.sample_files())))
    return runs, notes


# -- output ----------------------------------------------------------------------------------------


def _number(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def cell_text(cell: Cell | None) -> str:
    """``0.6500 [0.41, 0.85]`` with ``▲`` / ``▼`` where it differs significantly from the baseline."""
    if cell is None or cell.value is None:
        return "–"
    text = _number(cell.value)
    if cell.ci_lower is not None and cell.ci_upper is not None:
        text += f" [{_number(cell.ci_lower, 2)}, {_number(cell.ci_upper, 2)}]"
    if cell.significant:
        text += " ▲" if cell.better else " ▼"
    return text


def to_markdown(board: Leaderboard) -> str:
    head = ["Run", "Model", *board.tasks, "Mean"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in board.rows:
        name = row.label + (" (baseline)" if row.id == board.baseline else "")
        cells = [cell_text(row.cells.get(t)) for t in board.tasks]
        mean = _number(row.mean) + (
            f" ({len(row.cells)}/{len(board.tasks)} tasks)" if len(row.cells) < len(board.tasks) else ""
        )
        lines.append("| " + " | ".join([f"{name} `{row.id}`", row.model, *cells, mean]) + " |")
    metrics = sorted({f"{t}: {c.metric}" for r in board.rows for t, c in r.cells.items()})
    lines += [
        "",
        f"Main metric per task, 95% CI in brackets: {'; '.join(metrics)}. Mean: over the run's own tasks.",
    ]
    if board.baseline is not None:
        lines.append(f"▲ / ▼: better / worse than the baseline; {board.correction_text}.")
    lines += [f"- {note}" for note in board.notes]
    return "\n".join(lines) + "\n"


def to_csv(board: Leaderboard) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    per_task = ("value", "ci_lower", "ci_upper", "p_adjusted", "significant")
    writer.writerow(["run", "label", "model", *[f"{t}:{k}" for t in board.tasks for k in per_task], "mean"])
    for row in board.rows:
        values: list[Any] = [row.id, row.label, row.model]
        for task in board.tasks:
            cell = row.cells.get(task)
            values += [_number(getattr(cell, k)) for k in per_task[:-1]] if cell else [""] * 4
            values.append(
                ("yes" if cell.significant else "no") if cell and cell.p_adjusted is not None else ""
            )
        writer.writerow([*values, _number(row.mean)])
    return out.getvalue()
