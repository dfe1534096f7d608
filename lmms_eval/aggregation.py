"""Aggregation stage: per-document metric values -> task scores with error bars -> group scores.

Every aggregated metric gets a standard error and a 95% confidence interval: analytic for the
mean aggregation, a (vectorised) bootstrap for the other aggregations known to be pure (built-in,
declared with :func:`~lmms_eval.stats.pure_aggregation`, or recognised as arithmetic: see
:mod:`lmms_eval.stats.pure`). Any other custom ``!function`` aggregation is called exactly once,
for the score: its error bar is the interval of the mean per-document score when the score is on
that scale, else ``N/A``, and the task's ``stderr_notes`` says why. Tasks with ``cluster_key`` also
get a cluster-robust error, and ``repeats > 1`` adds the repeated-sampling metrics. How each
interval was formed (Wilson for 0/1 means, t, clipped t, bootstrap percentile...) is recorded under the
entry's ``ci_methods``. Keys follow the
published layout: ``"<metric>,<filter>"``, ``"<metric>_stderr,<filter>"``, plus ``_ci_lower`` /
``_ci_upper`` and the clustered variants.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lmms_eval import stats
from lmms_eval.api.context import AggregationContext, bind_context
from lmms_eval.api.group import ConfigurableGroup, Node
from lmms_eval.api.metrics import mean as mean_aggregation
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.stats import Estimate

logger = logging.getLogger(__name__)

MetricKey = tuple[str, str]  # (metric, filter)


@dataclass
class TaskResult:
    """Everything the evaluator collected for one task."""

    task: ConfigurableTask
    sample_metrics: dict[MetricKey, list[Any]] = field(default_factory=dict)
    sample_doc_ids: dict[MetricKey, list[int]] = field(default_factory=dict)
    repeat_scores: dict[MetricKey, list[list[Any]]] = field(default_factory=dict)
    clusters: dict[int, Hashable] = field(default_factory=dict)
    n_effective: int = 0
    failed: dict[int, list[str]] = field(default_factory=dict)  # doc id -> errors (not scored)
    estimates: dict[MetricKey, Estimate] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.task.task_name

    def add(self, key: MetricKey, doc_id: int, value: Any) -> None:
        self.sample_metrics.setdefault(key, []).append(value)
        self.sample_doc_ids.setdefault(key, []).append(doc_id)


def item_score(item: Any, score_key: str) -> float | None:
    """The number a per-document value contributes to error bars (``item[score_key]`` for dicts)."""
    if isinstance(item, dict):
        item = item.get(score_key)
    if isinstance(item, bool):
        return float(item)
    if isinstance(item, (int, float)) and not math.isnan(float(item)):
        return float(item)
    return None


def _seed_for(base: int, *parts: str) -> int:
    """A per-metric seed derived from the run seed (stable across processes)."""
    return (base * 1_000_003 + zlib.crc32("\x1f".join(parts).encode())) % 2**32


def _number(value: Any) -> float | None:
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, (bool, int, float)):
        return float(value)
    return None


def estimate_metric(
    fn: Callable[..., Any],
    items: list[Any],
    value: Any,
    bootstrap_iters: int,
    seed: int,
    binary_method: str = stats.WILSON,
) -> Estimate:
    """Error bar of one aggregated metric of a resampleable ``fn``: analytic for means (0/1 means get
    the ``binary_method`` interval), bootstrap otherwise."""
    point = _number(value)
    if point is None:
        return Estimate(math.nan, n=len(items))
    # only the registered mean: a task's own function named "mean" may use another scale
    if fn is mean_aggregation and all(item is None or isinstance(item, (bool, int, float)) for item in items):
        return stats.mean_estimate(items, binary_method=binary_method)
    return stats.bootstrap_estimate(fn, items, bootstrap_iters, seed=seed, value=point)


# the scales on which a score may be the mean per-document score: a fraction, a percentage
_SCALES = (1.0, 100.0)


def per_document_estimate(
    items: list[Any], value: Any, score_key: str, binary_method: str = stats.WILSON
) -> tuple[Estimate, str]:
    """The interval of the mean per-document score, when ``value`` is that mean (or 100 times it).

    For aggregations that must not be re-run. Returns the estimate (NaN parts when there is none)
    and the note for the results.
    """
    point = _number(value)
    numbers = [item_score(item, score_key) for item in items]
    if point is None or not items or any(x is None for x in numbers):
        return Estimate(
            math.nan if point is None else point, n=len(items)
        ), "no per-document score to give an interval"
    plain = stats.mean_estimate(numbers, binary_method=binary_method)
    for scale in _SCALES:
        if math.isclose(point, scale * plain.value, rel_tol=1e-9, abs_tol=1e-12):
            estimate = Estimate(
                point,
                scale * plain.stderr,
                scale * plain.ci_low,
                scale * plain.ci_high,
                plain.n,
                "per-document",
                interval=plain.interval,
            )
            return estimate, "interval of the mean per-document score" + ("" if scale == 1 else " (x100)")
    return Estimate(point, n=len(items)), "the score is not the mean of the per-document scores: no interval"


def _not_resampled(raw_fn: Callable[..., Any]) -> str:
    name = getattr(raw_fn, "__qualname__", None) or repr(raw_fn)
    return (
        f"aggregation {name} is not known to be pure (it may write files or call a judge), so it ran "
        "once and was not bootstrapped; mark it @lmms_eval.stats.pure_aggregation if it only computes"
    )


def aggregate_task(
    result: TaskResult,
    bootstrap_iters: int,
    seed: int = 1234,
    context: AggregationContext | None = None,
    binary_method: str = stats.WILSON,
) -> dict[str, Any]:
    """Scores, standard errors and intervals of one task (see the module docstring for the keys).

    Aggregations that take a context (``fn(items, context)``) get ``context`` for the score and,
    when they are known to be pure, a context that writes nothing for the bootstrap.
    """
    task = result.task
    aggregations = task.aggregation()
    context = context or AggregationContext(task.task_name)
    scores: dict[str, Any] = {"alias": task.alias}
    notes: dict[str, str] = {}
    for key, items in result.sample_metrics.items():
        metric, filter_key = key
        raw_fn: Callable[..., Any] = aggregations.get(metric, mean_aggregation)
        value = bind_context(raw_fn, context)(items)
        pure = stats.purity(raw_fn) is not None
        fn = bind_context(raw_fn, context.as_dry()) if pure else None
        key_seed = _seed_for(seed, task.task_name, metric, filter_key)
        named = value.items() if isinstance(value, dict) else [(metric, value)]
        for sub, sub_value in named:  # an aggregation may return several named scores
            sub_fn = fn if fn is None or not isinstance(value, dict) else _sub_aggregation(fn, sub)
            if sub_fn is not None:
                estimate = estimate_metric(sub_fn, items, sub_value, bootstrap_iters, key_seed, binary_method)
            else:
                estimate, how = per_document_estimate(items, sub_value, task.config.score_key, binary_method)
                notes[f"{sub},{filter_key}"] = f"{_not_resampled(raw_fn)}; {how}"
            if not isinstance(value, dict):
                result.estimates[key] = estimate
            _store(scores, (sub, filter_key), sub_value, estimate)
        if isinstance(value, dict):
            continue
        if task.config.cluster_key:
            _store_clustered(scores, result, key, fn, items, bootstrap_iters, key_seed)
        if key in result.repeat_scores:
            rows = [[item_score(v, task.config.score_key) for v in row] for row in result.repeat_scores[key]]
            for name, number in stats.stability_metrics(rows).items():
                scores[f"{metric}_{name},{filter_key}"] = number
    if notes:
        scores["stderr_notes"] = notes
    if "ci_methods" in scores:  # after the metric keys, as in the published layout
        scores["ci_methods"] = scores.pop("ci_methods")
    scores["samples"] = result.n_effective
    if result.failed:
        scores["failed"] = len(result.failed)
    return scores


def _sub_aggregation(fn: Callable[..., Any], name: str) -> Callable[[list[Any]], Any]:
    def sub(items: list[Any]) -> Any:
        # a resample may miss every doc of a category, so its entry can be absent: no value then
        return fn(items).get(name, math.nan)

    return sub


def _store(scores: dict[str, Any], key: MetricKey, value: Any, estimate: Estimate, suffix: str = "") -> None:
    metric, filter_key = key
    if not suffix:
        scores[f"{metric},{filter_key}"] = value
    scores[f"{metric}_stderr{suffix},{filter_key}"] = _or_na(estimate.stderr)
    scores[f"{metric}_ci_lower{suffix},{filter_key}"] = _or_na(estimate.ci_low)
    scores[f"{metric}_ci_upper{suffix},{filter_key}"] = _or_na(estimate.ci_high)
    if estimate.interval and not math.isnan(estimate.ci_low):
        scores.setdefault("ci_methods", {})[f"{metric}{suffix},{filter_key}"] = estimate.interval


def _or_na(number: float) -> Any:
    return "N/A" if number is None or math.isnan(number) else number


def _store_clustered(
    scores: dict[str, Any],
    result: TaskResult,
    key: MetricKey,
    fn: Callable[..., Any] | None,
    items: list[Any],
    bootstrap_iters: int,
    seed: int,
) -> None:
    """Cluster-robust error: Miller's eq. 4 for means (and, scaled, for aggregations that must not
    be re-run but whose score is the mean per-document score), a cluster bootstrap otherwise."""
    doc_ids = result.sample_doc_ids[key]
    clusters = [result.clusters.get(d, f"__doc_{d}") for d in doc_ids]
    if fn is mean_aggregation or fn is None:
        numbers = [item_score(v, result.task.config.score_key) for v in items]
        estimate = stats.clustered_mean_estimate(numbers, clusters)
        if fn is None:
            estimate = _rescaled(estimate, result.estimates.get(key))
    else:
        estimate = stats.cluster_bootstrap_estimate(fn, items, clusters, bootstrap_iters, seed=seed)
    _store(scores, key, None, estimate, suffix="_clustered")
    metric, filter_key = key
    scores[f"{metric}_n_clusters,{filter_key}"] = estimate.details.get("n_clusters", 0)


def _rescaled(clustered: Estimate, plain: Estimate | None) -> Estimate:
    """A clustered mean estimate on the scale of the per-document estimate (none without one)."""
    if plain is None or plain.method != "per-document" or math.isnan(clustered.value) or clustered.value == 0:
        scale = 1.0 if plain is not None and plain.method == "per-document" else math.nan
    else:
        scale = plain.value / clustered.value
    if math.isnan(scale):
        return Estimate(clustered.value, n=clustered.n, details=clustered.details)
    return Estimate(
        scale * clustered.value,
        scale * clustered.stderr,
        scale * clustered.ci_low,
        scale * clustered.ci_high,
        clustered.n,
        clustered.method,
        clustered.details,
        clustered.interval,
    )


def aggregate_groups(
    nodes: Mapping[str, Node],
    task_results: Mapping[str, TaskResult],
    task_scores: Mapping[str, dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Group scores (only for groups with ``aggregate_metric_list``) and the group -> children map."""
    group_scores: dict[str, dict[str, Any]] = {}
    group_estimates: dict[str, dict[MetricKey, Estimate]] = {}
    group_subtasks: dict[str, list[str]] = {}

    def estimates_of(name: str) -> dict[MetricKey, Estimate]:
        if name in group_estimates:
            return group_estimates[name]
        return task_results[name].estimates if name in task_results else {}

    def samples_of(name: str) -> int:
        source = group_scores.get(name) or task_scores.get(name) or {}
        return int(source.get("samples", 0))

    def visit(node: Node) -> None:
        if not isinstance(node, ConfigurableGroup):
            return
        for child in node.children:
            visit(child)
        names = [c.group_name if isinstance(c, ConfigurableGroup) else c.task_name for c in node.children]
        group_subtasks[node.group_name] = names
        if not node.config.aggregate_metric_list:
            return
        scores: dict[str, Any] = {"alias": node.alias}
        own: dict[MetricKey, Estimate] = {}
        for agg in node.config.aggregate_metric_list:
            for filter_key in agg.filters:
                key = (agg.metric, filter_key)
                children = [(n, estimates_of(n).get(key)) for n in names]
                present = [(n, e) for n, e in children if e is not None]
                for missing, _ in (c for c in children if c[1] is None):
                    logger.warning(
                        "group '%s': '%s' has no metric '%s,%s'; left out", node.group_name, missing, *key
                    )
                if not present:
                    continue
                sizes = [samples_of(n) for n, _ in present]
                if callable(agg.aggregation):
                    value = agg.aggregation([e.value for _, e in present], sizes)
                    estimate = Estimate(float(value))
                else:
                    estimate = stats.group_estimate([e for _, e in present], sizes, agg.weight_by_size)
                    value = estimate.value
                own[key] = estimate
                _store(scores, key, value, estimate)
        scores["samples"] = sum(int(task_scores[t.task_name].get("samples", 0)) for t in node.leaves())
        group_scores[node.group_name] = scores
        group_estimates[node.group_name] = own

    for node in nodes.values():
        visit(node)
    return group_scores, group_subtasks
