"""Built-in per-document metrics and aggregations (registered by name).

Per-document metrics return a number, or, for corpus metrics (f1, mcc, bleu, chrf, ter, the
perplexity family, brier_score), the item their aggregation needs. Aggregations reduce the list
of per-document values of one metric to one score.

Item shapes of the corpus aggregations:

* ``perplexity``: log-likelihoods (floats).
* ``weighted_perplexity`` and ``bits_per_byte``: ``(log-likelihood, words or bytes)`` pairs.
* ``f1`` and ``matthews_corrcoef``: ``(gold, prediction)`` label pairs.
* ``brier_score``: ``(gold index, choice probabilities)`` pairs.
* ``bleu``, ``chrf`` and ``ter``: ``(reference or list of references, prediction)`` pairs.
"""

from __future__ import annotations

import math
import re
import statistics
import string
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from lmms_eval.api.registry import register_aggregation, register_metric
from lmms_eval.errors import MissingDependencyError
from lmms_eval.scoring.text import anls_score, edit_distance

# ------------------------------------------------------------------------------------------------
# Aggregations
# ------------------------------------------------------------------------------------------------


def _numbers(items: Sequence[Any]) -> list[float]:
    """The items as floats; missing values (``None`` and NaN) are left out, as in the error bars."""
    values = (float(x) for x in items if x is not None)
    return [v for v in values if not math.isnan(v)]


def _safe_exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


@register_aggregation("mean")
def mean(items: Sequence[Any]) -> float:
    """Arithmetic mean (``None`` items are left out; NaN when nothing is left)."""
    values = _numbers(items)
    return math.fsum(values) / len(values) if values else math.nan


@register_aggregation("median")
def median(items: Sequence[Any]) -> float:
    """Median (``None`` items are left out; NaN when nothing is left)."""
    values = _numbers(items)
    return float(statistics.median(values)) if values else math.nan


@register_aggregation("perplexity")
def perplexity(items: Sequence[float]) -> float:
    """``exp(-mean log-likelihood)``; ``inf`` when that overflows."""
    value = mean(items)
    return value if math.isnan(value) else _safe_exp(-value)


def _weighted_sums(items: Sequence[tuple[float, float]]) -> tuple[float, float]:
    lls = math.fsum(float(ll) for ll, _ in items)
    weights = math.fsum(float(w) for _, w in items)
    return lls, weights


@register_aggregation("weighted_perplexity")
def weighted_perplexity(items: Sequence[tuple[float, float]]) -> float:
    """``exp(-sum ll / sum weight)`` over ``(log-likelihood, words or bytes)`` items."""
    lls, weights = _weighted_sums(items)
    return _safe_exp(-lls / weights) if weights > 0 else math.nan


@register_aggregation("bits_per_byte")
def bits_per_byte(items: Sequence[tuple[float, float]]) -> float:
    """``-sum ll / sum bytes / ln 2`` over ``(log-likelihood, bytes)`` items."""
    lls, n_bytes = _weighted_sums(items)
    return -lls / n_bytes / math.log(2) if n_bytes > 0 else math.nan


def _label(value: Any) -> Hashable:
    """A hashable form of a label (lists become tuples; numpy scalars become Python numbers)."""
    if isinstance(value, (list, tuple)):
        return tuple(_label(v) for v in value)
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        return value.item()  # a numpy scalar
    return value if isinstance(value, Hashable) else repr(value)


def _label_pairs(items: Sequence[tuple[Any, Any]]) -> list[tuple[Hashable, Hashable]]:
    return [(_label(gold), _label(pred)) for gold, pred in items]


def _is_binary(labels: set[Hashable]) -> bool:
    return all(isinstance(x, (bool, int)) and x in (0, 1) for x in labels)


def _f1_of(pairs: list[tuple[Hashable, Hashable]], label: Hashable) -> float:
    tp = sum(1 for g, p in pairs if g == label and p == label)
    fp = sum(1 for g, p in pairs if g != label and p == label)
    fn = sum(1 for g, p in pairs if g == label and p != label)
    denominator = 2 * tp + fp + fn
    return 2 * tp / denominator if denominator else 0.0


@register_aggregation("f1")
def f1_score(items: Sequence[tuple[Any, Any]]) -> float:
    """F1 of ``(gold, pred)`` pairs.

    Labels that are all 0/1 give the binary F1 of the positive label 1; any other labels give the
    macro average over every label seen in golds or predictions. Undefined ratios count as 0.
    """
    pairs = _label_pairs(items)
    if not pairs:
        return math.nan
    labels = {g for g, _ in pairs} | {p for _, p in pairs}
    if _is_binary(labels):
        return _f1_of(pairs, 1)
    return math.fsum(_f1_of(pairs, label) for label in labels) / len(labels)


