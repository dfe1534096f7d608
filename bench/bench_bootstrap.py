"""Benchmark the vectorised bootstrap of ``lmms_eval.stats`` on custom and built-in aggregations.

Four cases, each timed in-process (median of ``--runs``) with ``bootstrap_estimate``:

a. the seed-style ``def my_aggregate(results): return sum(results) / len(results)`` over 0/1
   scores: no batched form is declared, so the bootstrap verifies and uses auto-batching
   (method ``vectorised-auto``);
b. a per-category macro average over ``{"category", "correct"}`` dict items declared with
   ``@lmms_eval.stats.vectorised(...)`` and a batched form written with ``np.bincount``;
c. the same macro average without a batched form: the bootstrap calls it once per resample
   (method ``loop``), so it runs at a smaller size to show the cost per resample honestly;
d. the built-in ``f1`` aggregation on (gold, prediction) pairs (registered batched form).

Targets: (a) and (b) under 2 s for 10,000 samples x 10,000 resamples. Every case checks its
result: the method used, (a) against the analytic standard error, (b) against (c) on the same
seed and resamples (they must agree to 1e-9), (d) against a plain-Python F1 of the data.
Run: ``python bench/bench_bootstrap.py``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import Stat, fmt_s, machine_line, print_table, verdict  # bench/ is sys.path[0]

import lmms_eval.stats
from lmms_eval.api import metrics
from lmms_eval.api import metrics_batched as _registers_builtins  # noqa: F401
from lmms_eval.stats import Estimate, bootstrap_estimate

TARGET_S = 2.0
SEED = 1234
N_CATEGORIES = 8


def my_aggregate(results: list[float]) -> float:
    """The seed-style custom aggregation (no batched form declared)."""
    return sum(results) / len(results)


def macro_average(items: Sequence[dict[str, Any]]) -> float:
    """Mean of ``correct`` per category, averaged over the categories present."""
    by_category: dict[str, list[float]] = {}
    for item in items:
        by_category.setdefault(item["category"], []).append(float(item["correct"]))
    return sum(sum(v) / len(v) for v in by_category.values()) / len(by_category)


def macro_average_batch(items: Sequence[dict[str, Any]], idx: np.ndarray) -> np.ndarray:
    """``macro_average`` of every resample (row of ``idx``) at once with one ``np.bincount``.

    Each item gets a code ``2 * category + correct``; counting codes per row gives, per category,
    how many resampled items were wrong and right.
    """
    names = sorted({item["category"] for item in items})
    index = {name: i for i, name in enumerate(names)}
    code = np.asarray([2 * index[item["category"]] + bool(item["correct"]) for item in items], dtype=np.int64)
    k2 = 2 * len(names)
    rows = idx.shape[0]
    cells = (np.arange(rows, dtype=np.int64)[:, None] * k2 + code[idx]).ravel()
    counts = np.bincount(cells, minlength=rows * k2).reshape(rows, len(names), 2)
    size = counts.sum(axis=2)
    present = size > 0
    per_category = np.where(present, counts[:, :, 1] / np.maximum(size, 1), 0.0)
    return per_category.sum(axis=1) / present.sum(axis=1)


@lmms_eval.stats.vectorised(macro_average_batch)
def macro_average_vectorised(items: Sequence[dict[str, Any]]) -> float:
    return macro_average(items)


def make_data(n: int) -> tuple[list[float], list[dict[str, Any]], list[tuple[int, int]]]:
    rng = np.random.default_rng(0)
    scores = (rng.random(n) < 0.62).astype(float).tolist()
    categories = rng.integers(0, N_CATEGORIES, size=n)
    correct = rng.random(n) < 0.4 + 0.05 * categories
    items = [{"category": f"cat{c}", "correct": bool(ok)} for c, ok in zip(categories, correct)]
    gold = rng.integers(0, 2, size=n)
    pred = np.where(rng.random(n) < 0.8, gold, 1 - gold)
    pairs = [(int(g), int(p)) for g, p in zip(gold, pred)]
    return scores, items, pairs


def plain_binary_f1(pairs: Sequence[tuple[int, int]]) -> float:
    tp = sum(1 for g, p in pairs if g == 1 and p == 1)
    fp = sum(1 for g, p in pairs if g == 0 and p == 1)
    fn = sum(1 for g, p in pairs if g == 1 and p == 0)
    return 2 * tp / (2 * tp + fp + fn)


@dataclass
class Case:
    label: str
    aggregate: Callable[..., Any]
    items: Sequence[Any]
    iters: int
    method: str
    target: float | None


def time_case(case: Case, runs: int) -> tuple[Stat, Estimate]:
    times: list[float] = []
    estimate: Estimate | None = None
    for _ in range(runs):
        start = time.perf_counter()
        estimate = bootstrap_estimate(case.aggregate, case.items, case.iters, seed=SEED)
        times.append(time.perf_counter() - start)
    assert estimate is not None
    method = estimate.details.get("bootstrap_method")
    if method != case.method:
        raise RuntimeError(f"{case.label}: expected bootstrap method {case.method!r}, got {method!r}")
    if not estimate.stderr > 0:
        raise RuntimeError(f"{case.label}: no standard error ({estimate})")
    return Stat.of(times), estimate


def check_results(cases: Sequence[Case], estimates: Sequence[Estimate], scores: Sequence[float]) -> None:
    """Correctness checks of the timed results (a wrong result stops the script)."""
    analytic = float(np.std(scores, ddof=1) / math.sqrt(len(scores)))
    if abs(estimates[0].stderr / analytic - 1) > 0.05:
        raise RuntimeError(f"(a) bootstrap SE {estimates[0].stderr} is not within 5% of {analytic}")
    loop = cases[2]
    same = bootstrap_estimate(macro_average_vectorised, loop.items, loop.iters, seed=SEED)
    if not math.isclose(same.stderr, estimates[2].stderr, rel_tol=1e-9):
        raise RuntimeError(f"(b) batched SE {same.stderr} differs from the loop's {estimates[2].stderr}")
    f1 = plain_binary_f1(cases[3].items)
    if not math.isclose(estimates[3].value, f1, rel_tol=1e-12):
        raise RuntimeError(f"(d) f1 {estimates[3].value} differs from the plain F1 {f1}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--loop-resamples", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    print(machine_line())
    print(f"numpy {np.__version__}; {args.samples:,} samples; median of {args.runs} runs\n")
    scores, items, pairs = make_data(args.samples)
    n, r = args.samples, args.resamples
    cases = [
        Case("(a) `sum(results) / len(results)`, auto-batched", my_aggregate, scores, r, "vectorised-auto", TARGET_S),
        Case("(b) macro average, `@vectorised` (np.bincount)", macro_average_vectorised, items, r, "vectorised", TARGET_S),
        Case("(c) macro average, no batched form", macro_average, items, args.loop_resamples, "loop", None),
        Case("(d) built-in `f1` (binary pairs)", metrics.f1_score, pairs, r, "vectorised", None),
    ]  # fmt: skip
    rows: list[list[str]] = []
    estimates: list[Estimate] = []
    missed = False
    for case in cases:
        stat, estimate = time_case(case, args.runs)
        estimates.append(estimate)
        per_resample_ms = stat.median / case.iters * 1e3
        ok = verdict(stat.median, case.target)
        missed |= ok == "MISSED"
        rows.append(
            [
                case.label,
                f"{n:,} x {case.iters:,}",
                estimate.details["bootstrap_method"],
                f"{fmt_s(stat.median)} s",
                f"{fmt_s(stat.low)}-{fmt_s(stat.high)} s",
                f"{per_resample_ms:.3f} ms",
                f"{estimate.stderr:.5f}",
                f"< {case.target:g} s" if case.target else "-",
                ok,
            ]
        )
    check_results(cases, estimates, scores)
    print_table(
        [
            "case",
            "samples x resamples",
            "method",
            "median",
            "range",
            "per resample",
            "stderr",
            "target",
            "verdict",
        ],
        rows,
    )
    print(
        "\nall results checked: (a) within 5% of the analytic SE, (b) equal to the loop, (d) equal to plain F1"
    )
    return 1 if (missed and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
