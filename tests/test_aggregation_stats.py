"""Error bars attached by the evaluator (``lmms_eval.aggregation``), end to end with the dummy model.

Every expected number is recomputed here from the per-document scores in the samples file, with
scipy (``sem``, ``t.interval``), a numpy transcription of Miller (2024) eq. 4, a plain-loop
bootstrap, or by hand (stability metrics, group errors).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

import lmms_eval
from lmms_eval.api.instance import GenerationResult, Instance
from lmms_eval.models.simple.dummy import DummySimple
from lmms_eval.tasks import TaskManager

N_DOCS = 40
VIDEOS = [f"v{i}" for i in (0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 4, 4, 4, 4)]  # uneven clusters

DATA = "\n".join(
    json.dumps(
        {
            "question": f"q{i}",
            "answer": ("yes", "no", "maybe")[i % 3],
            "category": f"c{i % 4}",
            "video": VIDEOS[i % len(VIDEOS)] + ("a" if i < 20 else "b"),
            "same": "one",
        }
    )
    for i in range(N_DOCS)
)

UTILS = '''
def process_results(doc, results):
    pred = results[0].strip()
    ok = pred == doc["answer"]
    return {"by_cat": {"cat": doc["category"], "ok": ok}, "score": float(ok)}


def per_category(items):
    cats = {}
    for item in items:
        cats.setdefault(item["cat"], []).append(item["ok"])
    return sum(sum(v) / len(v) for v in cats.values()) / len(cats)


def mean(items):
    """A percentage that happens to be called mean."""
    return 100.0 * sum(items) / len(items)
'''

BASE = """dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_text: question
doc_to_target: answer
"""


@pytest.fixture
def manager(write_files, tmp_path: Path) -> TaskManager:
    em_f1 = "metric_list:\n  - metric: exact_match\n  - metric: f1\n"
    root = write_files(
        {
            "s/data.jsonl": DATA,
            "s/utils.py": UTILS,
            "s/em.yaml": f"task: em\n{BASE}{em_f1}",
            "s/mac.yaml": f"task: mac\n{BASE}process_results: !function utils.process_results\n"
            "metric_list:\n  - metric: by_cat\n    aggregation: !function utils.per_category\n"
            "  - metric: score\n    aggregation: mean\n",
            "s/cl.yaml": f"task: cl\n{BASE}cluster_key: video\n{em_f1}",
            "s/one.yaml": f"task: one\n{BASE}cluster_key: same\nmetric_list:\n  - metric: exact_match\n",
            "s/rep.yaml": f"task: rep\n{BASE}repeats: 4\nmetric_list:\n  - metric: exact_match\n",
            "s/pct.yaml": f"task: pct\n{BASE}metric_list:\n  - metric: exact_match\n"
            "    aggregation: !function utils.mean\n",
            "s/grp.yaml": "group: grp\ntask:\n  - em\n  - cl\naggregate_metric_list:\n"
            "  - metric: exact_match\n    weight_by_size: true\n",
            "s/grp_plain.yaml": "group: grp_plain\ntask:\n  - em\n  - rep\naggregate_metric_list:\n"
            "  - metric: exact_match\n    weight_by_size: false\n",
        },
        tmp_path / "tasks",
    )
    return TaskManager(include_path=str(root), include_defaults=False)


def evaluate(
    manager: TaskManager, tasks: list[str], out: Path, model: Any = "dummy", **kwargs: Any
) -> dict[str, Any]:
    model_args = "answer_field=answer,accuracy=0.6" if model == "dummy" else None
    return lmms_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=tasks,
        task_manager=manager,
        output_path=str(out),
        log_samples=True,
        show_progress=False,
        **kwargs,
    )


def samples(out: Path, task: str) -> list[dict[str, Any]]:
    path = next(out.rglob(f"*_samples_{task}.jsonl"))
    return sorted((json.loads(line) for line in path.read_text().splitlines()), key=lambda s: s["doc_id"])


def miller_eq4(scores: Sequence[float], clusters: Sequence[Hashable]) -> float:
    s = np.asarray(scores, dtype=float)
    n = s.size
    d = s - s.mean()
    cross = 0.0
    for cluster in set(clusters):
        within = d[[i for i, c in enumerate(clusters) if c == cluster]]
        cross += within.sum() ** 2 - (within**2).sum()
    return math.sqrt(s.var(ddof=1) / n + cross / n**2)


def loop_bootstrap_se(
    aggregate: Callable[[list[Any]], float], items: Sequence[Any], iters: int, seed: int
) -> float:
    rng = np.random.default_rng(seed)
    values = [aggregate([items[i] for i in rng.integers(0, len(items), len(items))]) for _ in range(iters)]
    return float(np.std(values, ddof=1))


def per_category(items: Sequence[dict[str, Any]]) -> float:
    cats: dict[str, list[bool]] = {}
    for item in items:
        cats.setdefault(item["cat"], []).append(item["ok"])
    return sum(sum(v) / len(v) for v in cats.values()) / len(cats)


# ------------------------------------------------------------------------------------------------


def test_mean_metric_gets_the_analytic_error_of_the_samples(manager: TaskManager, tmp_path: Path) -> None:
    results = evaluate(manager, ["em"], tmp_path / "o")
    scores = results["results"]["em"]
    per_doc = np.asarray([s["exact_match"] for s in samples(tmp_path / "o", "em")], dtype=float)
    assert per_doc.size == N_DOCS and 0 < per_doc.mean() < 1
    # 0/1 scores: the Wilson interval (statsmodels), recorded per metric
    low, high = proportion_confint(int(per_doc.sum()), N_DOCS, method="wilson")
    assert scores["exact_match,none"] == pytest.approx(per_doc.mean())
    assert scores["exact_match_stderr,none"] == pytest.approx(float(sps.sem(per_doc)), rel=1e-12)
    assert scores["exact_match_ci_lower,none"] == pytest.approx(float(low), rel=1e-12)
    assert scores["exact_match_ci_upper,none"] == pytest.approx(float(high), rel=1e-12)
    assert scores["ci_methods"]["exact_match,none"] == "wilson"
    assert scores["ci_methods"]["f1,none"] == "bootstrap-percentile"
    # f1 (a corpus metric) is bootstrapped: a number, an interval around the value
    assert isinstance(scores["f1_stderr,none"], float) and scores["f1_stderr,none"] > 0
    assert scores["f1_ci_lower,none"] <= scores["f1,none"] <= scores["f1_ci_upper,none"]
    pairs = [tuple(s["f1"]) for s in samples(tmp_path / "o", "em")]
    f1 = _multiclass_f1(pairs)
    assert scores["f1,none"] == pytest.approx(f1)
    assert scores["f1_stderr,none"] == pytest.approx(
        loop_bootstrap_se(_multiclass_f1, pairs, 4000, 1), rel=0.12
    )


def test_ci_method_clopper_pearson_gives_the_exact_interval(manager: TaskManager, tmp_path: Path) -> None:
    results = evaluate(manager, ["em"], tmp_path / "o", ci_method="clopper-pearson")
    scores = results["results"]["em"]
    per_doc = np.asarray([s["exact_match"] for s in samples(tmp_path / "o", "em")], dtype=float)
    low, high = proportion_confint(int(per_doc.sum()), N_DOCS, method="beta")  # Clopper-Pearson
    wilson = proportion_confint(int(per_doc.sum()), N_DOCS, method="wilson")
    assert (low, high) != pytest.approx(wilson)  # the two methods differ here: the test can tell
    assert scores["exact_match_ci_lower,none"] == pytest.approx(float(low), rel=1e-9)
    assert scores["exact_match_ci_upper,none"] == pytest.approx(float(high), rel=1e-9)
    assert scores["ci_methods"]["exact_match,none"] == "clopper-pearson"
    assert scores["ci_methods"]["f1,none"] == "bootstrap-percentile"  # only 0/1 means change
    assert results["config"]["ci_method"] == "clopper-pearson"


def _multiclass_f1(pairs: Sequence[tuple[Any, ...]]) -> float:
    labels = {g for g, _ in pairs} | {p for _, p in pairs}
    scores = []
    for label in labels:
        tp = sum(g == label and p == label for g, p in pairs)
        fp = sum(g != label and p == label for g, p in pairs)
        fn = sum(g == label and p != label for g, p in pairs)
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return sum(scores) / len(scores)


def test_custom_function_aggregation_gets_a_bootstrap_error(manager: TaskManager, tmp_path: Path) -> None:
    results = evaluate(manager, ["mac"], tmp_path / "o")
    scores = results["results"]["mac"]
    items = [s["by_cat"] for s in samples(tmp_path / "o", "mac")]
    value = per_category(items)
    assert scores["by_cat,none"] == pytest.approx(value)
    stderr = scores["by_cat_stderr,none"]
    assert isinstance(stderr, float) and stderr > 0
    assert scores["by_cat_ci_lower,none"] < value < scores["by_cat_ci_upper,none"]
    # 1,000 resamples (the default) against an independent 5,000-resample loop: ~3% noise
    assert stderr == pytest.approx(loop_bootstrap_se(per_category, items, 5000, 3), rel=0.15)
    # the mean metric of the same task stays analytic
    score = np.asarray([s["score"] for s in samples(tmp_path / "o", "mac")])
    assert scores["score_stderr,none"] == pytest.approx(float(sps.sem(score)), rel=1e-12)


def test_cluster_key_adds_the_clustered_error(manager: TaskManager, tmp_path: Path) -> None:
    results = evaluate(manager, ["cl"], tmp_path / "o")
    scores = results["results"]["cl"]
    records = samples(tmp_path / "o", "cl")
    per_doc = [float(s["exact_match"]) for s in records]
    clusters = [s["cluster"] for s in records]
    g = len(set(clusters))
    assert g == 10
    se = miller_eq4(per_doc, clusters)
    # 0/1 scores: Wilson on the effective sample size n / deff, deff = (SE_clustered / SE_plain)^2,
    # kept between n / clusters and 1
    deff = min(max(se**2 / float(sps.sem(per_doc)) ** 2, 1.0), len(per_doc) / g)
    n_eff = len(per_doc) / deff
    low, high = proportion_confint(np.mean(per_doc) * n_eff, n_eff, method="wilson")
    assert scores["exact_match_n_clusters,none"] == g
    assert scores["exact_match_stderr_clustered,none"] == pytest.approx(se, rel=1e-10)
    assert scores["exact_match_ci_lower_clustered,none"] == pytest.approx(low, rel=1e-9)
    assert scores["exact_match_ci_upper_clustered,none"] == pytest.approx(high, rel=1e-9)
    assert scores["ci_methods"]["exact_match_clustered,none"] == "wilson-effective-n"
    # the unclustered keys are still the plain analytic ones
    assert scores["exact_match_stderr,none"] == pytest.approx(float(sps.sem(per_doc)), rel=1e-12)
    # a non-mean aggregation gets a cluster bootstrap
    assert scores["f1_n_clusters,none"] == g
    assert isinstance(scores["f1_stderr_clustered,none"], float) and scores["f1_stderr_clustered,none"] > 0


def test_a_single_cluster_gives_no_clustered_error(manager: TaskManager, tmp_path: Path) -> None:
    scores = evaluate(manager, ["one"], tmp_path / "o")["results"]["one"]
    assert scores["exact_match_n_clusters,none"] == 1
    assert scores["exact_match_stderr_clustered,none"] == "N/A"
    assert scores["exact_match_ci_lower_clustered,none"] == "N/A"
    assert isinstance(scores["exact_match_stderr,none"], float)


class _VaryingRepeats(DummySimple):
    """Answers each request's k-th repeat right or wrong by a fixed per-doc pattern."""

    PATTERNS = ((1, 1, 1, 1), (1, 1, 0, 0), (1, 0, 0, 0), (0, 0, 0, 0), (1, 1, 1, 0), (0, 1, 1, 1))

    def __init__(self) -> None:
        super().__init__(answer_field="answer")
        self.calls: Counter[tuple[str, int]] = Counter()

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        out: list[str | GenerationResult] = []
        for request in requests:
            key = (request.task_name, request.doc_id)
            k = self.calls[key]
            self.calls[key] += 1
            right = self.PATTERNS[request.doc_id % len(self.PATTERNS)][k % 4]
            out.append(str(self.get_doc(request)["answer"]) if right else "[wrong]")
        return out


