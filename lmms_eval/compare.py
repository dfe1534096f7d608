"""Doc-by-doc comparison of two runs: ``lmms-eval compare A B`` and ``--baseline PATH``.

Both runs are read from their per-document samples (``{timestamp}_samples_{task}.jsonl``) through
:mod:`lmms_eval.results`; a run is a results folder (the one ``*_results.json`` inside, searched
recursively), one ``*_results.json`` (with the samples files of the same timestamp next to it), or
one or more samples files; a folder with several runs is an error that lists them. Per task and
``"<metric>,<filter>"`` key, documents are matched by ``doc_id``:

* a doc whose ``doc_hash`` differs between the runs is *mismatched* (the runs saw different content):
  it is reported and left out of the test;
* docs present in only one run are reported with their counts and first ids;
* the matched docs go through :func:`lmms_eval.stats.paired.paired_comparison` (``Diff = A - B``),
  with the clustered variant when the task has a ``cluster_key``.

The comparison is of per-document means. For a metric the task aggregates with something other than
a mean (e.g. perplexity), the note on its row says so.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_eval.errors import LmmsEvalError, did_you_mean
from lmms_eval.results.layout import find_runs, parse_name, run_of, sibling_results, task_name
from lmms_eval.results.samples import SampleRecord, read_samples
from lmms_eval.results.schema import ResultsFile
from lmms_eval.stats.estimates import DEFAULT_ALPHA
from lmms_eval.stats.paired import PairedResult, format_p_value, paired_comparison

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]

MAX_IDS = 10  # doc ids listed per category in reports


# ------------------------------------------------------------------------------------------------
# per-document scores of one run
# ------------------------------------------------------------------------------------------------


def _number(value: Any, score_key: str) -> float | None:
    """The number a per-document metric value stands for (``value[score_key]`` for dicts)."""
    if isinstance(value, Mapping):
        value = value.get(score_key)
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, (str, bytes)):
        try:
            value = value.item()  # numpy scalars
        except (TypeError, ValueError):
            return None
    if isinstance(value, (bool, int, float)):
        return float(value)
    return None


def _hashable(value: Any) -> Hashable:
    return value if isinstance(value, Hashable) else repr(value)


@dataclass
class TaskScores:
    """Per-document scores of one task: ``scores["<metric>,<filter>"][doc_id]`` (NaN: no number)."""

    name: str
    score_key: str = "score"
    cluster_key: str | None = None
    named: bool = True  # False when the name is only a file stem (paired by position, see compare_runs)
    aggregations: dict[str, str] = field(default_factory=dict)  # metric -> aggregation, from the config
    doc_hashes: dict[int, str] = field(default_factory=dict)
    clusters: dict[int, Hashable] = field(default_factory=dict)
    scores: dict[str, dict[int, float]] = field(default_factory=dict)
    duplicates: int = 0

    def add(
        self,
        doc_id: int,
        metric: str,
        filter_key: str,
        value: Any,
        doc_hash: str | None = None,
        cluster: Any = None,
    ) -> None:
        """One metric value of one doc (a number, or a dict holding ``score_key``)."""
        number = _number(value, self.score_key)
        column = self.scores.setdefault(f"{metric},{filter_key}", {})
        if doc_id in column:
            self.duplicates += 1  # keep the first line of a doc
            return
        column[doc_id] = math.nan if number is None else number
        if doc_hash and doc_id not in self.doc_hashes:
            self.doc_hashes[doc_id] = doc_hash
        if cluster is not None and doc_id not in self.clusters:
            self.clusters[doc_id] = _hashable(cluster)

    def add_record(self, record: SampleRecord | Mapping[str, Any]) -> None:
        """Every metric of one samples line (a record, or a dict in the samples-line layout)."""
        if not isinstance(record, SampleRecord):
            record = SampleRecord.from_dict(record)
        filter_key = "none" if record.filter is None else str(record.filter)
        scores = record.scores()  # not text or lists: a metric without a number (e.g. a parsed answer)
        cluster = record.cluster
        if cluster is None and self.cluster_key:
            cluster = next(
                (
                    v[self.cluster_key]
                    for v in scores.values()
                    if isinstance(v, Mapping) and self.cluster_key in v
                ),
                None,
            )
        doc_hash = str(record.doc_hash) if record.doc_hash else None
        for name, value in scores.items():
            self.add(record.doc_id, name, filter_key, value, doc_hash, cluster)

    def metric_keys(self) -> list[str]:
        """The ``"<metric>,<filter>"`` keys with at least one numeric value."""
        return [k for k, col in self.scores.items() if any(not math.isnan(v) for v in col.values())]

    def doc_ids(self) -> set[int]:
        return {doc_id for col in self.scores.values() for doc_id in col}


@dataclass
class RunScores:
    """Per-document scores of one run, by task name."""

    label: str
    tasks: dict[str, TaskScores] = field(default_factory=dict)
    results_file: str | None = None
    sample_files: list[str] = field(default_factory=list)
    model_name: str | None = None
    tasks_without_samples: list[str] = field(default_factory=list)
    model_args: str | None = None

    @classmethod
    def from_samples(
        cls,
        task_name: str,
        records: Iterable[Mapping[str, Any]],
        score_key: str = "score",
        cluster_key: str | None = None,
        label: str = "current run",
    ) -> RunScores:
        """Scores of one task from in-memory sample records (see :meth:`add_samples`)."""
        run = cls(label)
        run.add_samples(task_name, records, score_key, cluster_key)
        return run

    def add_samples(
        self,
        task_name: str,
        records: Iterable[Mapping[str, Any]],
        score_key: str = "score",
        cluster_key: str | None = None,
    ) -> TaskScores:
        """Add (or extend) a task from sample records: one per (doc, filter), as in the samples JSONL."""
        task = self.tasks.get(task_name)
        if task is None:
            task = self.tasks[task_name] = TaskScores(task_name, score_key, cluster_key)
        for record in records:
            task.add_record(record)
        return task


def _find_in_folder(folder: Path) -> tuple[ResultsFile | None, Path | None, list[Path]]:
    """The one run under ``folder`` whose results file holds results, and its samples (else the one
    set of samples files). Several candidates are an error that lists them: a comparison must never
    pick a run silently."""
    runs = find_runs(folder)
    complete: list[tuple[ResultsFile, Path, list[Path]]] = []
    for run in runs:
        if run.results is None:
            continue
        results = ResultsFile.load(run.results)
        if results.results:
            complete.append((results, run.results, run.sample_files()))
        else:
            logger.info("%s holds no results yet; skipped", run.results)
    if len(complete) > 1:
        _ambiguous(folder, [str(path) for _, path, _ in complete])
    if complete:
        results, path, samples = complete[0]
        if results.status not in (None, "completed"):
            logger.warning("%s: the run did not finish (status '%s')", path, results.status)
        return results, path, samples
    with_samples = [run for run in runs if run.samples]
    if not with_samples:
        raise LmmsEvalError(f"{folder}: no *_results.json or *_samples_*.jsonl files in this folder")
    if len(with_samples) > 1:
        _ambiguous(folder, [", ".join(map(str, run.sample_files())) for run in with_samples])
    return None, None, with_samples[0].sample_files()


def _ambiguous(folder: Path, candidates: Sequence[str]) -> None:
    listed = "".join(f"\n  {c}" for c in candidates)
    raise LmmsEvalError(
        f"{folder} holds {len(candidates)} runs; name the one to compare (a *_results.json file):{listed}"
    )


def _resolve(path: Path) -> tuple[ResultsFile | None, Path | None, list[Path]]:
    if not path.exists():
        raise LmmsEvalError(f"{path}: no such file or folder")
    if path.is_dir():
        return _find_in_folder(path)
    if path.name.endswith(".json"):
        return ResultsFile.load(path), path, run_of(path).sample_files()
    if path.name.endswith(".jsonl"):
        return None, None, [path]
    raise LmmsEvalError(f"{path}: expected a results folder, a *_results.json file or samples *.jsonl files")


def _aggregation_of(config: Mapping[str, Any], metric: str) -> str | None:
    for entry in config.get("metric_list") or []:
        if isinstance(entry, Mapping) and entry.get("metric") == metric:
            aggregation = entry.get("aggregation")
            if isinstance(aggregation, str):
                return aggregation
            break
    try:
        from lmms_eval.api.registry import get_metric

        return get_metric(metric).aggregation
    except LookupError:
        return None


def _task_from_file(sample_file: Path, results: ResultsFile | None) -> tuple[TaskScores, Mapping[str, Any]]:
    """An empty task named after the samples file, with its config from the results file."""
    parsed = parse_name(sample_file.name)
    configs = results.configs if results is not None else {}
    if parsed is not None and parsed.kind == "samples" and parsed.task is not None:
        known = [*configs, *(results.results if results is not None else {})]
        task = TaskScores(task_name(parsed.task, known))
    else:
        task = TaskScores(sample_file.stem, named=False)
    config = configs.get(task.name)
    if not isinstance(config, Mapping):
        return task, {}
    task.score_key = str(config.get("score_key") or "score")
    task.cluster_key = config.get("cluster_key") or None
    return task, config


def _read_samples(sample_file: Path, task: TaskScores, results: ResultsFile | None) -> None:
    """Add the records of one samples file (the published layout is detected from the results file)."""
    published = results.loaded_version is None if results is not None else None
    for record in read_samples(sample_file, published):
        task.add_record(record)


def _paths_of(
    path: PathLike | Sequence[PathLike],
) -> tuple[list[Path], ResultsFile | None, Path | None, list[Path]]:
    """The paths given, and the results file (loaded) and samples files they stand for."""
    paths = [Path(path)] if isinstance(path, (str, os.PathLike)) else [Path(p) for p in path]
    if not paths:
        raise LmmsEvalError("no run to load: give a results folder, results JSON or samples JSONL")
    if len(paths) == 1:
        return (paths, *_resolve(paths[0]))
    for p in paths:
        if not p.is_file() or not p.name.endswith(".jsonl"):
            raise LmmsEvalError(f"{p}: several paths must all be samples *.jsonl files")
    return paths, None, None, paths


def _model_args(results: ResultsFile | None) -> str | None:
    """The run's model arguments as one string (secrets were redacted when the file was written)."""
    if results is None or results.config is None:
        return None
    args = results.config.model_args
    if isinstance(args, Mapping):
        return ",".join(f"{k}={v}" for k, v in args.items()) or None
    return str(args) if args else None


