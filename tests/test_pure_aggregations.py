"""Custom aggregations are called once: only aggregations known to be pure are bootstrapped.

An aggregation that writes a file (or calls a judge) must run exactly once, for the score; its
error bar is the interval of the mean per-document score when one exists, else ``N/A`` with the
reason in the task's ``stderr_notes``. Built-ins, ``@pure_aggregation`` and recognised arithmetic
are resampled as before.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

import lmms_eval
from lmms_eval.api.metrics import f1_score, mean
from lmms_eval.stats import pure_aggregation, purity, recognised_arithmetic, vectorised
from lmms_eval.tasks import TaskManager

N_DOCS = 30
DATA = "\n".join(
    json.dumps({"question": f"q{i}", "answer": ("yes", "no")[i % 2], "video": f"v{i % 6}"})
    for i in range(N_DOCS)
)

UTILS = """
import os

from lmms_eval.stats import pure_aggregation

CALLS = os.path.join(os.path.dirname(__file__), "calls.log")


def _note(name):
    with open(CALLS, "a") as handle:  # a side effect the bootstrap must not repeat
        handle.write(name + "\\n")


def write_and_mean(items):
    _note("write_and_mean")
    return sum(items) / len(items)


def write_and_percent(items):
    _note("write_and_percent")
    return 100.0 * sum(items) / len(items)


def write_and_count(items):
    _note("write_and_count")
    return float(sum(items))  # a total: not on the scale of the per-document scores