def test_repeats_give_stability_metrics(manager: TaskManager, tmp_path: Path) -> None:
    model = _VaryingRepeats()
    scores = evaluate(manager, ["rep"], tmp_path / "o", model=model)["results"]["rep"]
    records = samples(tmp_path / "o", "rep")
    rows = []
    for record in records:
        (responses,) = record["resps"]
        assert len(responses) == 4
        rows.append([float(r == record["target"]) for r in responses])
    # the model really varied: the samples show the patterns it was built with
    assert rows[:6] == [list(map(float, p)) for p in _VaryingRepeats.PATTERNS]
    k, n = 4, len(rows)
    every = [x for row in rows for x in row]
    assert scores["exact_match_expected_accuracy,none"] == pytest.approx(sum(every) / (k * n))
    assert scores["exact_match_consensus_accuracy,none"] == pytest.approx(
        sum(sum(r) > k / 2 for r in rows) / n
    )
    assert scores["exact_match_internal_variance,none"] == pytest.approx(
        sum(statistics.variance(r) for r in rows) / n
    )
    assert scores["exact_match_consistency_rate,none"] == pytest.approx(
        sum(len(set(r)) == 1 for r in rows) / n
    )
    # the headline score is the first response of each doc (take_first)
    first = [row[0] for row in rows]
    assert scores["exact_match,none"] == pytest.approx(sum(first) / n)
    assert scores["exact_match_stderr,none"] == pytest.approx(float(sps.sem(first)), rel=1e-12)


