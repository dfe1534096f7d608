"""Filter and scoring stages: raw responses -> filtered responses -> per-document metric values.

Also builds the per-sample records written to ``samples_<task>.jsonl``.
"""

from __future__ import annotations

import logging
import weakref
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from lmms_eval.aggregation import TaskResult
from lmms_eval.api.instance import Instance
from lmms_eval.api.reasoning import strip_reasoning_tags
from lmms_eval.api.scoring import score_generation_docs
from lmms_eval.api.task import UNBUILT, ConfigurableTask, DocFailure, raise_if_every_doc_failed
from lmms_eval.errors import LmmsEvalError
from lmms_eval.results.docs import DocRecorder
from lmms_eval.results.samples import SampleRecord

logger = logging.getLogger(__name__)

SampleSink = Callable[[str, SampleRecord], None]


def group_by_doc(requests: Sequence[Instance]) -> dict[int, list[Instance]]:
    by_doc: dict[int, list[Instance]] = defaultdict(list)
    for request in requests:
        by_doc[request.doc_id].append(request)
    for items in by_doc.values():
        if len(items) > 1:
            items.sort(key=_request_index)
    return dict(sorted(by_doc.items()))


def _request_index(request: Instance) -> int:
    return request.idx


def apply_filters(
    task: ConfigurableTask,
    requests: Sequence[Instance],
    reasoning_tags: list[tuple[str, str]] | None,
) -> None:
    """Strip reasoning blocks (if enabled) and run every filter ensemble of the task.

    Filters receive, for each instance, the doc that instance belongs to. Instances of documents
    with a failed request are left out: those documents are not scored.
    """
    failed = failed_doc_ids(requests)
    requests = [r for r in requests if r.doc_id not in failed]
    tags = reasoning_tags
    if task.config.reasoning_tags is not None:
        from lmms_eval.api.reasoning import parse_reasoning_tags_config

        tags = parse_reasoning_tags_config(task.config.reasoning_tags)
    elif tags is None and task.config.auto_strip_thinking:
        from lmms_eval.api.reasoning import DEFAULT_REASONING_TAGS

        tags = list(DEFAULT_REASONING_TAGS)
    generative = task.config.output_type not in ("loglikelihood", "multiple_choice")

    def clean(response: Any) -> Any:
        if not (generative and isinstance(response, str)):
            return response
        return strip_reasoning_tags(response, tags) if tags is not None else response.strip()

    responses = [[clean(r) for r in req.resps] for req in requests]
    docs = task.scoring_docs
    instance_docs = [docs[req.doc_id] for req in requests]
    repeats = max((len(r) for r in responses), default=1)
    for ensemble in task.filters:
        ensemble.apply(requests, instance_docs, responses)
        if repeats > 1:  # each sample on its own, for the repeated-sampling metrics
            per_repeat = [
                ensemble.run([[resp[r]] if r < len(resp) else [] for resp in responses], instance_docs)
                for r in range(repeats)
            ]
            for i, request in enumerate(requests):
                request.repeat_filtered_resps[ensemble.name] = [values[i] for values in per_repeat]


def failed_doc_ids(requests: Sequence[Instance]) -> set[int]:
    """Documents with at least one failed request (never scored)."""
    return {r.doc_id for r in requests if r.failures}


@dataclass
class _DocScore:
    """One doc's metric values under one filter (and, with repeats, each sample's values)."""

    doc_id: int
    filtered: list[Any]
    metrics: dict[str, Any]
    repeat_rows: dict[str, list[Any]] | None = None