def load_doc_scores(path: PathLike | Sequence[PathLike]) -> RunScores:
    """Per-document scores of a run: a results folder, a ``*_results.json`` or samples JSONL file(s).

    A folder is searched recursively for the ``*_results.json`` that holds results; when there are
    several, the error lists them (name one). Its samples files (same timestamp, same folder) are read. The task config in the results JSON gives each task's
    ``score_key`` (for dict-valued metrics) and ``cluster_key``. Files of every schema version load
    (:mod:`lmms_eval.results.versions`).
    """
    paths, results, results_file, sample_files = _paths_of(path)
    if results_file is not None and not sample_files:
        raise LmmsEvalError(
            f"{results_file}: no samples files next to it (the run needs --log_samples for a comparison)"
        )
    run = RunScores(
        label=str(paths[0]) if len(paths) == 1 else ", ".join(map(str, paths)),
        results_file=str(results_file) if results_file else None,
        sample_files=[str(p) for p in sample_files],
        model_name=results.model_name if results is not None else None,
        model_args=_model_args(results),
    )
    loaded: dict[Path, ResultsFile] = {results_file: results} if results_file and results else {}
    configs: dict[str, Mapping[str, Any]] = {}
    for sample_file in sample_files:
        sibling = sibling_results(sample_file)
        if sibling is not None and sibling not in loaded:
            loaded[sibling] = ResultsFile.load(sibling)
        own = loaded[sibling] if sibling is not None else results
        task, config = _task_from_file(sample_file, own)
        task = run.tasks.setdefault(task.name, task)
        configs.setdefault(task.name, config)
        _read_samples(sample_file, task, own)
        if task.duplicates:
            logger.warning("%s: %d repeated doc lines ignored", sample_file, task.duplicates)
    for name, task in run.tasks.items():
        for metric in {key.partition(",")[0] for key in task.scores}:
            aggregation = _aggregation_of(configs[name], metric) if configs[name] else None
            if aggregation:
                task.aggregations[metric] = aggregation
    if results is not None:
        run.tasks_without_samples = sorted(set(results.results) - set(run.tasks))
    logger.info(
        "loaded %s: %d task(s) from %d samples file(s)%s",
        paths[0],
        len(run.tasks),
        len(sample_files),
        f" ({results_file})" if results_file else "",
    )
    return run