def test_group_error_is_the_error_of_the_weighted_mean(manager: TaskManager, tmp_path: Path) -> None:
    results = evaluate(manager, ["grp"], tmp_path / "o")
    em, cl = results["results"]["em"], results["results"]["cl"]
    group = results["groups"]["grp"]
    w = np.asarray([em["samples"], cl["samples"]], dtype=float)
    w /= w.sum()
    se = math.sqrt((w[0] * em["exact_match_stderr,none"]) ** 2 + (w[1] * cl["exact_match_stderr,none"]) ** 2)
    value = w[0] * em["exact_match,none"] + w[1] * cl["exact_match,none"]
    z = float(sps.norm.ppf(0.975))
    assert group["exact_match,none"] == pytest.approx(value)
    assert group["exact_match_stderr,none"] == pytest.approx(se, rel=1e-12)
    assert group["exact_match_ci_lower,none"] == pytest.approx(value - z * se, rel=1e-9)
    assert group["exact_match_ci_upper,none"] == pytest.approx(value + z * se, rel=1e-9)


def test_plain_group_mean(manager: TaskManager, tmp_path: Path) -> None:
    results = evaluate(manager, ["grp_plain"], tmp_path / "o")
    em, rep = results["results"]["em"], results["results"]["rep"]
    group = results["groups"]["grp_plain"]
    se = math.sqrt(em["exact_match_stderr,none"] ** 2 + rep["exact_match_stderr,none"] ** 2) / 2
    assert group["exact_match,none"] == pytest.approx((em["exact_match,none"] + rep["exact_match,none"]) / 2)
    assert group["exact_match_stderr,none"] == pytest.approx(se, rel=1e-12)