def score_task(
    task: ConfigurableTask,
    requests: Sequence[Instance],
    log_samples: bool,
    sink: SampleSink | None,
    show_progress: bool | None = None,
) -> TaskResult:
    """Call ``process_results`` per doc and filter key; collect metric values and sample records.

    A doc whose request failed, or whose ``process_results`` raises, is recorded as failed (with a
    failure record in the samples) and left out of every filter's scores; the others are scored.
    """
    result = TaskResult(task)
    docs = task.scoring_docs
    all_by_doc = group_by_doc(requests)
    failed = failed_doc_ids(requests)
    by_doc = {doc_id: reqs for doc_id, reqs in all_by_doc.items() if doc_id not in failed}
    result.failed = {
        doc_id: [f for r in reqs for f in r.failures]
        for doc_id, reqs in all_by_doc.items()
        if doc_id in failed
    }
    metric_names = [cfg.name for cfg in task.metric_configs]
    scored = {
        ensemble.name: _score_filter(task, by_doc, docs, ensemble.name, metric_names, show_progress)
        for ensemble in task.filters
    }
    broken: dict[int, DocFailure] = {}
    for rows in scored.values():
        for row in rows:
            if isinstance(row, DocFailure):
                broken.setdefault(row.doc_id, row)
    if broken:
        _report_scoring_failures(task, list(broken.values()), len(by_doc))
    result.failed.update({doc_id: [failure.message] for doc_id, failure in broken.items()})
    result.n_effective = len(by_doc) - len(broken)
    if log_samples and sink is not None:
        for doc_id in sorted(result.failed):
            scored_requests = by_doc.get(doc_id) if doc_id in broken else None
            sink(
                task.task_name,
                failure_record(task, doc_id, docs[doc_id], result.failed[doc_id], scored_requests),
            )
    for key, rows in scored.items():
        for row in rows:
            if isinstance(row, _DocScore) and row.doc_id not in broken:
                names = metric_names or list(row.metrics)
                _record(task, result, row, key, names, by_doc[row.doc_id], sink if log_samples else None)
    return result


def _score_filter(
    task: ConfigurableTask,
    by_doc: dict[int, list[Instance]],
    docs: Any,
    key: str,
    metric_names: list[str],
    show_progress: bool | None,
) -> list[_DocScore | DocFailure]:
    """Every doc's metric values under filter ``key`` (a doc whose scoring raised: its failure)."""
    doc_ids = list(by_doc)
    filtered_all = [[r.filtered_resps[key] for r in by_doc[d]] for d in doc_ids]
    doc_list = [docs[d] for d in doc_ids]
    vectorised = score_generation_docs(task, doc_list, filtered_all)
    all_metrics = vectorised if vectorised is not None else task.score_docs(doc_list, filtered_all, doc_ids)
    disable = None if show_progress is None else not show_progress
    rows: list[_DocScore | DocFailure] = []
    for doc_id, filtered, metrics in tqdm(
        zip(doc_ids, filtered_all, all_metrics),
        total=len(doc_ids),
        desc=f"scoring {task.task_name}",
        unit="doc",
        disable=disable,
        leave=False,
    ):
        if isinstance(metrics, DocFailure):
            rows.append(metrics)
            continue
        row = _DocScore(doc_id, filtered, metrics)
        doc_requests = by_doc[doc_id]
        if any(r.repeat_filtered_resps for r in doc_requests):
            repeats = _repeat_rows(
                task, doc_id, docs[doc_id], doc_requests, key, metric_names or list(metrics)
            )
            if isinstance(repeats, DocFailure):
                rows.append(repeats)
                continue
            row.repeat_rows = repeats
        rows.append(row)
    return rows


def _report_scoring_failures(task: ConfigurableTask, failures: list[DocFailure], total: int) -> None:
    """Log the docs whose scoring raised; raise when every doc failed with the same lmms_eval error
    (a metric the output type lacks: a bug in the task, raised as before)."""
    first = failures[0]
    if isinstance(first.exception, LmmsEvalError):
        raise_if_every_doc_failed(failures, total, "scoring")
    logger.warning(
        "task %s: process_results raised on %d of %d documents; they are recorded as failed. The first: %s",
        task.task_name,
        len(failures),
        total,
        first.message,
    )


def _record(
    task: ConfigurableTask,
    result: TaskResult,
    row: _DocScore,
    key: str,
    names: Sequence[str],
    doc_requests: Sequence[Instance],
    sink: SampleSink | None,
) -> None:
    """Add one doc's values under filter ``key`` to ``result`` (and its sample record to ``sink``)."""
    docs = task.scoring_docs
    doc = docs[row.doc_id]
    for name in names:
        if name in row.metrics:
            result.add((name, key), row.doc_id, row.metrics[name])
    if task.config.cluster_key:
        result.clusters[row.doc_id] = _cluster_of(doc, row.metrics, task.config.cluster_key, row.doc_id)
    for name, values in (row.repeat_rows or {}).items():
        result.repeat_scores.setdefault((name, key), []).append(values)
    if sink is not None:
        sink(
            task.task_name, sample_record(task, row.doc_id, doc, doc_requests, key, row.filtered, row.metrics)
        )


def _cluster_of(doc: Any, metrics: dict[str, Any], cluster_key: str, doc_id: int) -> Any:
    """The doc's cluster id: the doc field, else the field inside a metric's dict value."""
    if isinstance(doc, dict) and cluster_key in doc:
        return doc[cluster_key]
    for value in metrics.values():
        if isinstance(value, dict) and cluster_key in value:
            return value[cluster_key]
    logger.warning("doc %s has no cluster_key field '%s'; it forms its own cluster", doc_id, cluster_key)
    return f"__doc_{doc_id}"