def write_categories(items):
    _note("write_categories")
    return {"first_half": sum(items[: len(items) // 2]), "all": sum(items) / len(items)}


@pure_aggregation
def declared_pure(items):
    _note("declared_pure")  # counts the calls; declared pure, so the bootstrap may repeat it
    ordered = sorted(items)
    return ordered[len(ordered) // 2] if len(ordered) % 2 else sum(ordered[len(ordered) // 2 - 1 : len(ordered) // 2 + 1]) / 2

"""

BASE = """dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_text: question
doc_to_target: answer
"""


def _task(name: str, aggregation: str, extra: str = "") -> str:
    return (
        f"task: {name}\n{BASE}{extra}metric_list:\n  - metric: exact_match\n"
        f"    aggregation: !function utils.{aggregation}\n"
    )


@pytest.fixture
def tree(write_files, tmp_path: Path) -> Path:
    return write_files(
        {
            "t/data.jsonl": DATA,
            "t/utils.py": UTILS,
            "t/once.yaml": _task("once", "write_and_mean"),
            "t/percent.yaml": _task("percent", "write_and_percent"),
            "t/count.yaml": _task("count", "write_and_count"),
            "t/cats.yaml": _task("cats", "write_categories"),
            "t/clustered.yaml": _task("clustered", "write_and_mean", "cluster_key: video\n"),
            "t/pure.yaml": _task("pure", "declared_pure"),
        },
        tmp_path / "tasks",
    )


def _run(tree: Path, tasks: list[str], out: Path, iters: int = 1000) -> dict[str, Any]:
    return lmms_eval.simple_evaluate(
        model="dummy",
        model_args="answer_field=answer,accuracy=0.6",
        tasks=tasks,
        task_manager=TaskManager(include_path=str(tree), include_defaults=False),
        output_path=str(out),
        log_samples=True,
        show_progress=False,
        bootstrap_iters=iters,
    )


def _calls(tree: Path) -> list[str]:
    path = tree / "t" / "calls.log"
    return path.read_text().split() if path.exists() else []


def _per_doc(out: Path, task: str) -> np.ndarray:
    path = next(out.rglob(f"*_samples_{task}.jsonl"))
    return np.asarray(
        [json.loads(line)["exact_match"] for line in path.read_text().splitlines()], dtype=float
    )


def test_an_aggregation_that_writes_files_is_called_exactly_once(tree: Path, tmp_path: Path) -> None:
    scores = _run(tree, ["once"], tmp_path / "o")["results"]["once"]
    assert _calls(tree) == ["write_and_mean"]
    per_doc = _per_doc(tmp_path / "o", "once")
    # the score is the mean per-document score: its interval is the analytic one
    assert scores["exact_match,none"] == pytest.approx(per_doc.mean())
    assert scores["exact_match_stderr,none"] == pytest.approx(float(sps.sem(per_doc)), rel=1e-12)
    assert (
        scores["exact_match_ci_lower,none"] < scores["exact_match,none"] < scores["exact_match_ci_upper,none"]
    )
    note = scores["stderr_notes"]["exact_match,none"]
    assert "write_and_mean" in note and "not known to be pure" in note and "per-document" in note


def test_a_percentage_gets_the_per_document_interval_times_100(tree: Path, tmp_path: Path) -> None:
    scores = _run(tree, ["percent"], tmp_path / "o")["results"]["percent"]
    assert _calls(tree) == ["write_and_percent"]
    per_doc = _per_doc(tmp_path / "o", "percent")
    assert scores["exact_match,none"] == pytest.approx(100 * per_doc.mean())
    assert scores["exact_match_stderr,none"] == pytest.approx(100 * float(sps.sem(per_doc)), rel=1e-12)


def test_a_score_on_another_scale_has_no_interval_and_says_why(tree: Path, tmp_path: Path) -> None:
    result = _run(tree, ["count", "cats"], tmp_path / "o")
    assert sorted(_calls(tree)) == ["write_and_count", "write_categories"]
    count = result["results"]["count"]
    assert count["exact_match,none"] == pytest.approx(_per_doc(tmp_path / "o", "count").sum())
    assert count["exact_match_stderr,none"] == "N/A"
    assert count["exact_match_ci_lower,none"] == "N/A"
    assert "no interval" in count["stderr_notes"]["exact_match,none"]
    cats = result["results"]["cats"]  # named sub-scores: each judged on its own
    assert cats["first_half_stderr,none"] == "N/A"
    assert isinstance(cats["all_stderr,none"], float)
    assert set(cats["stderr_notes"]) == {"first_half,none", "all,none"}
    # the notes survive the results schema
    saved = json.loads(next((tmp_path / "o").rglob("*_results.json")).read_text())
    assert saved["results"]["count"]["stderr_notes"] == count["stderr_notes"]


def test_clustered_error_of_a_non_pure_aggregation_comes_from_the_per_document_scores(
    tree: Path, tmp_path: Path
) -> None:
    scores = _run(tree, ["clustered"], tmp_path / "o")["results"]["clustered"]
    assert _calls(tree) == ["write_and_mean"]
    assert scores["exact_match_n_clusters,none"] == 6
    assert isinstance(scores["exact_match_stderr_clustered,none"], float)


def test_a_declared_pure_aggregation_is_bootstrapped(tree: Path, tmp_path: Path) -> None:
    scores = _run(tree, ["pure"], tmp_path / "o", iters=200)["results"]["pure"]
    assert "stderr_notes" not in scores
    assert isinstance(scores["exact_match_stderr,none"], float) and scores["exact_match_stderr,none"] > 0
    assert len(_calls(tree)) > 200  # once for the score, then once per resample


# -- the purity rules ------------------------------------------------------------------------------


def _arith_mean(items: list[float]) -> float:
    return sum(items) / len(items)


def _macro(items: list[dict[str, Any]]) -> float:
    cats: dict[str, list[float]] = {}
    for item in items:
        cats.setdefault(item["cat"], []).append(item["ok"])
    return math.fsum(sum(v) / len(v) for v in cats.values()) / len(cats)


def _uses_helper(items: list[float]) -> float:
    return _arith_mean([2 * x for x in items])


_CACHE: dict[str, float] = {}


def _fills_global_cache(items: list[float]) -> float:
    _CACHE["last"] = sum(items)
    return _CACHE["last"]


def _writes(items: list[float]) -> float:
    with open("scores.txt", "w") as handle:
        handle.write(str(items))
    return 0.0


def _judge(items: list[float]) -> float:
    return float(json.loads(json.dumps(items))[0])  # any call outside the known-pure list


def _submission(items: list[Any], context: Any) -> None:
    context.write_json("submission.json", items)


def _prints(items: list[float]) -> float:
    print(items)
    return 0.0


@pure_aggregation
def _declared(items: list[Any]) -> float:
    return float(len(json.dumps(items)))


@vectorised(lambda items, idx: np.asarray(items, dtype=float)[idx].mean(axis=1))
def _with_batch(items: list[float]) -> float:
    return float(np.mean(np.asarray(items, dtype=float)))


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (mean, "built-in"),
        (f1_score, "built-in"),
        (_declared, "declared"),
        (_with_batch, "declared"),
        (_arith_mean, "arithmetic"),
        (_macro, "arithmetic"),
        (_uses_helper, "arithmetic"),
        (_fills_global_cache, None),
        (_writes, None),
        (_judge, None),
        (_submission, None),
        (_prints, None),
        (lambda items: 1.0, None),  # no readable definition
    ],
)
def test_purity_of_aggregations(fn: Any, expected: str | None) -> None:
    assert purity(fn) == expected


def test_recognised_arithmetic_needs_readable_source() -> None:
    namespace: dict[str, Any] = {}
    exec("def made_up(items):\n    return sum(items)\n", namespace)
    assert recognised_arithmetic(namespace["made_up"]) is False
    assert recognised_arithmetic(_arith_mean) is True


def _aggregation_of(task: Any, metric: str) -> Any:
    from lmms_eval.api.registry import get_aggregation

    entry = next(m for m in task.config.metric_list if m.name == metric)
    agg = entry.aggregation
    return agg if callable(agg) else get_aggregation(agg or "mean")


def test_every_bundled_main_metric_gets_an_error_bar() -> None:
    """Each bundled benchmark's headline metric is resampled (built-in, declared pure or plain
    arithmetic) or is a hidden-answer submission file, which has no score to put a bar on."""
    from lmms_eval.tasks.catalog import benchmark_rows

    manager = TaskManager()
    unbarred = []
    for row in benchmark_rows(manager):
        task = manager._loader.load(row.task)
        names = [m.name for m in task.config.metric_list]
        for key in row.metrics:
            if key.split(",")[0] not in names:  # coco2017_cap_test: only a submission file, no score
                assert key == "submission", (row.task, key)
                continue
            fn = _aggregation_of(task, key.split(",")[0])
            if purity(fn) is None and "submission" not in fn.__qualname__ and not _a_mean(fn):
                unbarred.append(f"{row.task}: {key} ({fn.__qualname__})")
    assert not unbarred


def _a_mean(fn: Any) -> bool:
    """Whether ``fn`` (run once: AIR-Bench's logs its breakdown) scores the mean per-document score,
    so the run reports the interval of that mean (``aggregation.per_document_estimate``)."""
    from lmms_eval.aggregation import per_document_estimate

    items = [{"score": float(i % 3 == 0), "task": f"t{i % 2}"} for i in range(30)]
    try:
        value = fn(items)
    except (KeyError, TypeError, ValueError):  # not an aggregation over per-document scores
        return False
    return math.isfinite(per_document_estimate(items, value, "score")[0].stderr)


@pytest.mark.parametrize(
    ("task_name", "extra"), [("librispeech_test_clean", "task"), ("common_voice_15_en", "locale")]
)
def test_corpus_wer_has_a_finite_bootstrap_stderr(task_name: str, extra: str) -> None:
    from lmms_eval.aggregation import estimate_metric

    task = TaskManager()._loader.load(task_name)
    fn = _aggregation_of(task, "wer")
    words = ["the", "cat", "sat", "on", "a", "mat", "today"]
    items = [
        {"gt": " ".join(words[: 3 + i % 4]), "pred": " ".join(words[: 3 + i % 3]), extra: "en"}
        for i in range(40)
    ]
    estimate = estimate_metric(fn, items, fn(items), bootstrap_iters=200, seed=1)
    assert purity(fn) == "declared" and estimate.method == "bootstrap"
    assert (
        math.isfinite(estimate.stderr)
        and estimate.stderr > 0
        and estimate.ci_low <= fn(items) <= estimate.ci_high
    )
