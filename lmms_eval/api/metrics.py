"""Built-in per-document metrics and aggregations (registered by name).

Per-document metrics return a number (or, for corpus metrics, the item the aggregation needs);
aggregations reduce the list of per-document values to one score.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from lmms_eval.api.registry import register_aggregation, register_metric
from lmms_eval.errors import MissingDependencyError

# ------------------------------------------------------------------------------------------------
# Aggregations
# ------------------------------------------------------------------------------------------------


def _numbers(items: Sequence[Any]) -> np.ndarray:
    return np.asarray([float(x) for x in items if x is not None], dtype=float)


@register_aggregation("mean")
def mean(items: Sequence[Any]) -> float:
    values = _numbers(items)
    return float(values.mean()) if values.size else float("nan")


@register_aggregation("median")
def median(items: Sequence[Any]) -> float:
    values = _numbers(items)
    return float(np.median(values)) if values.size else float("nan")


@register_aggregation("perplexity")
def perplexity(items: Sequence[float]) -> float:
    """``exp(-mean log-likelihood)``."""
    return math.exp(-mean(items))


@register_aggregation("weighted_perplexity")
def weighted_perplexity(items: Sequence[tuple[float, float]]) -> float:
    """``exp(-sum ll / sum weight)`` over ``(log-likelihood, words or bytes)`` items."""
    lls = sum(float(ll) for ll, _ in items)
    weights = sum(float(w) for _, w in items)
    return math.exp(-lls / weights)


@register_aggregation("bits_per_byte")
def bits_per_byte(items: Sequence[tuple[float, float]]) -> float:
    lls = sum(float(ll) for ll, _ in items)
    n_bytes = sum(float(b) for _, b in items)
    return -lls / n_bytes / math.log(2)


def _pairs(items: Sequence[tuple[Any, Any]]) -> tuple[np.ndarray, np.ndarray]:
    golds = np.asarray([g for g, _ in items])
    preds = np.asarray([p for _, p in items])
    return golds, preds


@register_aggregation("f1")
def f1_score(items: Sequence[tuple[Any, Any]]) -> float:
    """F1 of ``(gold, pred)`` pairs: binary (positive label 1) for 0/1 labels, macro-averaged otherwise."""
    golds, preds = _pairs(items)
    labels = sorted(set(golds.tolist()) | set(preds.tolist()), key=repr)
    binary = set(labels) <= {0, 1}
    targets = [1] if binary else labels
    scores = []
    for label in targets:
        tp = float(np.sum((preds == label) & (golds == label)))
        fp = float(np.sum((preds == label) & (golds != label)))
        fn = float(np.sum((preds != label) & (golds == label)))
        denominator = 2 * tp + fp + fn
        scores.append(2 * tp / denominator if denominator else 0.0)
    return float(np.mean(scores))


@register_aggregation("matthews_corrcoef")
def matthews_corrcoef(items: Sequence[tuple[Any, Any]]) -> float:
    """Matthews correlation of ``(gold, pred)`` pairs (multi-class form)."""
    golds, preds = _pairs(items)
    labels = sorted(set(golds.tolist()) | set(preds.tolist()), key=repr)
    index = {label: i for i, label in enumerate(labels)}
    confusion = np.zeros((len(labels), len(labels)))
    for g, p in zip(golds.tolist(), preds.tolist()):
        confusion[index[g], index[p]] += 1
    t = confusion.sum(axis=1)
    p = confusion.sum(axis=0)
    c = np.trace(confusion)
    s = confusion.sum()
    denominator = math.sqrt(float(s * s - p @ p)) * math.sqrt(float(s * s - t @ t))
    return float((c * s - t @ p) / denominator) if denominator else 0.0


@register_aggregation("brier_score")
def brier_score(items: Sequence[tuple[int, Sequence[float]]]) -> float:
    """Mean squared distance between the choice probabilities and the one-hot gold."""
    total = 0.0
    for gold, probs in items:
        onehot = np.zeros(len(probs))
        onehot[int(gold)] = 1.0
        total += float(np.sum((np.asarray(probs, dtype=float) - onehot) ** 2))
    return total / len(items)


def _sacrebleu() -> Any:
    try:
        import sacrebleu
    except ImportError:
        raise MissingDependencyError("sacrebleu", "metrics", "the bleu, chrf and ter metrics") from None
    return sacrebleu


def _corpus(items: Sequence[tuple[Any, Any]]) -> tuple[list[list[str]], list[str]]:
    refs = [r if isinstance(r, list) else [r] for r, _ in items]
    preds = [str(p) for _, p in items]
    width = max(len(r) for r in refs)
    # sacrebleu wants one stream per reference position
    streams = [[str(r[i]) if i < len(r) else "" for r in refs] for i in range(width)]
    return streams, preds


@register_aggregation("bleu")
def bleu(items: Sequence[tuple[Any, Any]]) -> float:
    streams, preds = _corpus(items)
    return float(_sacrebleu().corpus_bleu(preds, streams).score)


@register_aggregation("chrf")
def chrf(items: Sequence[tuple[Any, Any]]) -> float:
    streams, preds = _corpus(items)
    return float(_sacrebleu().corpus_chrf(preds, streams).score)


@register_aggregation("ter")
def ter(items: Sequence[tuple[Any, Any]]) -> float:
    streams, preds = _corpus(items)
    return float(_sacrebleu().corpus_ter(preds, streams).score)


@register_aggregation("bypass")
def bypass_agg(items: Sequence[Any]) -> None:
    return None


# ------------------------------------------------------------------------------------------------
# Per-document metrics
# ------------------------------------------------------------------------------------------------


def _passthrough(items: Any) -> Any:
    return items


for _name, _agg, _hib, _types in (
    ("acc", "mean", True, ("loglikelihood", "multiple_choice")),
    ("acc_norm", "mean", True, ("multiple_choice",)),
    ("acc_mutual_info", "mean", True, ("multiple_choice",)),
    ("perplexity", "perplexity", False, ("loglikelihood",)),
    ("word_perplexity", "weighted_perplexity", False, ("loglikelihood",)),
    ("byte_perplexity", "weighted_perplexity", False, ("loglikelihood",)),
    ("bits_per_byte", "bits_per_byte", False, ("loglikelihood",)),
    ("f1", "f1", True, ("multiple_choice", "generate_until")),
    ("mcc", "matthews_corrcoef", True, ("multiple_choice", "generate_until")),
    ("brier_score", "brier_score", False, ("multiple_choice",)),
    ("bleu", "bleu", True, ("generate_until",)),
    ("chrf", "chrf", True, ("generate_until",)),
    ("ter", "ter", False, ("generate_until",)),
):
    register_metric(_name, _agg, _hib, _types)(_passthrough)


@register_metric(
    "bypass",
    aggregation="bypass",
    higher_is_better=None,
    output_type=("generate_until", "loglikelihood", "multiple_choice"),
)
def bypass(*args: Any, **kwargs: Any) -> None:
    return None


_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_DIGIT_TABLE = str.maketrans("", "", string.digits)


def _normalise_for_match(
    text: str,
    regexes_to_ignore: Sequence[str] | None,
    ignore_case: bool,
    ignore_punctuation: bool,
    ignore_numbers: bool,
) -> str:
    for pattern in regexes_to_ignore or ():
        text = re.sub(pattern, "", text)
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
    regexes_to_ignore: Sequence[str] | None = None,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
) -> float:
    """Fraction of predictions equal to their reference after the chosen normalisations."""
    if len(predictions) != len(references):
        raise ValueError("exact_match needs as many predictions as references")
    if not predictions:
        return float("nan")
    hits = 0
    for pred, ref in zip(predictions, references):
        a = _normalise_for_match(
            str(pred), regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers
        )
        b = _normalise_for_match(str(ref), regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers)
        hits += a == b
    return hits / len(predictions)


@register_metric(
    "exact_match",
    aggregation="mean",
    higher_is_better=True,
    output_type=("generate_until", "generate_until_multi_round"),
)
def exact_match(references: Sequence[Any], predictions: Sequence[Any], **kwargs: Any) -> float:
    return exact_match_hf(predictions=predictions, references=references, **kwargs)


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions all cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def anls_score(prediction: str, references: Sequence[str], threshold: float = 0.5) -> float:
    """Average Normalized Levenshtein Similarity of one prediction against its references.

    Both sides are lower-cased with whitespace collapsed; the best reference counts; a similarity
    below ``threshold`` scores 0.
    """
    pred = " ".join(str(prediction).strip().lower().split())
    best = 0.0
    for ref in references:
        gold = " ".join(str(ref).strip().lower().split())
        longest = max(len(pred), len(gold))
        similarity = 1.0 - (levenshtein(pred, gold) / longest if longest else 0.0)
        best = max(best, similarity)
    return best if best >= threshold else 0.0


@register_metric("anls", aggregation="mean", higher_is_better=True, output_type=("generate_until",))
def anls(
    references: Sequence[Any], predictions: Sequence[Any], thresh_hold: float = 0.5, **kwargs: Any
) -> float:
    refs = references[0] if references and isinstance(references[0], list) else references
    return anls_score(str(predictions[0]), [str(r) for r in refs], kwargs.get("threshold", thresh_hold))
