"""Vectorised forms of the built-in aggregations, for the bootstrap.

Each ``batch(items, idx)`` returns, for every row of the ``(resamples, n)`` index matrix ``idx``,
exactly what the plain aggregation in :mod:`lmms_eval.api.metrics` returns on
``[items[i] for i in row]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lmms_eval.api import metrics
from lmms_eval.stats import register_batched


def _values(items: Sequence[Any]) -> np.ndarray:
    return np.asarray([math.nan if x is None else float(x) for x in items], dtype=float)


def _batch_mean(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
    return np.nanmean(_values(items)[idx], axis=1)


def _batch_median(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
    return np.nanmedian(_values(items)[idx], axis=1)


def _batch_perplexity(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(-np.nanmean(_values(items)[idx], axis=1))


def _pair_sums(items: Sequence[Any], idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lls = np.asarray([float(a) for a, _ in items])[idx].sum(axis=1)
    weights = np.asarray([float(b) for _, b in items])[idx].sum(axis=1)
    return lls, weights


def _batch_weighted_perplexity(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
    lls, weights = _pair_sums(items, idx)
    with np.errstate(all="ignore"):
        return np.where(weights > 0, np.exp(-lls / weights), np.nan)


def _batch_bits_per_byte(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
    lls, n_bytes = _pair_sums(items, idx)
    with np.errstate(all="ignore"):
        return np.where(n_bytes > 0, -lls / n_bytes / math.log(2), np.nan)


def _codes(items: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    pairs = metrics._label_pairs(items)
    labels = sorted({x for pair in pairs for x in pair}, key=repr)
    index = {label: i for i, label in enumerate(labels)}
    gold = np.asarray([index[g] for g, _ in pairs], dtype=np.int64)
    pred = np.asarray([index[p] for _, p in pairs], dtype=np.int64)
    return gold, pred, labels


def _confusions(items: Sequence[Any], idx: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Per-resample confusion matrices, shape ``(rows, k, k)`` (gold x prediction)."""
    gold, pred, labels = _codes(items)
    k = len(labels)
    rows = idx.shape[0]
    cells = (np.arange(rows)[:, None] * k * k + gold[idx] * k + pred[idx]).ravel()
    return np.bincount(cells, minlength=rows * k * k).reshape(rows, k, k).astype(float), labels


def _batch_f1(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
    confusion, labels = _confusions(items, idx)
    tp = np.diagonal(confusion, axis1=1, axis2=2)
    predicted = confusion.sum(axis=1)
    actual = confusion.sum(axis=2)
    denominator = predicted + actual  # 2tp + fp + fn
    with np.errstate(all="ignore"):
        per_label = np.where(denominator > 0, 2 * tp / denominator, 0.0)
    present = denominator > 0
    macro = per_label.sum(axis=1) / np.maximum(present.sum(axis=1), 1)
    binary_labels = np.asarray([metrics._is_binary({label}) for label in labels])
    binary_rows = ~(present & ~binary_labels).any(axis=1)  # every label of the resample is 0 or 1
    if 1 in labels and bool(binary_labels[labels.index(1)]):
        positive = per_label[:, labels.index(1)]
    else:
        positive = np.zeros(idx.shape[0])
    return np.where(binary_rows, positive, macro)


def _batch_mcc(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
    confusion, _ = _confusions(items, idx)
    t = confusion.sum(axis=2)
    p = confusion.sum(axis=1)
    c = np.trace(confusion, axis1=1, axis2=2)
    s = confusion.sum(axis=(1, 2))
    denominator = np.sqrt(s * s - (p * p).sum(axis=1)) * np.sqrt(s * s - (t * t).sum(axis=1))
    with np.errstate(all="ignore"):
        return np.where(denominator > 0, (c * s - (t * p).sum(axis=1)) / denominator, 0.0)


def _batch_brier(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
    per_item = np.asarray([metrics.brier_score([item]) for item in items])
    return per_item[idx].mean(axis=1)


def _corpus_batch(metric_class: str) -> Any:
    def batch(items: Sequence[Any], idx: np.ndarray) -> np.ndarray:
        sacrebleu = metrics._sacrebleu()
        scorer = getattr(sacrebleu.metrics, metric_class)()
        preds, streams = metrics._corpus(items)
        stats = np.asarray(scorer._extract_corpus_statistics(preds, streams), dtype=float)
        sums = stats[idx].sum(axis=1)
        return np.asarray([scorer._compute_score_from_stats(list(row)).score for row in sums], dtype=float)

    return batch


for _aggregate, _batch in (
    (metrics.mean, _batch_mean),
    (metrics.median, _batch_median),
    (metrics.perplexity, _batch_perplexity),
    (metrics.weighted_perplexity, _batch_weighted_perplexity),
    (metrics.bits_per_byte, _batch_bits_per_byte),
    (metrics.f1_score, _batch_f1),
    (metrics.matthews_corrcoef, _batch_mcc),
    (metrics.brier_score, _batch_brier),
    (metrics.bleu, _corpus_batch("BLEU")),
    (metrics.chrf, _corpus_batch("CHRF")),
    (metrics.ter, _corpus_batch("TER")),
):
    register_batched(_aggregate, _batch)
