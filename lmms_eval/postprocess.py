"""Filter and scoring stages: raw responses -> filtered responses -> per-document metric values.

Also builds the per-sample records written to ``samples_<task>.jsonl``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from lmms_eval.aggregation import TaskResult
from lmms_eval.api.instance import Instance
from lmms_eval.api.reasoning import strip_reasoning_tags
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.utils import canonical_json, hash_string

logger = logging.getLogger(__name__)

SampleSink = Callable[[str, dict[str, Any]], None]


def group_by_doc(requests: Sequence[Instance]) -> dict[int, list[Instance]]:
    by_doc: dict[int, list[Instance]] = defaultdict(list)
    for request in requests:
        by_doc[request.doc_id].append(request)
    for items in by_doc.values():
        items.sort(key=lambda r: r.idx)
    return dict(sorted(by_doc.items()))


def apply_filters(
    task: ConfigurableTask,
    requests: Sequence[Instance],
    reasoning_tags: list[tuple[str, str]] | None,
) -> None:
    """Strip reasoning blocks (if enabled) and run every filter ensemble of the task.

    Filters receive, for each instance, the doc that instance belongs to.
    """
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
    for ensemble in task.filters:
        ensemble.apply(requests, instance_docs, responses)


def score_task(
    task: ConfigurableTask,
    requests: Sequence[Instance],
    log_samples: bool,
    sink: SampleSink | None,
    show_progress: bool | None = None,
) -> TaskResult:
    """Call ``process_results`` per doc and filter key; collect metric values and sample records."""
    result = TaskResult(task)
    docs = task.scoring_docs
    by_doc = group_by_doc(requests)
    result.n_effective = len(by_doc)
    metric_names = [cfg.name for cfg in task.metric_configs]
    disable = None if show_progress is None else not show_progress
    for ensemble in task.filters:
        key = ensemble.name
        for doc_id, doc_requests in tqdm(
            by_doc.items(), desc=f"scoring {task.task_name}", unit="doc", disable=disable, leave=False
        ):
            doc = docs[doc_id]
            filtered = [r.filtered_resps[key] for r in doc_requests]
            metrics = task.process_results(doc, filtered)
            names = metric_names or list(metrics)
            for name in names:
                if name in metrics:
                    result.sample_metrics.setdefault((name, key), []).append(metrics[name])
            if log_samples and sink is not None:
                sink(task.task_name, sample_record(task, doc_id, doc, doc_requests, key, filtered, metrics))
    return result


def doc_hash(doc: Any) -> str:
    return hash_string(canonical_json(doc))


def prompt_text(task: ConfigurableTask, request: Instance) -> str:
    """The prompt of a request as text (the context string, or the text of its chat messages)."""
    first = request.args[0]
    if isinstance(first, str):
        return first
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
) -> dict[str, Any]:
    target: Any
    try:
        target = task.gold_text(doc) if task.config.doc_to_target is not None else ""
    except Exception:  # a target that cannot be rendered is logged as empty
        target = ""
    record: dict[str, Any] = {
        "doc_id": doc_id,
        "doc_hash": doc_hash(doc),
        "target": target if isinstance(target, (list, int, float)) else str(target),
        "input": prompt_text(task, requests[0]),
        "arguments": [_jsonable_args(r) for r in requests]
        if task.config.output_type == "multiple_choice"
        else None,
        "resps": [r.resps for r in requests],
        "filtered_resps": filtered,
        "filter": filter_key,
        "token_counts": [c for r in requests for c in r.token_counts] or None,
    }
    if record["arguments"] is None:
        del record["arguments"]
    cluster_key = task.config.cluster_key
    if cluster_key and isinstance(doc, dict) and cluster_key in doc:
        record["cluster"] = doc[cluster_key]
    for name, value in metrics.items():
        record[name] = value
    return record


def _jsonable_args(request: Instance) -> list[Any]:
    return [a if isinstance(a, (str, int, float)) else None for a in request.args[:2]]
