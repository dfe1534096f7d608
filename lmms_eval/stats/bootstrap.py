"""Vectorised bootstrap for any aggregation known to be pure (the aggregation stage asks
:mod:`lmms_eval.stats.pure` first; others are never called here).

Resample indices are drawn as a ``(resamples, n)`` matrix (in memory-bounded chunks) and the
statistic is computed for a whole chunk at once:

1. aggregations with a batched companion (registered with :func:`register_batched` or the
   :func:`vectorised` decorator: mean, median, perplexity, F1, MCC, Brier, BLEU, ... and our task
   helpers) run fully in numpy;
2. other aggregations of numbers, or of dicts of numbers, are first tried on a batch (a list of
   numpy rows, one per resample) and the batched result is checked against plain calls on a few
   resamples; a function written with ``sum``/``len``/arithmetic (``sum(x) / len(x)``) passes;
3. anything else is called once per resample on the resampled list (still with vectorised index
   generation); the resamples are exactly ``iters``, never silently fewer.

The seed fully determines the resamples, so results are reproducible.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from lmms_eval.api.registry import Registry, path_of
from lmms_eval.stats.estimates import DEFAULT_ALPHA, PERCENTILE, Estimate, cluster_label

logger = logging.getLogger(__name__)

BatchFn = Callable[[Sequence[Any], np.ndarray], np.ndarray]
F = TypeVar("F", bound=Callable[..., Any])

_MAX_CELLS_PER_CHUNK = 4_000_000  # resample-index cells held at once (16 MB of int32)
_SLOW_LOOP_WARNING_S = 30.0


@dataclass(frozen=True)
class BatchedForm:
    """An aggregation and its vectorised form (an entry of :data:`BATCHED_STATISTICS`)."""

    aggregate: Callable[..., Any]
    batch: BatchFn

    def __str__(self) -> str:
        return f"{path_of(self.batch) or self.batch!r} for {path_of(self.aggregate) or self.aggregate!r}"


BATCHED_STATISTICS: Registry[BatchedForm] = Registry(
    "batched statistic", "lmms_eval.stats.register_batched(aggregate, batch)"
)
"""``"module:QualName"`` of an aggregation -> its :class:`BatchedForm`."""


def _key(aggregate: Callable[..., Any]) -> str:
    """The registry name of ``aggregate``: its path, or (objects without one) its type and id."""
    kind = type(aggregate)
    return path_of(aggregate) or f"{kind.__module__}:{kind.__qualname__}@{id(aggregate):x}"


def register_batched(aggregate: Callable[..., Any], batch: BatchFn, overwrite: bool = False) -> None:
    """Declare ``batch(items, idx) -> values`` as the vectorised form of ``aggregate``.

    ``idx`` is an int array of shape ``(resamples, n)``; the result has one value per row and must
    equal ``aggregate([items[i] for i in row])`` for each row. A different batch for an aggregation
    of the same name is an error unless ``overwrite``; the same definitions again are not.
    """
    BATCHED_STATISTICS.register(_key(aggregate), BatchedForm(aggregate, batch), overwrite=overwrite)


def _registered_batch(aggregate: Callable[..., Any]) -> BatchFn | None:
    key = _key(aggregate)
    if key not in BATCHED_STATISTICS:
        return None
    form = BATCHED_STATISTICS.get(key)
    return form.batch if form.aggregate is aggregate else None  # another function of that name


def vectorised(batch: BatchFn) -> Callable[[F], F]:
    """Decorator form of :func:`register_batched` for custom aggregations."""

    def decorate(fn: F) -> F:
        register_batched(fn, batch)
        return fn

    return decorate


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating))  # bool is an int


def _auto_batch(aggregate: Callable[..., Any], items: Sequence[Any]) -> BatchFn | None:
    """A verified batched evaluation for plain arithmetic over numbers or dicts of numbers."""
    if not items:
        return None
    if all(_is_number(x) for x in items):
        values = np.asarray(items, dtype=float)

        def make(idx: np.ndarray) -> Any:
            return list(values[idx].T)  # n rows, each holding that position across the resamples

    elif all(isinstance(x, dict) for x in items):
        keys = list(items[0])
        if not all(list(x) == keys and all(_is_number(v) for v in x.values()) for x in items):
            return None
        columns = {k: np.asarray([x[k] for x in items], dtype=float) for k in keys}

        def make(idx: np.ndarray) -> Any:
            gathered = {k: col[idx].T for k, col in columns.items()}
            return [{k: gathered[k][i] for k in keys} for i in range(idx.shape[1])]

    else:
        return None

    def batch(_: Sequence[Any], idx: np.ndarray) -> np.ndarray:
        return np.asarray(aggregate(make(idx)), dtype=float)

    probe = np.random.default_rng(0).integers(0, len(items), size=(3, len(items)))
    try:
        with np.errstate(all="ignore"):
            batched = batch(items, probe)
        plain = np.asarray([_call(aggregate, [items[i] for i in row]) for row in probe], dtype=float)
    except Exception:  # the function does not take batches (grouping, sorting, truth tests...)
        return None
    if batched.shape != (3,) or not np.allclose(batched, plain, rtol=1e-9, atol=1e-12, equal_nan=True):
        return None
    return batch


def _call(aggregate: Callable[..., Any], sample: list[Any]) -> float:
    value = aggregate(sample)
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    return float(value) if isinstance(value, (int, float, bool)) else math.nan


def resolve_declared_batch(aggregate: Callable[..., Any]) -> BatchFn | None:
    """The vectorised form declared for ``aggregate`` (registered, or its ``bootstrap_batch``)."""
    return _registered_batch(aggregate) or getattr(aggregate, "bootstrap_batch", None)


def resolve_batch(aggregate: Callable[..., Any], items: Sequence[Any]) -> tuple[BatchFn | None, str]:
    """The batched form of ``aggregate`` for these items and how it was found."""
    declared = resolve_declared_batch(aggregate)
    if declared is not None:
        return declared, "vectorised"
    auto = _auto_batch(aggregate, items)
    if auto is not None:
        return auto, "vectorised-auto"
    return None, "loop"


def bootstrap_estimate(
    aggregate: Callable[..., Any],
    items: Sequence[Any],
    iters: int,
    seed: int = 1234,
    alpha: float = DEFAULT_ALPHA,
    value: float | None = None,
) -> Estimate:
    """Bootstrap standard error (std of the resampled statistic) and percentile interval."""
    items = list(items)
    n = len(items)
    point = _call(aggregate, items) if value is None else float(value)
    if n < 2 or iters <= 0:
        return Estimate(point, n=n, method="none", details={"bootstrap_iters": 0})
    batch, how = resolve_batch(aggregate, items)
    rng = np.random.default_rng(seed)
    samples = np.empty(iters, dtype=float)
    rows = max(1, min(iters, _MAX_CELLS_PER_CHUNK // n))
    pool = np.empty(n, dtype=object)
    pool[:] = items
    started = time.perf_counter()
    for start in range(0, iters, rows):
        m = min(rows, iters - start)
        idx = rng.integers(0, n, size=(m, n), dtype=np.int32 if n < 2**31 else np.int64)
        if batch is not None:
            with np.errstate(all="ignore"):
                samples[start : start + m] = batch(items, idx)
        else:
            samples[start : start + m] = [_call(aggregate, pool[row].tolist()) for row in idx]
            _warn_if_slow(aggregate, start + m, iters, started)
    finite = samples[np.isfinite(samples)]
    details = {"bootstrap_iters": iters, "bootstrap_seed": seed, "bootstrap_method": how}
    if finite.size < 2:
        return Estimate(point, n=n, method="bootstrap", details=details)
    stderr = float(finite.std(ddof=1))
    low, high = np.quantile(finite, [alpha / 2.0, 1.0 - alpha / 2.0])
    if finite.size < iters:
        details["non_finite_resamples"] = int(iters - finite.size)
    return Estimate(point, stderr, float(low), float(high), n, "bootstrap", details, interval=PERCENTILE)


_warned: set[int] = set()


def _warn_if_slow(aggregate: Callable[..., Any], done: int, total: int, started: float) -> None:
    if id(aggregate) in _warned or done >= total:
        return
    projected = (time.perf_counter() - started) / done * total
    if projected > _SLOW_LOOP_WARNING_S:
        _warned.add(id(aggregate))
        logger.warning(
            "bootstrapping aggregation %s one resample at a time will take about %.0f s; give it a batched "
            "form with @lmms_eval.stats.vectorised, or lower --bootstrap_iters",
            getattr(aggregate, "__qualname__", aggregate),
            projected,
        )


def cluster_bootstrap_estimate(
    aggregate: Callable[..., Any],
    items: Sequence[Any],
    clusters: Sequence[Any],
    iters: int,
    seed: int = 1234,
    alpha: float = DEFAULT_ALPHA,
) -> Estimate:
    """Bootstrap that resamples whole clusters (with replacement), for non-mean aggregations.

    Each resample draws as many clusters as there are and keeps all items of each drawn cluster;
    the standard error is the std of the resampled statistic. Needs at least two clusters.
    """
    items = list(items)
    groups: dict[str, list[int]] = {}
    for i, cluster in enumerate(clusters):
        groups.setdefault(cluster_label(cluster), []).append(i)
    members = list(groups.values())
    n_clusters = len(members)
    point = _call(aggregate, items)
    details: dict[str, Any] = {"n_clusters": n_clusters, "bootstrap_iters": iters, "bootstrap_seed": seed}
    if n_clusters < 2 or iters <= 0:
        return Estimate(point, n=len(items), method="cluster-bootstrap", details=details)
    rng = np.random.default_rng(seed)
    pool = np.empty(len(items), dtype=object)
    pool[:] = items
    member_arrays = [np.asarray(m) for m in members]
    samples = np.empty(iters, dtype=float)
    started = time.perf_counter()
    for b in range(iters):
        chosen = rng.integers(0, n_clusters, size=n_clusters)
        rows = np.concatenate([member_arrays[c] for c in chosen])
        samples[b] = _call(aggregate, pool[rows].tolist())
        if b % 64 == 63:
            _warn_if_slow(aggregate, b + 1, iters, started)
    finite = samples[np.isfinite(samples)]
    if finite.size < 2:
        return Estimate(point, n=len(items), method="cluster-bootstrap", details=details)
    low, high = np.quantile(finite, [alpha / 2.0, 1.0 - alpha / 2.0])
    return Estimate(
        point,
        float(finite.std(ddof=1)),
        float(low),
        float(high),
        len(items),
        "cluster-bootstrap",
        details,
        interval=PERCENTILE,
    )