@register_aggregation("matthews_corrcoef")
def matthews_corrcoef(items: Sequence[tuple[Any, Any]]) -> float:
    """Matthews correlation of ``(gold, pred)`` pairs, multi-class form; 0 when it is undefined.

    ``(c*s - t.p) / sqrt((s^2 - p.p) * (s^2 - t.t))`` with ``c`` correct predictions, ``s`` items,
    ``t_k`` and ``p_k`` how often label ``k`` is the gold and the prediction.
    """
    pairs = _label_pairs(items)
    if not pairs:
        return math.nan
    labels = {g for g, _ in pairs} | {p for _, p in pairs}
    t = {k: sum(1 for g, _ in pairs if g == k) for k in labels}
    p = {k: sum(1 for _, q in pairs if q == k) for k in labels}
    c = sum(1 for g, q in pairs if g == q)
    s = len(pairs)
    t_dot_p = sum(t[k] * p[k] for k in labels)
    p_dot_p = sum(v * v for v in p.values())
    t_dot_t = sum(v * v for v in t.values())
    denominator = math.sqrt(s * s - p_dot_p) * math.sqrt(s * s - t_dot_t)
    return (c * s - t_dot_p) / denominator if denominator else 0.0


@register_aggregation("brier_score")
def brier_score(items: Sequence[tuple[int, Sequence[float]]]) -> float:
    """Mean over items of the squared distance between choice probabilities and the one-hot gold."""
    if not items:
        return math.nan
    total = 0.0
    for gold, probs in items:
        index = int(gold)
        if not 0 <= index < len(probs):
            raise ValueError(f"brier_score: gold index {index} is out of range for {len(probs)} choices")
        total += math.fsum((float(q) - (1.0 if i == index else 0.0)) ** 2 for i, q in enumerate(probs))
    return total / len(items)


def _sacrebleu() -> Any:
    try:
        import sacrebleu
    except ImportError:
        raise MissingDependencyError("sacrebleu", "metrics", "the bleu, chrf and ter metrics") from None
    return sacrebleu


def _corpus(items: Sequence[tuple[Any, Any]]) -> tuple[list[str], list[list[str | None]]]:
    """Predictions and sacrebleu reference streams (one stream per reference position).

    Docs with fewer references than the most-referenced doc get ``None`` in the extra streams,
    which sacrebleu skips; an empty string would count as a real (empty) reference.
    """
    refs = [[str(x) for x in r] if isinstance(r, (list, tuple)) else [str(r)] for r, _ in items]
    preds = [str(p[0] if isinstance(p, (list, tuple)) and p else p) for _, p in items]
    width = max((len(r) for r in refs), default=0)
    streams: list[list[str | None]] = [[r[i] if i < len(r) else None for r in refs] for i in range(width)]
    return preds, streams


def _corpus_score(method: str, items: Sequence[tuple[Any, Any]]) -> float:
    module = _sacrebleu()
    if not items:
        return math.nan
    preds, streams = _corpus(items)
    scorer: Callable[..., Any] = getattr(module, method)
    return float(scorer(preds, streams).score)


@register_aggregation("bleu")
def bleu(items: Sequence[tuple[Any, Any]]) -> float:
    """sacrebleu corpus BLEU (0-100) of ``(references, prediction)`` items."""
    return _corpus_score("corpus_bleu", items)


@register_aggregation("chrf")
def chrf(items: Sequence[tuple[Any, Any]]) -> float:
    """sacrebleu corpus chrF (0-100) of ``(references, prediction)`` items."""
    return _corpus_score("corpus_chrf", items)


@register_aggregation("ter")
def ter(items: Sequence[tuple[Any, Any]]) -> float:
    """sacrebleu corpus TER (lower is better) of ``(references, prediction)`` items."""
    return _corpus_score("corpus_ter", items)


@register_aggregation("bypass")
def bypass_agg(items: Sequence[Any]) -> None:
    """No score (``--predict_only`` and tasks scored elsewhere)."""
    return None


# ------------------------------------------------------------------------------------------------
# Per-document metrics
# ------------------------------------------------------------------------------------------------


def _passthrough(items: Any) -> Any:
    """Corpus metrics: the built-in scoring builds the item; the aggregation does the work."""
    return items