# ------------------------------------------------------------------------------------------------
# comparing two runs
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocMatch:
    """How the docs of one task and metric key line up between run A and run B."""

    n_a: int
    n_b: int
    matched: int
    only_a: int
    only_b: int
    mismatched: int  # same doc_id, different doc_hash: left out of the test
    unverified: int  # matched on doc_id alone (a run has no doc_hash for the doc)
    only_a_ids: tuple[int, ...] = ()
    only_b_ids: tuple[int, ...] = ()
    mismatched_ids: tuple[int, ...] = ()

    @property
    def unmatched(self) -> int:
        return self.only_a + self.only_b

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_a": self.n_a,
            "n_b": self.n_b,
            "matched": self.matched,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "mismatched": self.mismatched,
            "unverified": self.unverified,
            "only_a_ids": list(self.only_a_ids),
            "only_b_ids": list(self.only_b_ids),
            "mismatched_ids": list(self.mismatched_ids),
        }


@dataclass(frozen=True)
class MetricComparison:
    """One task and ``"<metric>,<filter>"`` key: the paired result in display units and in metric units."""

    task: str
    metric: str
    filter: str
    unit: str  # "points" (both runs score in [0, 1]; shown x100) or "units" (the metric's own)
    scale: float
    result: PairedResult  # in display units (``raw.scaled(scale)``)
    raw: PairedResult  # in the metric's own units
    docs: DocMatch
    aggregation: str | None = None
    task_b: str | None = None  # B's task name when it differs (single tasks paired by position)

    @property
    def key(self) -> str:
        return f"{self.metric},{self.filter}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "task": self.task,
            "metric": self.metric,
            "filter": self.filter,
            "unit": self.unit,
            "scale": self.scale,
            "aggregation": self.aggregation,
        }
        if self.task_b is not None:
            out["task_b"] = self.task_b
        out.update(self.result.to_dict())
        out["raw"] = self.raw.to_dict()  # the metric's own units: fractions for scores in [0, 1]
        out["docs"] = self.docs.to_dict()
        return out


