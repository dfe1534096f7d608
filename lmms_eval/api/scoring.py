"""Built-in ``process_results``: scoring a doc when the task gives no function of its own."""

from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from lmms_eval.api.registry import get_metric
from lmms_eval.errors import ConfigError

if TYPE_CHECKING:
    from lmms_eval.api.task import ConfigurableTask

CORPUS_METRICS = ("bleu", "chrf", "ter", "f1", "mcc")


def builtin_process_results(task: ConfigurableTask, doc: Any, results: list[Any]) -> dict[str, Any]:
    output_type = task.config.output_type
    if output_type == "loglikelihood":
        return _loglikelihood(task, doc, results)
    if output_type == "multiple_choice":
        return _multiple_choice(task, doc, results)
    return _generation(task, doc, results)


def _metric_names(task: ConfigurableTask) -> list[str]:
    return [cfg.name for cfg in task.metric_configs]


def _loglikelihood(task: ConfigurableTask, doc: Any, results: list[Any]) -> dict[str, Any]:
    ll, is_greedy = results[0]
    target = task.gold_text(doc)
    target = str(target[0] if isinstance(target, list) else target)
    values: dict[str, Any] = {}
    for name in _metric_names(task):
        if name == "perplexity":
            values[name] = ll
        elif name == "acc":
            values[name] = int(is_greedy)
        elif name == "word_perplexity":
            values[name] = (ll, max(1, len(target.split())))
        elif name in ("byte_perplexity", "bits_per_byte"):
            values[name] = (ll, max(1, len(target.encode("utf-8"))))
        else:
            raise ConfigError(
                f"task '{task.task_name}': metric '{name}' is not available for loglikelihood tasks"
            )
    return values


def _multiple_choice(task: ConfigurableTask, doc: Any, results: list[Any]) -> dict[str, Any]:
    lls = np.asarray([float(r[0]) for r in results])
    is_greedy = [bool(r[1]) for r in results]
    choices = task.doc_to_choice(doc)
    gold = task.gold_index(doc)
    golds = gold if isinstance(gold, list) else [gold]
    for g in golds:
        if not 0 <= g < len(choices):
            raise ConfigError(
                f"task '{task.task_name}': gold index {g} is out of range for {len(choices)} choices"
            )
    # log-likelihoods: the highest wins (the published package took the argmin of "losses")
    pred = int(np.argmax(lls))
    lengths = np.asarray([max(1, len(c)) for c in choices], dtype=float)
    pred_norm = int(np.argmax(lls / lengths))
    values: dict[str, Any] = {}
    for name in _metric_names(task):
        if name == "acc":
            values[name] = 1.0 if pred in golds else 0.0
        elif name == "acc_norm":
            values[name] = 1.0 if pred_norm in golds else 0.0
        elif name == "exact_match":
            values[name] = float(any(is_greedy[g] for g in golds))
        elif name in ("f1", "mcc"):
            values[name] = (golds[0], pred)
        elif name == "brier_score":
            shifted = np.exp(lls - lls.max())
            values[name] = (golds[0], (shifted / shifted.sum()).tolist())
        elif name == "acc_mutual_info":
            raise ConfigError(
                f"task '{task.task_name}': acc_mutual_info is not supported; use acc or acc_norm"
            )
        else:
            raise ConfigError(
                f"task '{task.task_name}': metric '{name}' is not available for multiple_choice tasks"
            )
    return values


def _generation(task: ConfigurableTask, doc: Any, results: list[Any]) -> dict[str, Any]:
    prediction = results[0]
    if isinstance(prediction, list):  # repeats with a take_first_k filter
        prediction = prediction[0]
    prediction = "" if prediction is None else str(prediction)
    gold = task.gold_text(doc)
    values: dict[str, Any] = {}
    for cfg in task.metric_configs:
        name = cfg.name
        if name in CORPUS_METRICS:
            values[name] = (gold, prediction)
            continue
        if callable(cfg.metric):
            fn = cfg.metric
        else:
            fn = get_metric(name).fn
        kwargs = cfg.kwargs
        if name == "anls" or not isinstance(gold, list):
            value = _call_metric(fn, [gold], [prediction], kwargs)
        else:
            value = max(_call_metric(fn, [g], [prediction], kwargs) for g in gold)
        values[name] = value
    return values


def _call_metric(fn: Any, references: list[Any], predictions: list[Any], kwargs: dict[str, Any]) -> Any:
    params = inspect.signature(fn).parameters
    if "references" in params and "predictions" in params:
        value = fn(references=references, predictions=predictions, **kwargs)
    else:
        value = fn(references[0], predictions[0], **kwargs)
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    if isinstance(value, float) and math.isnan(value):
        return value
    return value
