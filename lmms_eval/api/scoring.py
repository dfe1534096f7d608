"""Built-in ``process_results``: scoring a doc when the task gives no function of its own.

* ``loglikelihood``: ``results[0]`` is ``(log-likelihood, is_greedy)``.
* ``multiple_choice``: one ``(log-likelihood, is_greedy)`` per choice; the highest log-likelihood
  is the prediction (``acc_norm`` divides each by its choice's length in characters).
* generation: ``results[0]`` is the filtered response; each metric is called as
  ``fn(references=[gold], predictions=[prediction], **kwargs)``. With several golds a doc scores
  the best of them (``anls`` gets all golds at once).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from lmms_eval.api.registry import get_metric
from lmms_eval.errors import ConfigError

if TYPE_CHECKING:
    from lmms_eval.api.task import ConfigurableTask

CORPUS_METRICS = ("bleu", "chrf", "ter", "f1", "mcc")
LABEL_METRICS = ("f1", "mcc")
GENERATION_TYPES = ("generate_until", "generate_until_multi_round")


def builtin_process_results(task: ConfigurableTask, doc: Any, results: list[Any]) -> dict[str, Any]:
    output_type = task.config.output_type
    if output_type == "loglikelihood":
        return _loglikelihood(task, doc, results)
    if output_type == "multiple_choice":
        return _multiple_choice(task, doc, results)
    return _generation(task, doc, results)


def _metric_names(task: ConfigurableTask) -> list[str]:
    return [cfg.name for cfg in task.metric_configs]


def _unavailable(task: ConfigurableTask, name: str, output_type: str) -> ConfigError:
    return ConfigError(f"task '{task.task_name}': metric '{name}' is not available for {output_type} tasks")


def _ll_pair(result: Any) -> tuple[float, bool]:
    """``(log-likelihood, is_greedy)`` from a model result (a bare number counts as not greedy)."""
    value: Any = result
    if isinstance(value, list) and len(value) == 1:  # a selecting filter kept a one-element list
        value = value[0]
    if isinstance(value, (tuple, list)) and len(value) >= 2:
        return float(value[0]), bool(value[1])
    if isinstance(value, (int, float)):
        return float(value), False
    raise ValueError(f"expected a (log-likelihood, is_greedy) pair, got {result!r}")


# ------------------------------------------------------------------------------------------------
# loglikelihood
# ------------------------------------------------------------------------------------------------


def _loglikelihood(task: ConfigurableTask, doc: Any, results: list[Any]) -> dict[str, Any]:
    ll, is_greedy = _ll_pair(results[0])
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
            raise _unavailable(task, name, "loglikelihood")
    return values


# ------------------------------------------------------------------------------------------------
# multiple_choice
# ------------------------------------------------------------------------------------------------


def _argmax(values: Sequence[float]) -> int:
    """Index of the largest value (the first on ties)."""
    return max(range(len(values)), key=lambda i: (values[i], -i))


def _softmax(values: Sequence[float]) -> list[float]:
    top = max(values)
    shifted = [math.exp(v - top) for v in values]
    total = math.fsum(shifted)
    return [s / total for s in shifted]


def _gold_indices(task: ConfigurableTask, doc: Any, n_choices: int) -> list[int]:
    gold = task.gold_index(doc)
    golds = gold if isinstance(gold, list) else [gold]
    for g in golds:
        if not 0 <= g < n_choices:
            raise ConfigError(
                f"task '{task.task_name}': gold index {g} is out of range for {n_choices} choices"
            )
    return golds


def _multiple_choice(task: ConfigurableTask, doc: Any, results: list[Any]) -> dict[str, Any]:
    pairs = [_ll_pair(r) for r in results]
    lls = [ll for ll, _ in pairs]
    choices = task.doc_to_choice(doc)
    if len(lls) != len(choices):
        raise ConfigError(f"task '{task.task_name}': {len(lls)} log-likelihoods for {len(choices)} choices")
    golds = _gold_indices(task, doc, len(choices))
    # log-likelihoods: the highest wins (the published package took the argmin of "losses")
    pred = _argmax(lls)
    pred_norm = _argmax([ll / max(1, len(c)) for ll, c in zip(lls, choices)])
    values: dict[str, Any] = {}
    for name in _metric_names(task):
        if name == "acc":
            values[name] = 1.0 if pred in golds else 0.0
        elif name == "acc_norm":
            values[name] = 1.0 if pred_norm in golds else 0.0
        elif name == "exact_match":
            values[name] = float(any(pairs[g][1] for g in golds))
        elif name in LABEL_METRICS:
            values[name] = (pred if pred in golds else golds[0], pred)
        elif name == "brier_score":
            values[name] = (golds[0], _softmax(lls))
        elif name == "acc_mutual_info":
            raise ConfigError(
                f"task '{task.task_name}': acc_mutual_info is not supported; use acc or acc_norm"
            )
        else:
            raise _unavailable(task, name, "multiple_choice")
    return values


# ------------------------------------------------------------------------------------------------
# generation
# ------------------------------------------------------------------------------------------------


def _prediction(results: list[Any]) -> str:
    prediction = results[0] if results else None
    if isinstance(prediction, list):  # repeats kept by take_first_k / majority_vote
        prediction = prediction[0] if prediction else None
    return "" if prediction is None else str(prediction).strip()


def _label_item(gold: Any, prediction: str) -> tuple[Any, str]:
    """``(gold, prediction)`` for f1/mcc; with several golds, the one the prediction matched."""
    if isinstance(gold, list):
        matched = [g for g in gold if str(g) == prediction]
        gold = matched[0] if matched else (gold[0] if gold else "")
    return (str(gold), prediction)


def _metric_fn(task: ConfigurableTask, cfg: Any, output_type: str) -> Callable[..., Any]:
    if callable(cfg.metric):
        return cfg.metric
    spec = get_metric(cfg.name)
    if not any(t in GENERATION_TYPES for t in spec.output_types):
        raise _unavailable(task, cfg.name, output_type)
    return spec.fn


def score_generation_docs(
    task: ConfigurableTask, docs: Sequence[Any], results: Sequence[list[Any]]
) -> list[dict[str, Any]] | None:
    """Every doc's built-in generation scores at once, or ``None`` where that is not possible.

    Possible when the task scores with the built-in ``process_results`` and each metric is
    ``exact_match`` (the registered one, with options it takes) or a label/corpus metric (whose
    per-doc value is a pair): the options are read and the patterns compiled once, and each doc
    costs a comparison. The values are those :func:`builtin_process_results` gives doc by doc; a
    doc whose target cannot be read sends the whole task back to the per-doc path, which reports it.
    """
    from lmms_eval.api.metrics import exact_match
    from lmms_eval.api.task import ConfigurableTask

    if (
        task.config.output_type not in GENERATION_TYPES
        or task.config.process_results is not None
        or task.config.process_results_batch is not None
        or task.predict_only
        or type(task).process_results is not ConfigurableTask.process_results
    ):
        return None
    plans: list[tuple[str, Callable[[Any, str], Any]]] = []
    for cfg in task.metric_configs:
        name = cfg.name
        if name in LABEL_METRICS:
            plans.append((name, _label_item))
        elif name in CORPUS_METRICS:
            plans.append((name, lambda gold, prediction: (gold, prediction)))
        elif name != "anls" and not callable(cfg.metric) and get_metric(name).fn is exact_match:
            if _call_shape(exact_match, tuple(cfg.kwargs))[1] is not None:
                return None  # the per-doc path names the bad option
            plans.append((name, _exact_matcher(**cfg.kwargs)))
        else:
            return None
    try:
        golds = [task.gold_text(doc) for doc in docs]
    except Exception:
        return None
    predictions = [_prediction(r) for r in results]
    return [
        {name: score(gold, prediction) for name, score in plans}
        for gold, prediction in zip(golds, predictions)
    ]


def _exact_matcher(
    regexes_to_ignore: Sequence[str] | str | None = None,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
) -> Callable[[Any, str], float]:
    """``exact_match_hf`` of one doc (the best gold of several) with its options read once."""
    from lmms_eval.api.metrics import normalise_for_match

    patterns = [regexes_to_ignore] if isinstance(regexes_to_ignore, str) else list(regexes_to_ignore or ())
    options = ([re.compile(p) for p in patterns], ignore_case, ignore_punctuation, ignore_numbers)

    def score(gold: Any, prediction: str) -> float:
        predicted = normalise_for_match(prediction, *options)
        if isinstance(gold, list):
            return max((float(normalise_for_match(str(g), *options) == predicted) for g in gold), default=0.0)
        return float(normalise_for_match(str(gold), *options) == predicted)

    return score


def _generation(task: ConfigurableTask, doc: Any, results: list[Any]) -> dict[str, Any]:
    prediction = _prediction(results)
    gold = task.gold_text(doc)
    values: dict[str, Any] = {}
    for cfg in task.metric_configs:
        name = cfg.name
        if name in LABEL_METRICS:
            values[name] = _label_item(gold, prediction)
        elif name in CORPUS_METRICS:
            values[name] = (gold, prediction)
        else:
            fn = _metric_fn(task, cfg, task.config.output_type)
            if name == "anls" or not isinstance(gold, list):
                values[name] = _call_metric(fn, [gold], [prediction], cfg.kwargs)
            else:
                scores = [_call_metric(fn, [g], [prediction], cfg.kwargs) for g in gold]
                values[name] = max(scores, default=0.0)
    return values


@lru_cache(maxsize=256)
def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(fn)


@lru_cache(maxsize=1024)
def _call_shape(fn: Callable[..., Any], kwarg_names: tuple[str, ...]) -> tuple[bool, str | None]:
    """(takes ``references=``/``predictions=`` keywords, why the call cannot bind or ``None``):
    the same for every doc of a task, so worked out once per metric and option names."""
    signature = _signature(fn)
    keywords = "references" in signature.parameters and "predictions" in signature.parameters
    probe = dict.fromkeys(kwarg_names)
    try:
        if keywords:
            signature.bind(references=None, predictions=None, **probe)
        else:
            signature.bind(None, None, **probe)
    except TypeError as exc:
        return keywords, str(exc)
    return keywords, None


def _call_metric(
    fn: Callable[..., Any], references: list[Any], predictions: list[Any], kwargs: dict[str, Any]
) -> Any:
    """Call a metric with ``references=`` / ``predictions=`` keywords (or positionally) and unwrap
    a one-entry ``{name: value}`` result. Keyword arguments the metric does not take are a
    :class:`ConfigError` that names them."""
    keywords, problem = _call_shape(fn, tuple(kwargs))
    if problem is not None:
        name = getattr(fn, "__name__", repr(fn))
        raise ConfigError(f"metric '{name}': {problem} (metric_list options: {sorted(kwargs)})")
    args: tuple[Any, ...] = () if keywords else (references[0], predictions[0])
    call_kwargs = {"references": references, "predictions": predictions, **kwargs} if keywords else kwargs
    value = fn(*args, **call_kwargs)
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    return value