@dataclass(frozen=True)
class RunInfo:
    label: str
    results_file: str | None
    model_name: str | None
    sample_files: tuple[str, ...]
    model_args: str | None = None

    @classmethod
    def of(cls, run: RunScores) -> RunInfo:
        return cls(run.label, run.results_file, run.model_name, tuple(run.sample_files), run.model_args)

    def describe(self) -> str:
        """The run by file, model and model arguments."""
        where = self.results_file or self.label
        model = self.model_name or "unknown model"
        if self.model_args:
            model += f" ({self.model_args})"
        return f"{where} — {model}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "results_file": self.results_file,
            "model_name": self.model_name,
            "model_args": self.model_args,
            "sample_files": list(self.sample_files),
        }


@dataclass(frozen=True)
class ComparisonReport:
    """Every paired comparison of run A against run B, with what could not be compared."""

    a: RunInfo
    b: RunInfo
    alpha: float
    comparisons: tuple[MetricComparison, ...]
    tasks_only_a: tuple[str, ...] = ()
    tasks_only_b: tuple[str, ...] = ()
    metrics_only_a: dict[str, list[str]] = field(default_factory=dict)
    metrics_only_b: dict[str, list[str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "diff": "A - B",
            "alpha": self.alpha,
            "confidence": 1.0 - self.alpha,
            "comparisons": [c.to_dict() for c in self.comparisons],
            "tasks_only_a": list(self.tasks_only_a),
            "tasks_only_b": list(self.tasks_only_b),
            "metrics_only_a": self.metrics_only_a,
            "metrics_only_b": self.metrics_only_b,
            "notes": list(self.notes),
        }


def _is_mean(aggregation: str | None) -> bool:
    return aggregation is None or aggregation == "mean" or aggregation.endswith(".mean")


def _unit_of(*columns: Mapping[int, float]) -> tuple[str, float]:
    """Points (x100) when every score of both runs lies in [0, 1], else the metric's own units."""
    values = [v for col in columns for v in col.values() if not math.isnan(v)]
    if values and all(0.0 <= v <= 1.0 for v in values):
        return "points", 100.0
    return "units", 1.0


def _pair_metric(task_a: TaskScores, task_b: TaskScores, key: str, alpha: float) -> MetricComparison:
    col_a, col_b = task_a.scores[key], task_b.scores[key]
    common = sorted(set(col_a) & set(col_b))
    hashes_a, hashes_b = task_a.doc_hashes, task_b.doc_hashes
    mismatched = [i for i in common if i in hashes_a and i in hashes_b and hashes_a[i] != hashes_b[i]]
    bad = set(mismatched)
    matched = [i for i in common if i not in bad]
    only_a = sorted(set(col_a) - set(col_b))
    only_b = sorted(set(col_b) - set(col_a))
    docs = DocMatch(
        n_a=len(col_a),
        n_b=len(col_b),
        matched=len(matched),
        only_a=len(only_a),
        only_b=len(only_b),
        mismatched=len(mismatched),
        unverified=sum(1 for i in matched if i not in hashes_a or i not in hashes_b),
        only_a_ids=tuple(only_a[:MAX_IDS]),
        only_b_ids=tuple(only_b[:MAX_IDS]),
        mismatched_ids=tuple(mismatched[:MAX_IDS]),
    )
    clusters: list[Hashable] | None = None
    if task_a.clusters or task_b.clusters:  # A's cluster ids first; a doc without one is its own cluster
        clusters = [task_a.clusters.get(i, task_b.clusters.get(i, f"__doc_{i}")) for i in matched]
    raw = paired_comparison([col_a[i] for i in matched], [col_b[i] for i in matched], clusters, alpha)
    unit, scale = _unit_of(col_a, col_b)
    metric, _, filter_key = key.partition(",")
    return MetricComparison(
        task=task_a.name,
        metric=metric,
        filter=filter_key,
        unit=unit,
        scale=scale,
        result=raw.scaled(scale),
        raw=raw,
        docs=docs,
        aggregation=task_a.aggregations.get(metric) or task_b.aggregations.get(metric),
        task_b=task_b.name if task_b.name != task_a.name else None,
    )


def _task_pairs(
    a: RunScores, b: RunScores
) -> tuple[list[tuple[TaskScores, TaskScores]], list[str], list[str]]:
    """Tasks of A and B with the same name (file-safe names match too); single unnamed tasks by position."""
    b_by_safe = {name.replace("/", "__"): task for name, task in b.tasks.items()}
    pairs: list[tuple[TaskScores, TaskScores]] = []
    only_a: list[str] = []
    for name in sorted(a.tasks):
        other = b_by_safe.pop(name.replace("/", "__"), None)
        if other is None:
            only_a.append(name)
        else:
            pairs.append((a.tasks[name], other))
    only_b = sorted(t.name for t in b_by_safe.values())
    if not pairs and len(only_a) == 1 and len(only_b) == 1:
        task_a, task_b = a.tasks[only_a[0]], next(iter(b_by_safe.values()))
        if not (task_a.named and task_b.named):
            return [(task_a, task_b)], [], []
    return pairs, only_a, only_b


def _select(
    pairs: list[tuple[TaskScores, TaskScores]],
    tasks: Sequence[str] | None,
    a: RunScores,
    b: RunScores,
) -> list[tuple[TaskScores, TaskScores]]:
    if not tasks:
        return pairs
    known = set(a.tasks) | set(b.tasks)
    for name in tasks:
        if name not in known:
            raise LmmsEvalError(f"no task '{name}' in either run.{did_you_mean(name, known)}")
    wanted = set(tasks)
    return [(ta, tb) for ta, tb in pairs if ta.name in wanted or tb.name in wanted]


def _wanted_key(key: str, metrics: Sequence[str] | None) -> bool:
    return not metrics or key in metrics or key.partition(",")[0] in metrics


def _notes(comparisons: Sequence[MetricComparison], a: RunScores, b: RunScores) -> list[str]:
    notes: list[str] = []
    for c in comparisons:
        where = f"{c.task} {c.key}"
        if c.docs.mismatched:
            ids = ", ".join(map(str, c.docs.mismatched_ids)) + (
                ", ..." if c.docs.mismatched > MAX_IDS else ""
            )
            notes.append(
                f"{where}: {c.docs.mismatched} doc(s) with a different doc_hash left out (ids {ids})"
            )
        for side, count, shown in (
            ("A", c.docs.only_a, c.docs.only_a_ids),
            ("B", c.docs.only_b, c.docs.only_b_ids),
        ):
            if count:
                ids = ", ".join(map(str, shown)) + (", ..." if count > MAX_IDS else "")
                notes.append(f"{where}: {count} doc(s) only in {side} (ids {ids})")
        if c.docs.unverified:
            notes.append(f"{where}: {c.docs.unverified} doc(s) matched by doc_id only (no doc_hash)")
        if c.raw.n_dropped:
            notes.append(f"{where}: {c.raw.n_dropped} matched doc(s) without a score on one side left out")
        if not _is_mean(c.aggregation):
            notes.append(
                f"{where}: the task aggregates with '{c.aggregation}'; the test compares per-doc means"
            )
        if c.task_b is not None:
            notes.append(f"task '{c.task}' of A paired with task '{c.task_b}' of B (the only task of each)")
    for side, run in (("A", a), ("B", b)):
        if run.tasks_without_samples:
            notes.append(f"{side}: no samples file for {', '.join(run.tasks_without_samples)}")
    return list(dict.fromkeys(notes))


def _compare(
    a: RunScores,
    b: RunScores,
    alpha: float = DEFAULT_ALPHA,
    tasks: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
) -> ComparisonReport:
    pairs, tasks_only_a, tasks_only_b = _task_pairs(a, b)
    pairs = _select(pairs, tasks, a, b)
    comparisons: list[MetricComparison] = []
    metrics_only_a: dict[str, list[str]] = {}
    metrics_only_b: dict[str, list[str]] = {}
    for task_a, task_b in pairs:
        keys_a = {k for k in task_a.metric_keys() if _wanted_key(k, metrics)}
        keys_b = {k for k in task_b.metric_keys() if _wanted_key(k, metrics)}
        if keys_a - keys_b:
            metrics_only_a[task_a.name] = sorted(keys_a - keys_b)
        if keys_b - keys_a:
            metrics_only_b[task_b.name] = sorted(keys_b - keys_a)
        order = sorted(keys_a & keys_b, key=lambda k: (k.partition(",")[2], k.partition(",")[0]))
        comparisons.extend(_pair_metric(task_a, task_b, key, alpha) for key in order)
    return ComparisonReport(
        a=RunInfo.of(a),
        b=RunInfo.of(b),
        alpha=alpha,
        comparisons=tuple(comparisons),
        tasks_only_a=tuple(tasks_only_a),
        tasks_only_b=tuple(tasks_only_b),
        metrics_only_a=metrics_only_a,
        metrics_only_b=metrics_only_b,
        notes=tuple(_notes(comparisons, a, b)),
    )


def compare_runs(
    a: RunScores,
    b: RunScores,
    alpha: float = DEFAULT_ALPHA,
    tasks: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
) -> ComparisonReport:
    """Paired comparison (``Diff = A - B``) of every task and metric key the two runs share.

    ``tasks`` / ``metrics`` restrict it (a metric is a name or a ``"<metric>,<filter>"`` key). Raises
    :class:`LmmsEvalError` when nothing is left to compare.
    """
    if not 0.0 < alpha < 1.0:
        raise LmmsEvalError(f"alpha must be between 0 and 1 (exclusive), got {alpha}")
    if metrics:
        keys = {k for run in (a, b) for task in run.tasks.values() for k in task.metric_keys()}
        names = keys | {k.partition(",")[0] for k in keys}
        for name in metrics:
            if name not in names:
                raise LmmsEvalError(f"no metric '{name}' in either run.{did_you_mean(name, names)}")
    report = _compare(a, b, alpha, tasks, metrics)
    if not report.comparisons:
        names_a = ", ".join(sorted(a.tasks)) or "none"
        names_b = ", ".join(sorted(b.tasks)) or "none"
        what = "task and metric" + (" among those selected" if tasks or metrics else "")
        raise LmmsEvalError(
            f"nothing to compare: the runs have no {what} in common (A tasks: {names_a}; B tasks: {names_b})"
        )
    return report


# ------------------------------------------------------------------------------------------------
# the readable table
# ------------------------------------------------------------------------------------------------


def _num(value: float, unit: str, signed: bool = False) -> str:
    if math.isnan(value):
        return "N/A"
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    sign = "+" if signed else ""
    return f"{value:{sign}.2f}" if unit == "points" else f"{value:{sign}.4g}"


def _ci(low: float, high: float, unit: str) -> str:
    if math.isnan(low) or math.isnan(high):
        return "N/A"
    return f"[{_num(low, unit, True)}, {_num(high, unit, True)}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int) -> str:
    """Markdown table; the first ``left`` columns left-aligned, the rest right-aligned."""
    widths = [max([len(header[i]), *(len(r[i]) for r in rows)]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(("-" * (w + 1) + ":") if i >= left else "-" * (w + 2) for i, w in enumerate(widths))
        + "|"
    )
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


_TEST_NAMES = {"paired-t": "t", "mcnemar-exact": "McNemar", "cluster-sign-test": "sign", "none": "-"}


def _row(c: MetricComparison, clustered: bool) -> list[str]:
    r, u = c.result, c.unit
    flag = " !" if r.warnings else ""
    row = [
        c.task if c.task_b is None else f"{c.task} / {c.task_b}",
        c.key,
        "pts" if u == "points" else "units",
        str(r.n) + flag,
        _num(r.mean_a, u),
        _num(r.mean_b, u),
        _num(r.diff, u, True),
        _ci(r.ci_lower, r.ci_upper, u),
        format_p_value(r.p_value),
        _TEST_NAMES.get(r.test, r.test),
        _num(r.stderr, u),
    ]
    if clustered:
        cells = [str(r.n_clusters), _num(r.stderr_clustered, u)]
        cells += [_ci(r.ci_lower_clustered, r.ci_upper_clustered, u), format_p_value(r.p_value_clustered)]
        row += cells if r.clustered else ["", "", "", ""]
    return [*row, str(c.docs.matched), str(c.docs.unmatched), str(c.docs.mismatched)]


def format_comparison(report: ComparisonReport) -> str:
    """The report as text: a header naming A and B, one table row per task and metric, then notes."""
    level = f"{100 * (1 - report.alpha):g}%"
    clustered = any(c.raw.clustered for c in report.comparisons)
    header = ["Task", "Metric", "Unit", "n", "A", "B", "Diff", f"{level} CI", "p", "Test", "SE"]
    if clustered:
        header += ["Clusters", "SE (cl)", f"{level} CI (cl)", "p (cl)"]
    header += ["Matched", "Unmatched", "Mismatched"]
    rows = [_row(c, clustered) for c in report.comparisons]
    lines = [
        f"Paired comparison, Diff = A − B ({level} CI)",
        f"  A: {report.a.describe()}",
        f"  B: {report.b.describe()}",
        "  pts: percentage points (both runs score in [0, 1], shown ×100; the JSON also holds fractions);"
        " units: the metric's own units",
        "  Test: t = paired t-test; McNemar = exact test on the discordant pairs (0/1 scores, fewer than "
        "25 discordant); 0/1 scores get Newcombe's interval",
    ]
    if clustered:
        lines.append("  (cl): cluster-robust standard error (Miller 2024, eq. 4), df = clusters − 1")
    lines += ["", _table(header, rows, left=3) if rows else "(nothing compared)"]
    extra = [f"{c.task} {c.key}: {w}" for c in report.comparisons for w in c.result.warnings]
    extra += list(report.notes)
    if report.tasks_only_a:
        extra.append(f"tasks only in A: {', '.join(report.tasks_only_a)}")
    if report.tasks_only_b:
        extra.append(f"tasks only in B: {', '.join(report.tasks_only_b)}")
    for side, missing in (("A", report.metrics_only_a), ("B", report.metrics_only_b)):
        extra += [f"{task}: metrics only in {side}: {', '.join(keys)}" for task, keys in missing.items()]
    if extra:
        lines += ["", "Notes (! marks a row with a warning):", *(f"  - {note}" for note in extra)]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# --baseline during a run
# ------------------------------------------------------------------------------------------------


def _or_na(value: float) -> Any:
    return "N/A" if math.isnan(value) else value


def _log_baseline(c: MetricComparison, baseline: RunInfo) -> None:
    """One line per compared metric, in the units ``lmms-eval compare`` prints (points for [0, 1])."""
    r, u = c.result, c.unit
    logger.info(
        "%s %s against baseline %s: Diff %s %s %s, p = %s (%s), matched %d, unmatched %d, mismatched %d",
        c.task,
        c.key,
        baseline.describe(),
        _num(r.diff, u, True),
        "pts" if u == "points" else "units",
        _ci(r.ci_lower, r.ci_upper, u),
        format_p_value(r.p_value),
        _TEST_NAMES.get(r.test, r.test),
        c.docs.matched,
        c.docs.unmatched,
        c.docs.mismatched,
    )
    for warning in r.warnings:
        logger.warning("%s %s against baseline: %s", c.task, c.key, warning)


def baseline_comparison(
    current: RunScores, baseline: PathLike | RunScores, alpha: float = DEFAULT_ALPHA
) -> dict[str, dict[str, Any]]:
    """Keys to merge into each task's results entry: the current run against a baseline run.

    ``baseline`` is a path (as for :func:`load_doc_scores`) or already loaded scores (load once before
    the run: a missing file then fails before any model time is spent). Per compared
    ``"<metric>,<filter>"`` key, in the metric's own units (fractions for scores in [0, 1], as the value
    beside them; the log line of each comparison gives them in points, as ``lmms-eval compare`` does):
    ``<metric>_baseline`` (baseline mean over the matched docs), ``<metric>_diff`` (current − baseline),
    ``<metric>_diff_ci_lower`` / ``_diff_ci_upper``, ``<metric>_diff_pvalue``, ``<metric>_diff_n``, and
    with clusters ``<metric>_diff_stderr_clustered``, ``_diff_ci_lower_clustered``,
    ``_diff_ci_upper_clustered``, ``_diff_pvalue_clustered`` and ``<metric>_diff_n_clusters``. Per
    task also ``baseline_matched`` (docs compared), ``baseline_unmatched`` (docs in only one of the runs)
    and ``baseline_mismatched`` (same doc_id, different doc_hash); ``<metric>_diff_test`` and
    ``<metric>_diff_ci_method`` name the test and interval (McNemar / Newcombe for 0/1 scores). Unknown numbers are "N/A". Tasks the baseline lacks are left out.
    """
    base = baseline if isinstance(baseline, RunScores) else load_doc_scores(baseline)
    report = _compare(current, base, alpha)
    for note in report.notes:
        logger.warning("baseline %s: %s", base.label, note)
    if report.tasks_only_a:
        logger.warning("baseline %s has no samples for: %s", base.label, ", ".join(report.tasks_only_a))
    out: dict[str, dict[str, Any]] = {}
    for c in report.comparisons:
        _log_baseline(c, report.b)
        entry = out.setdefault(c.task, {})
        r, m, f = c.raw, c.metric, c.filter
        entry[f"{m}_diff_test,{f}"] = r.test
        entry[f"{m}_diff_ci_method,{f}"] = r.ci_method
        entry[f"{m}_baseline,{f}"] = _or_na(r.mean_b)
        entry[f"{m}_diff,{f}"] = _or_na(r.diff)
        entry[f"{m}_diff_ci_lower,{f}"] = _or_na(r.ci_lower)
        entry[f"{m}_diff_ci_upper,{f}"] = _or_na(r.ci_upper)
        entry[f"{m}_diff_pvalue,{f}"] = _or_na(r.p_value)
        entry[f"{m}_diff_n,{f}"] = r.n
        if r.clustered:
            entry[f"{m}_diff_stderr_clustered,{f}"] = _or_na(r.stderr_clustered)
            entry[f"{m}_diff_ci_lower_clustered,{f}"] = _or_na(r.ci_lower_clustered)
            entry[f"{m}_diff_ci_upper_clustered,{f}"] = _or_na(r.ci_upper_clustered)
            entry[f"{m}_diff_pvalue_clustered,{f}"] = _or_na(r.p_value_clustered)
            entry[f"{m}_diff_n_clusters,{f}"] = r.n_clusters
    tasks_b = {name.replace("/", "__"): t for name, t in base.tasks.items()}
    for name, entry in out.items():
        task_a = current.tasks[name]
        task_b = tasks_b.get(name.replace("/", "__")) or next(iter(base.tasks.values()))
        ids_a, ids_b = task_a.doc_ids(), task_b.doc_ids()
        common = ids_a & ids_b
        entry["baseline_unmatched"] = len(ids_a ^ ids_b)
        entry["baseline_matched"] = max(
            (c.docs.matched for c in report.comparisons if c.task == name), default=0
        )
        entry["baseline_mismatched"] = sum(
            1
            for i in common
            if i in task_a.doc_hashes
            and i in task_b.doc_hashes
            and task_a.doc_hashes[i] != task_b.doc_hashes[i]
        )
    return out