def _repeat_rows(
    task: ConfigurableTask,
    doc_id: int,
    doc: Any,
    doc_requests: Sequence[Instance],
    key: str,
    names: Sequence[str],
) -> dict[str, list[Any]] | DocFailure:
    """Per-sample scores of one doc: process_results on each repeat's filtered response alone."""
    repeats = len(doc_requests[0].repeat_filtered_resps.get(key, []))
    rows: dict[str, list[Any]] = {name: [] for name in names}
    for r in range(repeats):
        single = task.score_doc(doc_id, doc, [req.repeat_filtered_resps[key][r] for req in doc_requests])
        if isinstance(single, DocFailure):
            return single
        for name in names:
            rows[name].append(single.get(name))
    return rows


def failure_record(
    task: ConfigurableTask,
    doc_id: int,
    doc: Any,
    errors: list[str],
    requests: Sequence[Instance] | None = None,
) -> SampleRecord:
    """The samples-file line of a document whose request or scoring failed: recorded, not scored.

    With ``requests`` (a doc whose ``process_results`` raised) the responses are kept too.
    """
    hashed, recorded = _doc_recorder(task).get(doc_id, doc, uses=1)
    fields: dict[str, Any] = {"doc_id": doc_id, "doc_hash": hashed, "failed": True, "errors": errors}
    fields["filter"] = None
    if requests:
        fields["resps"] = [r.resps for r in requests]
        fields["filtered_resps"] = {
            key: [r.filtered_resps[key] for r in requests] for key in requests[0].filtered_resps
        }
    fields["doc"] = recorded
    return SampleRecord.build(**fields)


_recorders: weakref.WeakKeyDictionary[ConfigurableTask, DocRecorder] = weakref.WeakKeyDictionary()


def _doc_recorder(task: ConfigurableTask) -> DocRecorder:
    """The task's :class:`DocRecorder`: each doc's hash and record copy computed once for all filters."""
    recorder = _recorders.get(task)
    if recorder is None or recorder.docs is not task.eval_docs:
        recorder = _recorders[task] = DocRecorder(task.eval_docs, uses=len(task.filters))
    return recorder


def prompt_text(task: ConfigurableTask, request: Instance) -> str:
    """The prompt of a request as text (the context string, or the text of its chat messages)."""
    first = request.args[0]
    if isinstance(first, str):
        return first
    if request.failures and first is UNBUILT:
        return f"<not built: {request.failures[0]}>"
    try:
        from lmms_eval.protocol import ChatMessages

        return ChatMessages.from_raw(first(task.eval_docs[request.doc_id])).text()
    except Exception as exc:  # logging must never fail a run
        return f"<could not render the prompt: {exc}>"


def sample_record(
    task: ConfigurableTask,
    doc_id: int,
    doc: Any,
    requests: Sequence[Instance],
    filter_key: str,
    filtered: list[Any],
    metrics: dict[str, Any],
) -> SampleRecord:
    """The samples-file line of one scored document under filter ``filter_key``.

    Built without validation (:meth:`SampleRecord.build`): this runs once per document and filter.
    """
    target: Any
    try:
        target = task.gold_text(doc) if task.config.doc_to_target is not None else ""
    except Exception:  # a target that cannot be rendered is logged as empty
        target = ""
    hashed, recorded = _doc_recorder(task).get(doc_id, doc)
    fields: dict[str, Any] = {
        "doc_id": doc_id,
        "doc_hash": hashed,
        "target": target if isinstance(target, (list, int, float)) else str(target),
        "input": prompt_text(task, requests[0]),
    }
    if task.config.output_type == "multiple_choice":
        fields["arguments"] = [_jsonable_args(r) for r in requests]
    fields["resps"] = [r.resps for r in requests]
    fields["filtered_resps"] = filtered
    fields["filter"] = filter_key
    fields["token_counts"] = [c for r in requests for c in r.token_counts] or None
    cluster_key = task.config.cluster_key
    if cluster_key and isinstance(doc, dict) and cluster_key in doc:
        fields["cluster"] = doc[cluster_key]
    return SampleRecord.build(**fields, metrics=dict(metrics), doc=recorded)


def _jsonable_args(request: Instance) -> list[Any]:
    return [a if isinstance(a, (str, int, float)) else None for a in request.args[:2]]