for _name, _agg, _hib, _types in (
    ("acc", "mean", True, ("loglikelihood", "multiple_choice")),
    ("acc_norm", "mean", True, ("multiple_choice",)),
    ("acc_mutual_info", "mean", True, ("multiple_choice",)),
    ("perplexity", "perplexity", False, ("loglikelihood",)),
    ("word_perplexity", "weighted_perplexity", False, ("loglikelihood",)),
    ("byte_perplexity", "weighted_perplexity", False, ("loglikelihood",)),
    ("bits_per_byte", "bits_per_byte", False, ("loglikelihood",)),
    ("f1", "f1", True, ("multiple_choice", "generate_until", "generate_until_multi_round")),
    ("mcc", "matthews_corrcoef", True, ("multiple_choice", "generate_until", "generate_until_multi_round")),
    ("brier_score", "brier_score", False, ("multiple_choice",)),
    ("bleu", "bleu", True, ("generate_until", "generate_until_multi_round")),
    ("chrf", "chrf", True, ("generate_until", "generate_until_multi_round")),
    ("ter", "ter", False, ("generate_until", "generate_until_multi_round")),
):
    register_metric(_name, _agg, _hib, _types)(_passthrough)


@register_metric(
    "bypass",
    aggregation="bypass",
    higher_is_better=None,
    output_type=("generate_until", "generate_until_multi_round", "loglikelihood", "multiple_choice"),
)
def bypass(*args: Any, **kwargs: Any) -> None:
    return None


_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_DIGIT_TABLE = str.maketrans("", "", string.digits)


def normalise_for_match(
    text: str,
    regexes: Sequence[re.Pattern[str]],
    ignore_case: bool,
    ignore_punctuation: bool,
    ignore_numbers: bool,
) -> str:
    for pattern in regexes:
        text = pattern.sub("", text)
    if ignore_case:
        text = text.lower()
    if ignore_punctuation:
        text = text.translate(_PUNCT_TABLE)
    if ignore_numbers:
        text = text.translate(_DIGIT_TABLE)
    return text


def exact_match_hf(
    predictions: Sequence[Any],
    references: Sequence[Any],
    regexes_to_ignore: Sequence[str] | str | None = None,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
) -> float:
    """Fraction of predictions equal to their reference after the chosen normalisations.

    The normalisations run in the order of the Hugging Face ``exact_match`` metric: remove every
    match of each ``regexes_to_ignore`` pattern, lower-case, drop ASCII punctuation, drop digits.
    A single pattern may be given as a string.
    """
    if len(predictions) != len(references):
        raise ValueError(
            f"exact_match needs as many predictions as references, got {len(predictions)} and {len(references)}"
        )
    if not predictions:
        return math.nan
    patterns = [regexes_to_ignore] if isinstance(regexes_to_ignore, str) else list(regexes_to_ignore or ())
    compiled = [re.compile(p) for p in patterns]
    options = (compiled, ignore_case, ignore_punctuation, ignore_numbers)
    hits = sum(
        normalise_for_match(str(pred), *options) == normalise_for_match(str(ref), *options)
        for pred, ref in zip(predictions, references)
    )
    return hits / len(predictions)


@register_metric(
    "exact_match",
    aggregation="mean",
    higher_is_better=True,
    output_type=("generate_until", "generate_until_multi_round"),
)
def exact_match(
    references: Sequence[Any],
    predictions: Sequence[Any],
    regexes_to_ignore: Sequence[str] | str | None = None,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
) -> float:
    """``exact_match`` for the built-in scoring; the options come from the metric_list entry."""
    return exact_match_hf(
        predictions, references, regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers
    )


levenshtein = edit_distance  # edit distance (insertions, deletions, substitutions all cost 1)


def levenshtein_distance(s1: str, s2: str) -> int:
    """The published name of the edit distance."""
    return edit_distance(s1, s2)


@register_metric(
    "anls",
    aggregation="mean",
    higher_is_better=True,
    output_type=("generate_until", "generate_until_multi_round"),
)
def anls(
    references: Sequence[Any], predictions: Sequence[Any], thresh_hold: float = 0.5, **kwargs: Any
) -> float:
    """ANLS of the first prediction; ``references`` may be ``[gold]`` or ``[[gold, gold, ...]]``."""
    refs: Sequence[Any] = references
    if len(references) == 1 and isinstance(references[0], (list, tuple)):
        refs = references[0]
    prediction = str(predictions[0]) if predictions else ""
    return anls_score(prediction, [str(r) for r in refs], float(kwargs.get("threshold", thresh_hold)))


# the vectorised forms used by the bootstrap register themselves on import
from lmms_eval.api import metrics_batched as _metrics_batched  # noqa: E402,F401
