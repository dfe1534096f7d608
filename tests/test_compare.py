"""``lmms-eval compare`` and ``--baseline``: real runs of the dummy model, checked against scipy/statsmodels.

Expected numbers come from the samples files read back here and fed to ``scipy.stats.ttest_rel`` and
statsmodels' cluster-robust OLS, never from the implementation.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from stats_refs import mcnemar_p, newcombe

import lmms_eval
from lmms_eval.cli import main
from lmms_eval.compare import (
    RunScores,
    baseline_comparison,
    compare_runs,
    format_comparison,
    load_doc_scores,
)
from lmms_eval.errors import LmmsEvalError
from lmms_eval.tasks import TaskManager

N_DOCS = 40
DATA = "\n".join(
    json.dumps({"question": f"q{i}", "answer": str(i % 5), "vid": f"v{i // 4}"}) for i in range(N_DOCS)
)
TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_text: question
doc_to_target: answer
"""


@pytest.fixture
def task_root(write_files, tmp_path: Path) -> Path:
    return write_files(
        {
            "t/data.jsonl": DATA,
            "t/plain.yaml": TASK.format(name="plain"),
            "t/clustered.yaml": TASK.format(name="clustered") + "cluster_key: vid\n",
        },
        tmp_path / "tasks",
    )


def run_dummy(root: Path, out: Path, accuracy: float, seed: int, log_samples: bool = True) -> dict[str, Any]:
    return lmms_eval.simple_evaluate(
        model="dummy",
        model_args=f"answer_field=answer,accuracy={accuracy},seed={seed}",
        tasks=["plain", "clustered"],
        task_manager=TaskManager(include_path=str(root), include_defaults=False),
        output_path=str(out),
        log_samples=log_samples,
        show_progress=False,
    )


@pytest.fixture
def runs(task_root: Path, tmp_path: Path) -> tuple[Path, Path]:
    run_dummy(task_root, tmp_path / "run_a", accuracy=0.7, seed=0)
    run_dummy(task_root, tmp_path / "run_b", accuracy=0.45, seed=1)
    return tmp_path / "run_a", tmp_path / "run_b"


def samples_file(run: Path, task: str) -> Path:
    return next(run.rglob(f"*_samples_{task}.jsonl"))


