"""The vectorised bootstrap (``lmms_eval.stats.bootstrap``) and the batched built-in aggregations.

Expected values come from a reference bootstrap loop written here (same documented index draws:
``default_rng(seed).integers(0, n, size=(rows, n), dtype=int32)`` in chunks of at most 4,000,000
cells, the aggregation called once per resample), from the plain aggregations applied to
``[items[i] for i in row]``, and from analytic standard errors (scipy).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from lmms_eval.api import metrics
from lmms_eval.api import metrics_batched as _batched  # registers the batched built-ins
from lmms_eval.stats import bootstrap as bootstrap_module
from lmms_eval.stats import (
    bootstrap_estimate,
    cluster_bootstrap_estimate,
    register_batched,
    resolve_batch,
    vectorised,
)

assert _batched  # imported for its registrations

CHUNK_CELLS = 4_000_000


def reference_bootstrap(
    aggregate: Callable[[list[Any]], Any],
    items: Sequence[Any],
    iters: int,
    seed: int,
    alpha: float = 0.05,
    chunk_cells: int = CHUNK_CELLS,
) -> tuple[np.ndarray, float, float, float]:
    """All resampled statistics, their sample std and the percentile interval, by a plain loop."""
    n = len(items)
    rng = np.random.default_rng(seed)
    rows = max(1, min(iters, chunk_cells // n))
    values: list[float] = []
    while len(values) < iters:
        m = min(rows, iters - len(values))
        idx = rng.integers(0, n, size=(m, n), dtype=np.int32)
        values.extend(float(aggregate([items[i] for i in row])) for row in idx)
    samples = np.asarray(values)
    finite = samples[np.isfinite(samples)]
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return samples, float(finite.std(ddof=1)), float(low), float(high)


def assert_matches_reference(
    aggregate: Callable[[list[Any]], Any], items: Sequence[Any], iters: int, seed: int, method: str
) -> None:
    est = bootstrap_estimate(aggregate, items, iters, seed=seed)
    _, se, low, high = reference_bootstrap(aggregate, items, iters, seed)
    assert est.details["bootstrap_method"] == method
    assert est.details["bootstrap_iters"] == iters and est.details["bootstrap_seed"] == seed
    assert est.method == "bootstrap" and est.n == len(items)
    assert est.value == pytest.approx(float(aggregate(list(items))), rel=1e-12)
    assert est.stderr == pytest.approx(se, rel=1e-9)
    assert est.ci_low == pytest.approx(low, rel=1e-9, abs=1e-12)
    assert est.ci_high == pytest.approx(high, rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------------------------------------
# statistical validity and reproducibility
# ------------------------------------------------------------------------------------------------


def test_bootstrap_se_of_a_bernoulli_mean_is_close_to_the_analytic_se() -> None:
    rng = np.random.default_rng(2024)
    draws = (rng.random(2000) < 0.3).astype(float).tolist()
    analytic = float(sps.sem(draws))
    # with 10,000 resamples the bootstrap SE itself has ~0.7% relative noise; 5% is > 6 sigma
    for aggregate in (metrics.mean, lambda r: sum(r) / len(r)):
        est = bootstrap_estimate(aggregate, draws, 10_000, seed=1)
        assert abs(est.stderr / analytic - 1) < 0.05
        # the percentile interval of a mean of 2,000 draws is close to the normal one
        z = float(sps.norm.ppf(0.975))
        assert est.ci_low == pytest.approx(np.mean(draws) - z * analytic, abs=0.15 * analytic)
        assert est.ci_high == pytest.approx(np.mean(draws) + z * analytic, abs=0.15 * analytic)


def test_same_seed_same_result_different_seed_different_result() -> None:
    source = random.Random(5)
    items = [source.random() for _ in range(300)]
    a = bootstrap_estimate(metrics.median, items, 500, seed=7)
    b = bootstrap_estimate(metrics.median, items, 500, seed=7)
    c = bootstrap_estimate(metrics.median, items, 500, seed=8)
    assert a == b
    assert a.stderr != c.stderr
    assert a.value == c.value


def test_percentile_interval_contains_the_point_estimate() -> None:
    rng = np.random.default_rng(9)
    cases: list[tuple[Callable[[list[Any]], Any], list[Any]]] = [
        (metrics.mean, rng.random(200).tolist()),
        (metrics.median, rng.normal(size=151).tolist()),
        (metrics.perplexity, (-rng.random(100) * 3).tolist()),
        (
            metrics.f1_score,
            [(int(g), int(g) if rng.random() < 0.8 else 1 - int(g)) for g in rng.random(300) < 0.5],
        ),
    ]
    for aggregate, items in cases:
        est = bootstrap_estimate(aggregate, items, 2000, seed=3)
        assert est.ci_low <= est.value <= est.ci_high
        assert est.stderr > 0


# ------------------------------------------------------------------------------------------------
# exact agreement with the reference loop (vectorised, auto-batched and loop paths)
# ------------------------------------------------------------------------------------------------


def _scores(seed: int, n: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return (rng.random(n) < 0.6).astype(float).tolist()


def test_auto_batched_sum_over_len() -> None:
    def agg(r: list[float]) -> float:
        return sum(r) / len(r)

    items = _scores(1, 500)
    assert resolve_batch(agg, items)[1] == "vectorised-auto"
    assert_matches_reference(agg, items, 1000, seed=11, method="vectorised-auto")
    # 0/1 ints and bools take the same path
    assert_matches_reference(agg, [int(x) for x in items], 300, seed=2, method="vectorised-auto")
    assert_matches_reference(agg, [bool(x) for x in items], 300, seed=2, method="vectorised-auto")


def test_auto_batched_dict_aggregation() -> None:
    def agg(r: list[dict[str, float]]) -> float:
        return sum(x["score"] for x in r) / len(r)

    rng = np.random.default_rng(4)
    items = [{"score": float(s), "weight": float(w)} for s, w in zip(rng.random(400) < 0.4, rng.random(400))]
    assert resolve_batch(agg, items)[1] == "vectorised-auto"
    assert_matches_reference(agg, items, 800, seed=5, method="vectorised-auto")


def per_category_macro(items: list[dict[str, Any]]) -> float:
    """Macro average over categories of the mean of ``ok`` (groups by a string field)."""
    by_cat: dict[str, list[float]] = {}
    for item in items:
        by_cat.setdefault(item["cat"], []).append(float(item["ok"]))
    return sum(sum(v) / len(v) for v in by_cat.values()) / len(by_cat)


def _category_items(seed: int, n: int, n_cats: int = 5) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    cats = rng.integers(0, n_cats, size=n)
    return [{"cat": f"c{c}", "ok": bool(rng.random() < 0.3 + 0.1 * c)} for c in cats]


def test_grouping_aggregation_falls_back_to_the_loop() -> None:
    items = _category_items(6, 300)
    assert resolve_batch(per_category_macro, items) == (None, "loop")
    assert_matches_reference(per_category_macro, items, 400, seed=21, method="loop")


def test_loop_fallback_over_chunks_draws_the_documented_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    # a small chunk size so that several chunks (and a short last one) are drawn
    monkeypatch.setattr(bootstrap_module, "_MAX_CELLS_PER_CHUNK", 1000)
    items = _category_items(8, 120)  # 8 rows per chunk, 50 resamples -> 6 full chunks + 2 rows
    est = bootstrap_estimate(per_category_macro, items, 50, seed=4)
    _, se, low, high = reference_bootstrap(per_category_macro, items, 50, seed=4, chunk_cells=1000)
    assert est.details["bootstrap_method"] == "loop"
    assert est.stderr == pytest.approx(se, rel=1e-12)
    assert (est.ci_low, est.ci_high) == pytest.approx((low, high), rel=1e-12)


def test_vectorised_path_over_several_real_chunks() -> None:
    # n = 50,000: 80 resamples per 4,000,000-cell chunk, so 130 resamples take two chunks
    items = _scores(3, 50_000)
    assert_matches_reference(lambda r: sum(r) / len(r), items, 130, seed=99, method="vectorised-auto")


def test_vectorised_decorator() -> None:
    def batch(items: Sequence[dict[str, Any]], idx: np.ndarray) -> np.ndarray:
        cats = sorted({x["cat"] for x in items})
        code = np.asarray([cats.index(x["cat"]) for x in items])
        ok = np.asarray([float(x["ok"]) for x in items])
        k = len(cats)
        rows = idx.shape[0]
        cells = (np.arange(rows)[:, None] * k + code[idx]).ravel()
        counts = np.bincount(cells, minlength=rows * k).reshape(rows, k)
        hits = np.bincount(cells, weights=ok[idx].ravel(), minlength=rows * k).reshape(rows, k)
        present = counts > 0
        means = np.where(present, hits / np.maximum(counts, 1), 0.0)
        return means.sum(axis=1) / present.sum(axis=1)

    @vectorised(batch)
    def macro(items: list[dict[str, Any]]) -> float:
        return per_category_macro(items)

    items = _category_items(12, 250, n_cats=6)
    assert resolve_batch(macro, items) == (batch, "vectorised")
    assert_matches_reference(macro, items, 600, seed=8, method="vectorised")
    # the undecorated function gives the same numbers through the loop
    loop = bootstrap_estimate(per_category_macro, items, 600, seed=8)
    vec = bootstrap_estimate(macro, items, 600, seed=8)
    assert loop.stderr == pytest.approx(vec.stderr, rel=1e-12)


def test_register_batched_and_bootstrap_batch_attribute() -> None:
    def agg(r: list[float]) -> float:
        return max(r)  # not auto-batchable (max over arrays is ambiguous)

    items = [float(x) for x in range(20)]
    assert resolve_batch(agg, items)[1] == "loop"

    def batch(values: Sequence[float], idx: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float)[idx].max(axis=1)

    register_batched(agg, batch)
    assert resolve_batch(agg, items) == (batch, "vectorised")
    assert_matches_reference(agg, items, 200, seed=1, method="vectorised")

    def other(r: list[float]) -> float:
        return min(r)

    def other_batch(values: Sequence[float], idx: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float)[idx].min(axis=1)

    other.bootstrap_batch = other_batch  # type: ignore[attr-defined]
    assert resolve_batch(other, items) == (other_batch, "vectorised")


def test_aggregations_that_cannot_take_batches_are_not_auto_batched() -> None:
    items = _scores(2, 50)
    rejected: list[Callable[[list[float]], Any]] = [
        lambda r: max(r),
        lambda r: sorted(r)[len(r) // 2],
        lambda r: float(np.mean(r)),  # reduces the whole batch to one number
        lambda r: sum(1 for x in r if x > 0.5) / len(r),
        lambda r: len(set(r)),
    ]
    for agg in rejected:
        assert resolve_batch(agg, items)[1] == "loop"
        assert_matches_reference(agg, items, 60, seed=3, method="loop")


# ------------------------------------------------------------------------------------------------
# every built-in batched aggregation equals the plain one on random index matrices
# ------------------------------------------------------------------------------------------------


def _check_batched(
    aggregate: Callable[..., Any], items: Sequence[Any], seeds: int = 5, rows: int = 40
) -> None:
    batch, how = resolve_batch(aggregate, items)
    assert how == "vectorised" and batch is not None
    n = len(items)
    for seed in range(seeds):
        idx = np.random.default_rng(seed).integers(0, n, size=(rows, n), dtype=np.int32)
        with np.errstate(all="ignore"):
            got = np.asarray(batch(items, idx), dtype=float)
        want = np.asarray([aggregate([items[i] for i in row]) for row in idx], dtype=float)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)


def test_batched_mean_median_perplexity() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(0.5, 0.2, size=31).tolist()
    _check_batched(metrics.mean, values)
    _check_batched(metrics.median, values)
    _check_batched(metrics.median, values[:30])  # even length: average of the two middle values
    _check_batched(metrics.perplexity, (-rng.random(25) * 4).tolist())
    with_none: list[Any] = [*values[:10], None, None, *values[10:20]]
    _check_batched(metrics.mean, with_none)
    _check_batched(metrics.median, with_none)
    # overflow: exp(-mean) of very negative log-likelihoods is inf in both forms
    _check_batched(metrics.perplexity, [-800.0, -900.0, -750.0])


def test_batched_weighted_perplexity_and_bits_per_byte() -> None:
    rng = np.random.default_rng(1)
    pairs = [(float(-rng.random() * 30), int(rng.integers(1, 20))) for _ in range(30)]
    _check_batched(metrics.weighted_perplexity, pairs)
    _check_batched(metrics.bits_per_byte, pairs)
    # zero weights in some items: resamples with no weight give NaN in both forms
    sparse = [(-3.0, 0), (-2.0, 0), (-4.0, 5)]
    _check_batched(metrics.weighted_perplexity, sparse, seeds=10)
    _check_batched(metrics.bits_per_byte, sparse, seeds=10)


def test_batched_f1_binary_including_resamples_that_lose_a_class() -> None:
    rng = np.random.default_rng(2)
    common = [(int(g), int(g) if rng.random() < 0.7 else 1 - int(g)) for g in rng.random(40) < 0.5]
    _check_batched(metrics.f1_score, common)
    # the positive class is rare: many resamples have no 1 at all (F1 = 0 by convention)
    rare: list[tuple[Any, Any]] = [(0, 0)] * 12 + [(1, 1), (0, 1)]
    _check_batched(metrics.f1_score, rare, seeds=10)
    bools = [(bool(g), bool(p)) for g, p in common]
    _check_batched(metrics.f1_score, bools)


def test_batched_f1_multiclass_including_resamples_that_lose_a_class() -> None:
    rng = np.random.default_rng(3)
    labels = ["cat", "dog", "bird", "fish"]
    pairs = [
        (labels[g], labels[g] if rng.random() < 0.6 else labels[int(rng.integers(0, 4))])
        for g in rng.integers(0, 4, 30)
    ]
    _check_batched(metrics.f1_score, pairs)
    # a class seen once: most resamples lose it, which changes the macro average's denominator
    skewed = [("a", "a")] * 5 + [("b", "b"), ("b", "a"), ("c", "b"), ("a", "c")]
    _check_batched(metrics.f1_score, skewed, seeds=10)
    # labels 0, 1, 2: resamples without the 2 switch to the binary F1 of label 1 in both forms
    mixed: list[tuple[Any, Any]] = [(0, 0), (1, 1), (1, 0), (0, 1), (1, 1), (2, 2), (0, 0), (1, 1)]
    _check_batched(metrics.f1_score, mixed, seeds=10)
    # list labels are made hashable the same way
    listed = [([1, 2], [1, 2]), ([3], [1, 2]), ([3], [3]), ([1, 2], [3])]
    _check_batched(metrics.f1_score, listed)


def test_batched_mcc() -> None:
    rng = np.random.default_rng(4)
    binary = [(int(g), int(g) if rng.random() < 0.75 else 1 - int(g)) for g in rng.random(40) < 0.4]
    _check_batched(metrics.matthews_corrcoef, binary)
    multi = [
        (int(g), int(g) if rng.random() < 0.5 else int(rng.integers(0, 3))) for g in rng.integers(0, 3, 35)
    ]
    _check_batched(metrics.matthews_corrcoef, multi)
    # constant predictions in many resamples: undefined -> 0 in both forms
    degenerate = [(0, 0)] * 8 + [(1, 0), (1, 1)]
    _check_batched(metrics.matthews_corrcoef, degenerate, seeds=10)


def test_batched_brier() -> None:
    rng = np.random.default_rng(5)
    items = []
    for _ in range(25):
        p = rng.random(4)
        items.append((int(rng.integers(0, 4)), (p / p.sum()).tolist()))
    _check_batched(metrics.brier_score, items)


def test_batched_corpus_metrics_bleu_chrf_ter() -> None:
    pytest.importorskip("sacrebleu")
    rng = random.Random(6)
    words = [
        "the",
        "a",
        "cat",
        "dog",
        "sat",
        "on",
        "mat",
        "ran",
        "fast",
        "slow",
        "red",
        "blue",
        "big",
        "small",
        "house",
        "tree",
    ]
    items: list[tuple[Any, Any]] = []
    for i in range(16):
        ref = " ".join(rng.choice(words) for _ in range(rng.randint(4, 9)))
        pred = " ".join(w if rng.random() < 0.7 else rng.choice(words) for w in ref.split())
        refs: Any = [ref, ref.replace("the", "a")] if i % 3 == 0 else ref  # mixed reference counts
        items.append((refs, pred))
    for aggregate in (metrics.bleu, metrics.chrf, metrics.ter):
        _check_batched(aggregate, items, seeds=3, rows=8)


# ------------------------------------------------------------------------------------------------
# edge cases
# ------------------------------------------------------------------------------------------------


def test_fewer_than_two_items_or_no_iterations_give_no_error_bar() -> None:
    for items, iters in (([0.4], 100), ([], 100), ([0.1, 0.9, 0.5], 0), ([0.1, 0.9], -3)):
        est = bootstrap_estimate(metrics.median, items, iters)
        assert math.isnan(est.stderr) and math.isnan(est.ci_low) and math.isnan(est.ci_high)
        assert est.method == "none" and est.details == {"bootstrap_iters": 0}
        assert est.n == len(items)
    assert bootstrap_estimate(metrics.median, [0.1, 0.9, 0.5], 0).value == 0.5
    assert bootstrap_estimate(metrics.median, [0.4], 10).value == 0.4


def test_given_point_value_is_used() -> None:
    est = bootstrap_estimate(metrics.mean, [0.0, 1.0, 1.0, 0.0], 50, value=0.123)
    assert est.value == 0.123


def test_resamples_with_nan_statistics_are_left_out_and_counted() -> None:
    def ratio(r: list[tuple[float, float]]) -> float:
        den = sum(b for _, b in r)
        return sum(a for a, _ in r) / den if den else math.nan

    items = [(1.0, 0.0), (2.0, 0.0), (3.0, 1.0), (1.0, 2.0)]
    est = bootstrap_estimate(ratio, items, 400, seed=13)
    samples, se, low, high = reference_bootstrap(ratio, items, 400, seed=13)
    nan_count = int(np.isnan(samples).sum())
    assert nan_count > 0
    assert est.details["non_finite_resamples"] == nan_count
    assert est.stderr == pytest.approx(se, rel=1e-12)
    assert (est.ci_low, est.ci_high) == pytest.approx((low, high), rel=1e-12)


def test_all_resamples_nan_gives_no_error_bar() -> None:
    est = bootstrap_estimate(lambda r: math.nan, [1, 2, 3], 50)
    assert math.isnan(est.stderr) and math.isnan(est.ci_low)
    assert est.method == "bootstrap"


def test_non_numeric_results_count_as_nan() -> None:
    est = bootstrap_estimate(lambda r: "n/a", [1, 2, 3], 20)
    assert math.isnan(est.value) and math.isnan(est.stderr)


# ------------------------------------------------------------------------------------------------
# cluster bootstrap
# ------------------------------------------------------------------------------------------------


def test_cluster_bootstrap_single_cluster_has_no_error() -> None:
    est = cluster_bootstrap_estimate(metrics.median, [0.1, 0.5, 0.9], ["v", "v", "v"], 100)
    assert est.value == 0.5
    assert math.isnan(est.stderr) and math.isnan(est.ci_low) and math.isnan(est.ci_high)
    assert est.details["n_clusters"] == 1 and est.method == "cluster-bootstrap"
    none = cluster_bootstrap_estimate(metrics.median, [0.1, 0.5], ["a", "b"], 0)
    assert math.isnan(none.stderr)


def test_cluster_bootstrap_with_singleton_clusters_is_the_plain_bootstrap() -> None:
    rng = np.random.default_rng(10)
    items = rng.normal(size=400).tolist()
    plain = bootstrap_estimate(metrics.median, items, 4000, seed=1)
    clustered = cluster_bootstrap_estimate(metrics.median, items, list(range(400)), 4000, seed=2)
    assert clustered.details["n_clusters"] == 400
    # two independent bootstraps of the same statistic: ~3% noise each at 4,000 resamples
    assert clustered.stderr == pytest.approx(plain.stderr, rel=0.1)


def test_cluster_bootstrap_of_a_mean_tracks_the_clustered_standard_error() -> None:
    rng = np.random.default_rng(12)
    clusters = np.repeat(np.arange(60), 8)
    effect = rng.normal(0, 1, size=60)[clusters]
    scores = (rng.random(clusters.size) < 1 / (1 + np.exp(-effect))).astype(float)
    est = cluster_bootstrap_estimate(metrics.mean, scores.tolist(), clusters.tolist(), 3000, seed=3)
    # the analytic cluster-robust SE with equal cluster sizes: sd of cluster means / sqrt(G)
    # (ddof=0, as the bootstrap's plug-in variance)
    analytic = float(scores.reshape(60, 8).mean(axis=1).std(ddof=0) / math.sqrt(60))
    assert est.stderr == pytest.approx(analytic, rel=0.08)
    assert est.stderr > float(sps.sem(scores)) * 1.2  # correlated clusters widen the error
    assert est.ci_low <= est.value <= est.ci_high


def test_cluster_bootstrap_is_reproducible() -> None:
    items = _scores(4, 90)
    clusters = [i // 9 for i in range(90)]
    a = cluster_bootstrap_estimate(metrics.mean, items, clusters, 200, seed=5)
    b = cluster_bootstrap_estimate(metrics.mean, items, clusters, 200, seed=5)
    c = cluster_bootstrap_estimate(metrics.mean, items, clusters, 200, seed=6)
    assert a == b and a.stderr != c.stderr


# ------------------------------------------------------------------------------------------------
# known defect (see the report)
# ------------------------------------------------------------------------------------------------


def test_batched_mean_with_nan_items_equals_the_plain_mean() -> None:
    values = [0.2, math.nan, 0.8, 0.4, 0.6]
    assert metrics.mean(values) == pytest.approx(0.5)  # missing values (None and NaN) are left out
    _check_batched(metrics.mean, values)


def test_batched_forms_live_in_the_generic_registry() -> None:
    from lmms_eval.api import metrics
    from lmms_eval.api.registry import RegistrationError, Registry
    from lmms_eval.stats.bootstrap import BATCHED_STATISTICS

    assert isinstance(BATCHED_STATISTICS, Registry)
    assert "lmms_eval.api.metrics:mean" in BATCHED_STATISTICS.names()
    assert resolve_batch(metrics.mean, [1.0, 2.0])[1] == "vectorised"

    def agg(r: list[float]) -> float:
        return max(r)

    def batch(values: Sequence[float], idx: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float)[idx].max(axis=1)

    def other_batch(values: Sequence[float], idx: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float)[idx].min(axis=1)

    with BATCHED_STATISTICS.isolated(reload=False):
        register_batched(agg, batch)
        register_batched(agg, batch)  # the same definitions again
        with pytest.raises(RegistrationError, match=r"batched statistic .*agg' is already registered"):
            register_batched(agg, other_batch)
        register_batched(agg, other_batch, overwrite=True)
        assert resolve_batch(agg, [1.0, 2.0]) == (other_batch, "vectorised")

        def agg_again(r: list[float]) -> float:  # another function under the registered name
            return min(r)

        agg_again.__qualname__ = agg.__qualname__
        assert resolve_batch(agg_again, [1.0, 2.0])[1] != "vectorised"
    assert resolve_batch(agg, [1.0, 2.0])[1] == "loop"