def test_zero_bootstrap_iterations_leave_non_mean_errors_unset(manager: TaskManager, tmp_path: Path) -> None:
    results = evaluate(manager, ["em", "mac", "cl"], tmp_path / "o", bootstrap_iters=0)
    em, mac, cl = (results["results"][t] for t in ("em", "mac", "cl"))
    for scores, metric in ((em, "f1"), (mac, "by_cat"), (cl, "f1")):
        for suffix in ("stderr", "ci_lower", "ci_upper"):
            assert scores[f"{metric}_{suffix},none"] == "N/A"
    assert cl["f1_stderr_clustered,none"] == "N/A"
    # means keep their analytic (and clustered) errors
    assert isinstance(em["exact_match_stderr,none"], float)
    assert isinstance(mac["score_stderr,none"], float)
    assert isinstance(cl["exact_match_stderr_clustered,none"], float)


def test_same_run_twice_gives_identical_error_bars(manager: TaskManager, tmp_path: Path) -> None:
    tasks = ["em", "mac", "cl"]
    first = evaluate(manager, tasks, tmp_path / "a")["results"]
    second = evaluate(manager, tasks, tmp_path / "b")["results"]
    assert first == second
    other_seed = evaluate(manager, tasks, tmp_path / "c", random_seed=7)["results"]
    assert other_seed["em"]["f1,none"] == first["em"]["f1,none"]
    assert other_seed["em"]["f1_stderr,none"] != first["em"]["f1_stderr,none"]  # the bootstrap seed
    assert other_seed["em"]["exact_match_stderr,none"] == first["em"]["exact_match_stderr,none"]


def test_custom_aggregation_named_mean_gets_an_error_bar_on_its_own_scale(
    manager: TaskManager, tmp_path: Path
) -> None:
    scores = evaluate(manager, ["pct"], tmp_path / "o")["results"]["pct"]
    per_doc = np.asarray([s["exact_match"] for s in samples(tmp_path / "o", "pct")], dtype=float)
    assert scores["exact_match,none"] == pytest.approx(100 * per_doc.mean())
    assert (
        scores["exact_match_ci_lower,none"]
        <= scores["exact_match,none"]
        <= scores["exact_match_ci_upper,none"]
    )
    assert scores["exact_match_stderr,none"] == pytest.approx(100 * float(sps.sem(per_doc)), rel=0.15)