def read_samples(path: Path) -> dict[int, dict[str, Any]]:
    return {r["doc_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def expected_paired(a: list[float], b: list[float], alpha: float = 0.05) -> dict[str, float]:
    """scipy's paired t-test; for 0/1 scores Newcombe's interval, and McNemar's exact test when
    fewer than 25 pairs are discordant."""
    d = np.subtract(a, b)
    ref = sps.ttest_rel(a, b)
    se = d.std(ddof=1) / math.sqrt(d.size)
    half = sps.t.ppf(1 - alpha / 2, d.size - 1) * se
    out = {
        "diff": d.mean(),
        "t": ref.statistic,
        "p": ref.pvalue,
        "lo": d.mean() - half,
        "hi": d.mean() + half,
    }
    if set(a) <= {0, 1} and set(b) <= {0, 1}:
        out["lo"], out["hi"] = newcombe(a, b, alpha)
        if np.count_nonzero(d) < 25:
            out["p"] = mcnemar_p(a, b)
    return out


def expected_clustered(d: np.ndarray, groups: list[str]) -> tuple[float, int]:
    """Miller eq. 4 from statsmodels: undo its G/(G-1) factor, add the ddof=1 diagonal term."""
    sm = pytest.importorskip("statsmodels.api")
    codes = np.unique(groups, return_inverse=True)[1]
    fit = sm.OLS(d, np.ones_like(d)).fit(cov_type="cluster", cov_kwds={"groups": codes})
    g, n = int(codes.max()) + 1, d.size
    e = d - d.mean()
    var = float(fit.bse[0]) ** 2 * (g - 1) / g + float(np.sum(e**2)) / (n**2 * (n - 1))
    return math.sqrt(var), g


def by_task(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["task"]: c for c in payload["comparisons"]}


# ------------------------------------------------------------------------------------------------
# lmms-eval compare A B
# ------------------------------------------------------------------------------------------------


def test_cli_compare_matches_scipy_on_the_samples(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_a, run_b = runs
    out = tmp_path / "cmp" / "report.json"
    assert main(["compare", str(run_a), str(run_b), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    payload = json.loads(out.read_text())
    rows = by_task(payload)
    assert set(rows) == {"plain", "clustered"} and payload["diff"] == "A - B"

    for task in ("plain", "clustered"):
        sa, sb = read_samples(samples_file(run_a, task)), read_samples(samples_file(run_b, task))
        ids = sorted(sa)
        a = [float(sa[i]["exact_match"]) for i in ids]
        b = [float(sb[i]["exact_match"]) for i in ids]
        assert 0 < sum(a) < N_DOCS and a != b  # the two runs really differ
        exp = expected_paired(a, b)
        row = rows[task]
        assert row["unit"] == "points" and row["scale"] == 100 and row["n"] == N_DOCS
        assert row["mean_a"] == pytest.approx(100 * np.mean(a)) and row["mean_b"] == pytest.approx(
            100 * np.mean(b)
        )
        assert row["diff"] == pytest.approx(100 * exp["diff"])
        assert row["t"] == pytest.approx(exp["t"]) and row["p_value"] == pytest.approx(exp["p"], rel=1e-8)
        assert row["ci_lower"] == pytest.approx(100 * exp["lo"]) and row["ci_upper"] == pytest.approx(
            100 * exp["hi"]
        )
        assert row["docs"]["matched"] == N_DOCS and row["docs"]["mismatched"] == 0

    plain, clustered = rows["plain"], rows["clustered"]
    assert plain["n_clusters"] is None and plain["stderr_clustered"] is None
    sa, sb = read_samples(samples_file(run_a, "clustered")), read_samples(samples_file(run_b, "clustered"))
    ids = sorted(sa)
    d = np.array([sa[i]["exact_match"] - sb[i]["exact_match"] for i in ids])
    se_c, g = expected_clustered(d, [sa[i]["cluster"] for i in ids])
    assert clustered["n_clusters"] == g == 10 and clustered["df_clustered"] == 9
    assert clustered["stderr_clustered"] == pytest.approx(100 * se_c, rel=1e-9)
    t_c = d.mean() / se_c
    assert clustered["p_value_clustered"] == pytest.approx(2 * sps.t.sf(abs(t_c), 9), rel=1e-8)
    # 0/1 scores: Newcombe's interval with each half widened by sqrt(deff), deff = (se_c / se)^2 in [1, n/g]
    exp = expected_paired([sa[i]["exact_match"] for i in ids], [sb[i]["exact_match"] for i in ids])
    deff = min(max((se_c / (d.std(ddof=1) / math.sqrt(d.size))) ** 2, 1.0), d.size / g)
    low = d.mean() - math.sqrt(deff) * (d.mean() - exp["lo"])
    assert clustered["ci_method_clustered"] == "newcombe-design-effect"
    assert clustered["ci_lower_clustered"] == pytest.approx(100 * max(low, -1.0), rel=1e-9)
    assert clustered["raw"]["diff"] == pytest.approx(d.mean())  # the fraction beside the points

    assert "Diff = A − B" in printed and f"A: {run_a}" in printed and f"B: {run_b}" in printed
    assert "SE (cl)" in printed and "exact_match,none" in printed
    assert f"{100 * exp['diff']:+.2f}" in printed  # the last task's diff, in points
    assert f"JSON written to {out}" in printed


def test_mismatched_and_missing_docs_are_reported(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run_a, run_b = runs
    file_a, file_b = samples_file(run_a, "plain"), samples_file(run_b, "plain")
    lines_b = [json.loads(x) for x in file_b.read_text().splitlines()]
    for record in lines_b:
        if record["doc_id"] in (3, 7):
            record["doc_hash"] = "0" * 64  # B saw other content for these docs
    file_b.write_text("\n".join(json.dumps(r) for r in lines_b if r["doc_id"] != 10) + "\n")
    file_a.write_text("\n".join(x for x in file_a.read_text().splitlines() if json.loads(x)["doc_id"] != 20))

    report = compare_runs(load_doc_scores(run_a), load_doc_scores(run_b))
    plain = next(c for c in report.comparisons if c.task == "plain")
    docs = plain.docs
    assert (docs.n_a, docs.n_b, docs.matched) == (39, 39, 36)
    assert (docs.mismatched, docs.mismatched_ids) == (2, (3, 7))
    assert (docs.only_a, docs.only_a_ids, docs.only_b, docs.only_b_ids) == (1, (10,), 1, (20,))

    sa, sb = read_samples(file_a), read_samples(samples_file(run_b, "plain"))
    kept = [i for i in range(N_DOCS) if i not in (3, 7, 10, 20)]
    exp = expected_paired([sa[i]["exact_match"] for i in kept], [sb[i]["exact_match"] for i in kept])
    assert plain.raw.n == 36 and plain.raw.p_value == pytest.approx(exp["p"], rel=1e-8)
    assert plain.raw.diff == pytest.approx(exp["diff"]) and plain.result.diff == pytest.approx(
        100 * exp["diff"]
    )

    text = format_comparison(report)
    assert "2 doc(s) with a different doc_hash left out (ids 3, 7)" in text
    assert "1 doc(s) only in A (ids 10)" in text and "1 doc(s) only in B (ids 20)" in text
    row = next(line for line in text.splitlines() if line.startswith("| plain"))
    cells = [c.strip() for c in row.strip("| ").split("|")]
    assert cells[-3:] == ["36", "2", "2"]  # Matched, Unmatched, Mismatched
    clustered = next(c for c in report.comparisons if c.task == "clustered")
    assert clustered.docs.matched == N_DOCS  # the other task is untouched

    assert main(["compare", str(run_a), str(run_b), "--tasks", "plain"]) == 0
    printed = capsys.readouterr().out
    assert "| plain" in printed and "| clustered" not in printed and "ids 3, 7" in printed


def test_results_json_and_samples_file_paths(runs: tuple[Path, Path]) -> None:
    run_a, run_b = runs
    results_a = next(run_a.rglob("*_results.json"))
    whole = compare_runs(load_doc_scores(run_a), load_doc_scores(run_b))
    from_files = compare_runs(load_doc_scores(results_a), load_doc_scores(samples_file(run_b, "plain")))
    assert [c.task for c in from_files.comparisons] == ["plain"]
    assert from_files.tasks_only_a == ("clustered",)
    plain = next(c for c in whole.comparisons if c.task == "plain")
    assert from_files.comparisons[0].raw == plain.raw
    run = load_doc_scores(samples_file(run_b, "clustered"))
    assert run.tasks["clustered"].cluster_key == "vid"  # the config comes from the sibling results JSON
    several = load_doc_scores([samples_file(run_b, "plain"), samples_file(run_b, "clustered")])
    assert set(several.tasks) == {"plain", "clustered"}


def test_a_folder_with_several_runs_is_ambiguous(task_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    older = run_dummy(task_root, out, accuracy=0.2, seed=0)
    newest = run_dummy(task_root, out, accuracy=0.9, seed=0)
    assert len(list(out.rglob("*_results.json"))) == 2
    with pytest.raises(LmmsEvalError, match="holds 2 runs; name the one") as info:
        load_doc_scores(out)
    for result in (older, newest):  # both candidates are listed
        assert result["output_files"]["results"] in str(info.value)
    run = load_doc_scores(newest["output_files"]["results"])  # an explicit file is taken as given
    assert run.results_file == newest["output_files"]["results"]
    assert run.model_name == "dummy" and run.model_args is not None and "accuracy=0.9" in run.model_args
    scores = run.tasks["plain"].scores["exact_match,none"]
    assert np.mean(list(scores.values())) == pytest.approx(newest["results"]["plain"]["exact_match,none"])


def test_errors_are_one_clear_line(
    runs: tuple[Path, Path], task_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_a, run_b = runs
    cases = [
        (["compare", str(tmp_path / "missing"), str(run_b)], "missing: no such file or folder"),
        (["compare", str(run_a), str(run_b), "--tasks", "plian"], "Did you mean 'plain'"),
        (["compare", str(run_a), str(run_b), "--metrics", "exact_mtch"], "Did you mean 'exact_match'"),
        (["compare", str(run_a), str(run_b), "--alpha", "5"], "--alpha must be between 0 and 1"),
    ]
    for argv, message in cases:
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err

    plain_only = samples_file(run_a, "plain")
    other = samples_file(run_b, "clustered")
    assert main(["compare", str(plain_only), str(other)]) == 1
    assert "nothing to compare" in capsys.readouterr().err

    run_dummy(task_root, tmp_path / "no_samples", accuracy=0.5, seed=0, log_samples=False)
    with pytest.raises(LmmsEvalError, match="--log_samples"):
        load_doc_scores(tmp_path / "no_samples")


def test_metrics_filter(runs: tuple[Path, Path]) -> None:
    run_a, run_b = runs
    report = compare_runs(load_doc_scores(run_a), load_doc_scores(run_b), metrics=["exact_match,none"])
    assert {c.key for c in report.comparisons} == {"exact_match,none"}


# ------------------------------------------------------------------------------------------------
# hand-written files: units, score_key, clusters inside metric dicts, unnamed files, bad lines
# ------------------------------------------------------------------------------------------------


def write_run(folder: Path, stamp: str, rows: list[dict[str, Any]], config: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    results = {"results": {"graded": {"alias": "graded"}}, "configs": {"graded": config}, "model_name": "m"}
    (folder / f"{stamp}_results.json").write_text(json.dumps(results))
    (folder / f"{stamp}_samples_graded.jsonl").write_text("\n".join(map(json.dumps, rows)))


def test_score_key_units_and_clusters_from_metric_dicts(tmp_path: Path) -> None:
    values_a = [3.0, 1.5, 4.0, 2.0, 5.0, 2.5]
    values_b = [2.0, 1.0, 4.5, 1.0, 3.0, 2.5]
    config = {"task": "graded", "score_key": "value", "cluster_key": "vid"}

    def rows(values: list[float]) -> list[dict[str, Any]]:
        return [
            {
                "doc_id": i,
                "doc_hash": f"h{i}",
                "filter": "none",
                "graded": {"value": v, "vid": f"v{i // 2}"},
                "label": "text is not a metric",
            }
            for i, v in enumerate(values)
        ]

    write_run(tmp_path / "a", "20250101_000000", rows(values_a), config)
    write_run(tmp_path / "b", "20250101_000000", rows(values_b), config)
    report = compare_runs(load_doc_scores(tmp_path / "a"), load_doc_scores(tmp_path / "b"))
    (row,) = report.comparisons
    exp = expected_paired(values_a, values_b)
    assert row.unit == "units" and row.scale == 1.0 and row.key == "graded,none"
    assert row.result.diff == pytest.approx(exp["diff"]) and row.result.p_value == pytest.approx(exp["p"])
    se_c, g = expected_clustered(np.subtract(values_a, values_b), [f"v{i // 2}" for i in range(6)])
    assert row.result.n_clusters == g == 3 and row.result.stderr_clustered == pytest.approx(se_c)
    text = format_comparison(report)
    assert "| units |" in text and f"{exp['diff']:+.4g}" in text


def test_single_unnamed_files_are_paired_and_bad_lines_named(tmp_path: Path) -> None:
    a, b = tmp_path / "mine.jsonl", tmp_path / "theirs.jsonl"
    a.write_text("\n".join(json.dumps({"doc_id": i, "acc": i % 2}) for i in range(6)))
    b.write_text("\n".join(json.dumps({"doc_id": i, "acc": 1}) for i in range(6)))
    report = compare_runs(load_doc_scores(a), load_doc_scores(b))
    (row,) = report.comparisons
    assert row.task == "mine" and row.task_b == "theirs" and row.docs.unverified == 6
    assert row.result.diff == pytest.approx(-50.0)
    assert any("paired with task 'theirs'" in note for note in report.notes)
    b.write_text('{"doc_id": 0, "acc": 1}\n{"acc": 1\n')
    with pytest.raises(LmmsEvalError, match=r"theirs\.jsonl:2: "):
        load_doc_scores(b)


# ------------------------------------------------------------------------------------------------
# --baseline during a run
# ------------------------------------------------------------------------------------------------


def test_baseline_comparison_keys_in_metric_units(runs: tuple[Path, Path]) -> None:
    run_a, run_b = runs
    current = RunScores(label="current run")
    for task in ("plain", "clustered"):
        records = list(read_samples(samples_file(run_a, task)).values())
        records = [r for r in records if r["doc_id"] != 0]  # the current run skipped doc 0
        current.add_samples(task, records, score_key="score")
    merged = baseline_comparison(current, str(run_b))
    assert set(merged) == {"plain", "clustered"}

    sa, sb = read_samples(samples_file(run_a, "clustered")), read_samples(samples_file(run_b, "clustered"))
    ids = list(range(1, N_DOCS))
    a = [sa[i]["exact_match"] for i in ids]
    b = [sb[i]["exact_match"] for i in ids]
    exp = expected_paired(a, b)
    entry = merged["clustered"]
    assert entry["exact_match_baseline,none"] == pytest.approx(np.mean(b))  # a fraction, like the value
    assert entry["exact_match_diff,none"] == pytest.approx(exp["diff"])
    assert entry["exact_match_diff_ci_lower,none"] == pytest.approx(exp["lo"])
    assert entry["exact_match_diff_ci_upper,none"] == pytest.approx(exp["hi"])
    assert entry["exact_match_diff_pvalue,none"] == pytest.approx(exp["p"], rel=1e-8)
    assert entry["exact_match_diff_n,none"] == N_DOCS - 1
    se_c, g = expected_clustered(np.subtract(a, b), [sa[i]["cluster"] for i in ids])
    assert entry["exact_match_diff_stderr_clustered,none"] == pytest.approx(se_c, rel=1e-9)
    assert entry["exact_match_diff_n_clusters,none"] == g
    assert entry["baseline_unmatched"] == 1 and entry["baseline_mismatched"] == 0
    assert "exact_match_diff_stderr_clustered,none" not in merged["plain"]

    # merged into a results entry the keys fill the table's Baseline/Diff columns without new rows
    from lmms_eval.loggers.table import make_table, primary_metrics

    scores = {"alias": "clustered", "exact_match,none": 0.7, "exact_match_stderr,none": 0.07, **entry}
    assert primary_metrics(scores) == [("exact_match", "none")]
    table = make_table({"results": {"clustered": scores}})
    assert "Baseline" in table and f"{100 * exp['diff']:+.2f} pts" in table  # points, as compare prints


def test_baseline_from_in_memory_records(task_root: Path, tmp_path: Path) -> None:
    run_dummy(task_root, tmp_path / "base", accuracy=0.5, seed=3)
    base = load_doc_scores(tmp_path / "base")  # loaded once, before the run
    records = [
        {"doc_id": i, "doc_hash": r["doc_hash"], "filter": "none", "exact_match": np.float64(1.0)}
        for i, r in read_samples(samples_file(tmp_path / "base", "plain")).items()
    ]
    current = RunScores.from_samples("plain", records, score_key="score")
    merged = baseline_comparison(current, base)
    base_scores = [r["exact_match"] for r in read_samples(samples_file(tmp_path / "base", "plain")).values()]
    assert merged["plain"]["exact_match_diff,none"] == pytest.approx(1 - np.mean(base_scores))
    assert set(merged) == {"plain"}  # tasks only in the baseline are left out
    assert baseline_comparison(RunScores.from_samples("other", records), base) == {}


def test_copying_a_run_gives_zero_difference(runs: tuple[Path, Path], tmp_path: Path) -> None:
    run_a, _ = runs
    shutil.copytree(run_a, tmp_path / "copy")
    report = compare_runs(load_doc_scores(run_a), load_doc_scores(tmp_path / "copy"))
    for c in report.comparisons:
        assert c.result.diff == 0 and c.result.p_value == 1.0 and c.docs.matched == N_DOCS


def test_baseline_flag_adds_the_paired_difference_to_a_run(tmp_path: Path) -> None:
    from lmms_eval.cli import main as cli_main

    base_args = ["--model", "dummy", "--tasks", "demo_qa", "--verbosity", "WARNING"]
    assert (
        cli_main(
            [
                *base_args,
                "--model_args",
                "answer_field=answer,accuracy=0.5",
                "--output_path",
                str(tmp_path / "a"),
                "--log_samples",
            ]
        )
        == 0
    )
    assert (
        cli_main(
            [
                *base_args,
                "--model_args",
                "answer_field=answer,accuracy=0.8",
                "--output_path",
                str(tmp_path / "b"),
                "--log_samples",
                "--baseline",
                str(tmp_path / "a"),
            ]
        )
        == 0
    )
    run_b = json.loads(next((tmp_path / "b").rglob("*_results.json")).read_text())["results"]["demo_qa"]

    def scores(folder: Path) -> dict[int, float]:
        lines = next(folder.rglob("*_samples_demo_qa.jsonl")).read_text().splitlines()
        return {r["doc_id"]: r["exact_match"] for r in map(json.loads, lines)}

    a, b = scores(tmp_path / "a"), scores(tmp_path / "b")
    diffs = [b[i] - a[i] for i in sorted(a)]
    t = sps.ttest_rel([b[i] for i in sorted(a)], [a[i] for i in sorted(a)])
    assert run_b["exact_match_baseline,none"] == pytest.approx(sum(a.values()) / len(a))
    assert run_b["exact_match_diff,none"] == pytest.approx(sum(diffs) / len(diffs))
    assert run_b["exact_match_diff_pvalue,none"] == pytest.approx(t.pvalue, rel=1e-6)
    assert run_b["exact_match_diff_n,none"] == 120 and run_b["baseline_unmatched"] == 0
    assert cli_main([*base_args, "--baseline", str(tmp_path / "missing")]) == 1  # fails before the model runs
