"""Aggregation stage: per-document metric values -> task scores with standard errors -> group scores."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lmms_eval import stats
from lmms_eval.api.group import ConfigurableGroup, Node
from lmms_eval.api.metrics import mean as mean_aggregation
from lmms_eval.api.task import ConfigurableTask

logger = logging.getLogger(__name__)


@dataclass
class TaskResult:
    """Everything the evaluator collected for one task."""

    task: ConfigurableTask
    sample_metrics: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    n_effective: int = 0
    scores: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.task.task_name


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def aggregate_task(result: TaskResult, bootstrap_iters: int, seed: int = 1234) -> dict[str, Any]:
    """Scores and standard errors of one task: ``{"metric,filter": value, "metric_stderr,filter": se}``."""
    aggregations = result.task.aggregation()
    scores: dict[str, Any] = {"alias": result.task.alias}
    for (metric, filter_key), items in result.sample_metrics.items():
        fn: Callable[..., Any] = aggregations.get(metric, mean_aggregation)
        value = _call_aggregation(fn, items)
        if isinstance(value, dict):  # aggregations may return several named scores
            for sub, sub_value in value.items():
                scores[f"{sub},{filter_key}"] = sub_value
            scores[f"{metric}_stderr,{filter_key}"] = "N/A"
            continue
        scores[f"{metric},{filter_key}"] = value
        scores[f"{metric}_stderr,{filter_key}"] = _stderr(fn, items, bootstrap_iters, seed)
    scores["samples"] = result.n_effective
    result.scores = scores
    return scores


def _call_aggregation(fn: Callable[..., Any], items: list[Any]) -> Any:
    value = fn(items)
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    return value


def _stderr(fn: Callable[..., Any], items: list[Any], bootstrap_iters: int, seed: int) -> Any:
    is_mean = fn is mean_aggregation or getattr(fn, "__name__", "") == "mean"
    if is_mean and all(_is_number(v) or v is None for v in items):
        se = stats.mean_stderr(items)
        return se if not math.isnan(se) else "N/A"
    if bootstrap_iters <= 0 or fn.__name__ == "bypass_agg":
        return "N/A"
    try:
        # corpus metrics rescore the whole corpus per resample: 100 resamples are plenty
        cap = 100 if getattr(fn, "__name__", "") in ("bleu", "chrf", "ter") else 1000
        se = stats.bootstrap_stderr(fn, items, min(bootstrap_iters, cap), seed)
    except Exception as exc:  # an aggregation that cannot take a resample has no bootstrap error
        logger.debug("bootstrap of %s failed: %s", getattr(fn, "__name__", fn), exc)
        return "N/A"
    return se if not math.isnan(se) else "N/A"


def aggregate_groups(
    nodes: Mapping[str, Node], task_scores: dict[str, dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Group scores (only for groups with ``aggregate_metric_list``) and the group -> children map."""
    group_scores: dict[str, dict[str, Any]] = {}
    group_subtasks: dict[str, list[str]] = {}

    def visit(node: Node) -> None:
        if not isinstance(node, ConfigurableGroup):
            return
        for child in node.children:
            visit(child)
        names = [c.group_name if isinstance(c, ConfigurableGroup) else c.task_name for c in node.children]
        group_subtasks[node.group_name] = names
        scores: dict[str, Any] = {"alias": node.alias}
        for agg in node.config.aggregate_metric_list or []:
            for filter_key in agg.filters:
                _aggregate_one_group(node, agg, filter_key, names, task_scores, group_scores, scores)
        if node.config.aggregate_metric_list:
            leaves = list(node.leaves())
            scores["samples"] = sum(int(task_scores[t.task_name].get("samples", 0)) for t in leaves)
            group_scores[node.group_name] = scores

    for node in nodes.values():
        visit(node)
    return group_scores, group_subtasks


def _aggregate_one_group(
    node: ConfigurableGroup,
    agg: Any,
    filter_key: str,
    children: list[str],
    task_scores: dict[str, dict[str, Any]],
    group_scores: dict[str, dict[str, Any]],
    out: dict[str, Any],
) -> None:
    key = f"{agg.metric},{filter_key}"
    stderr_key = f"{agg.metric}_stderr,{filter_key}"
    values, stderrs, sizes = [], [], []
    for child in children:
        source = group_scores.get(child) or task_scores.get(child) or {}
        if key not in source:
            logger.warning(
                "group '%s': child '%s' has no metric '%s'; it is left out", node.group_name, child, key
            )
            continue
        values.append(source[key])
        se: Any = source.get(stderr_key)
        stderrs.append(float(se) if _is_number(se) else float("nan"))
        sizes.append(int(source.get("samples", 0)))
    if not values:
        return
    if callable(agg.aggregation):
        out[key] = agg.aggregation(values, sizes)
    else:
        out[key] = stats.weighted_mean(values, sizes, agg.weight_by_size)
    se = stats.pooled_stderr(stderrs, sizes)
    out[stderr_key] = se if not math.isnan(se) else "N/A"
