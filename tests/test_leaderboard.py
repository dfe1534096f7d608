"""The leaderboard (``lmms_eval.leaderboard``, ``lmms-eval leaderboard``) on runs made here: cells
equal the results files' numbers, marks equal ``lmms-eval compare``'s p-values after Holm."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.cli import main
from lmms_eval.compare import compare_runs, load_doc_scores
from lmms_eval.errors import LmmsEvalError
from lmms_eval.leaderboard import build_leaderboard, runs_under, to_csv, to_markdown
from lmms_eval.results import ResultsFile
from lmms_eval.stats.multiple import benjamini_hochberg, holm

MODELS = {"strong": 0.9, "mid": 0.55, "weak": 0.2}  # oracle share of the dummy model's answers
STEPS = {100: 0.3, 200: 0.5, 300: 0.8}  # a training run's checkpoints


def make_board_logs(root: Path) -> Path:
    """Runs under root/board: three models on demo_qa and demo_shapes, and three checkpoints of
    the training run ``tiny-run`` on demo_qa (their results files record run and step)."""
    from lmms_eval.entrypoints.worker import record_training
    from lmms_eval.evaluator import simple_evaluate

    logs = root / "board"
    common: dict[str, Any] = {"log_samples": True, "show_progress": False}
    for name, accuracy in MODELS.items():
        args = f"answer_field=answer,accuracy={accuracy}"
        simple_evaluate("dummy", args, ["demo_qa", "demo_shapes"], output_path=str(logs / name), **common)
    for step, accuracy in STEPS.items():
        out = logs / "tiny-run" / f"step-{step}"
        args = f"answer_field=answer,accuracy={accuracy}"
        simple_evaluate("dummy", args, ["demo_qa"], output_path=str(out), **common)
        record_training(str(out), {"training_run": "tiny-run", "step": step, "metadata": {"lr": 1e-4}})
    return logs


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("board")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LMMS_EVAL_HOME", str(root / "home"))
        yield make_board_logs(root)


def run_id(logs: Path, folder: str) -> str:
    [results] = logs.glob(f"{folder}/*/*_results.json")
    return f"{results.parent.relative_to(logs).as_posix()}/{results.name.removesuffix('_results.json')}"


def test_cells_are_the_results_files_main_metrics_and_rows_go_by_mean(logs: Path) -> None:
    runs, notes = runs_under(logs)
    board = build_leaderboard(runs)
    assert notes == [] and len(board.rows) == 6 and board.tasks == ["demo_qa", "demo_shapes"]
    means = [r.mean for r in board.rows]
    assert means == sorted(means, reverse=True)  # type: ignore[type-var]
    strong = next(r for r in board.rows if r.id == run_id(logs, "strong"))
    results = ResultsFile.load(next(logs.glob("strong/*/*_results.json")))
    for task in board.tasks:
        (row,) = [m for m in results.results[task].metrics() if m.metric == results.main_metric(task)]
        cell = strong.cells[task]
        assert (cell.metric, cell.value, cell.ci_lower, cell.ci_upper) == (
            row.metric,
            row.value,
            row.ci_lower,
            row.ci_upper,
        )
    assert strong.mean == pytest.approx(sum(c.value or 0 for c in strong.cells.values()) / 2)
    assert board.modalities == {"demo_qa": "text", "demo_shapes": "image"}
    checkpoint = next(r for r in board.rows if r.id == run_id(logs, "tiny-run/step-200"))
    assert (checkpoint.label, checkpoint.training_run, checkpoint.step) == (
        "tiny-run @ step 200",
        "tiny-run",
        200,
    )


def test_baseline_marks_follow_compare_p_values_after_holm(logs: Path) -> None:
    runs, _ = runs_under(logs)
    baseline = run_id(logs, "weak")
    board = build_leaderboard(runs, baseline=baseline)
    tested = [(r, t, c) for r in board.rows for t, c in r.cells.items() if c.p_value is not None]
    assert len(tested) == 2 * 2 + 3  # two models on two tasks, three checkpoints on one
    files = {r.id: r.sample_files for r in runs}
    base = load_doc_scores(list(files[baseline]))
    for row, task, cell in tested:
        report = compare_runs(load_doc_scores(list(files[row.id])), base, tasks=[task])
        (same,) = [c for c in report.comparisons if (c.metric, c.filter) == (cell.metric, cell.filter)]
        assert cell.p_value == pytest.approx(same.raw.p_value) and cell.diff == pytest.approx(same.raw.diff)
    adjusted = holm([c.p_value for _, _, c in tested])  # type: ignore[misc]
    assert [c.p_adjusted for _, _, c in tested] == pytest.approx(adjusted)
    assert all(c.significant == (p < 0.05) for (_, _, c), p in zip(tested, adjusted, strict=True))
    strong = next(r for r in board.rows if r.id == run_id(logs, "strong"))
    assert strong.cells["demo_qa"].significant and strong.cells["demo_qa"].better is True
    assert all(c.p_value is None for c in next(r for r in board.rows if r.id == baseline).cells.values())
    assert "Holm-Bonferroni" in board.correction_text and f"against {baseline}" in board.correction_text
    bh = build_leaderboard(runs, baseline=baseline, correction="bh")
    bh_p = [c.p_value for r in bh.rows for c in r.cells.values() if c.p_value is not None]
    bh_adjusted = [c.p_adjusted for r in bh.rows for c in r.cells.values() if c.p_value is not None]
    assert bh_adjusted == pytest.approx(benjamini_hochberg(bh_p))


def test_exports_hold_every_cell(logs: Path) -> None:
    runs, _ = runs_under(logs)
    board = build_leaderboard(runs, baseline=run_id(logs, "weak"))
    markdown, table = to_markdown(board), to_csv(board)
    strong = next(r for r in board.rows if r.id == run_id(logs, "strong"))
    value = strong.cells["demo_qa"].value
    assert value is not None and f"{value:.4f}" in markdown and "▲" in markdown and "Holm" in markdown
    lines = table.splitlines()
    assert len(lines) == 1 + len(board.rows) and lines[0].startswith("run,label,model,demo_qa:value")
    assert any(line.startswith(strong.id + ",") and f"{value:.4f}" in line for line in lines)


def test_multiple_corrections_match_their_definitions() -> None:
    p = [0.01, 0.04, 0.03, 0.005, math.nan]
    assert holm(p)[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and math.isnan(holm(p)[4])
    assert benjamini_hochberg(p[:4]) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_cli_prints_md_csv_and_json(logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = run_id(logs, "weak")
    assert main(["leaderboard", str(logs), "--baseline", baseline]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| Run | Model | demo_qa | demo_shapes | Mean |") and "(baseline)" in out
    assert main(["leaderboard", str(logs), "--baseline", "weak", "--format", "csv"]) == 0  # a run's folder
    assert capsys.readouterr().out.startswith("run,label,model,")
    assert main(["leaderboard", str(logs), "--format", "json", "--baseline", baseline]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == baseline and data["correction"] == "holm" and len(data["rows"]) == 6


def test_cli_bad_input_is_one_line(logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leaderboard", str(logs), "--baseline", "strongg"]) != 0
    err = capsys.readouterr().err.strip()
    assert "baseline: no run 'strongg'" in err and "\n" not in err and "Traceback" not in err
    assert main(["leaderboard", str(logs), "--baseline", "tiny-run"]) != 0
    assert "baseline: 'tiny-run' holds 3 runs; name one:" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path / "missing")]) != 0
    assert "no such folder of runs" in capsys.readouterr().err
    with pytest.raises(LmmsEvalError, match="alpha must be between 0 and 1"):
        build_leaderboard([], alpha=2.0)


def test_ui_api_serves_the_same_board_and_says_what_is_wrong_in_one_line(logs: Path) -> None:
    from fastapi.testclient import TestClient

    from lmms_eval.ui.app import UiOptions, create_ui_app

    # a remote eval server nobody listens on: the training view says so and shows the files' points
    app = create_ui_app(
        UiOptions(logs, server_url="http://127.0.0.1:9", server_token="s3cret-server-token-123")
    )
    client = TestClient(app, base_url="http://127.0.0.1")
    baseline = run_id(logs, "weak")
    shown = client.get("/api/leaderboard", params={"baseline": baseline}).json()
    assert shown == json.loads(
        json.dumps(build_leaderboard(runs_under(logs)[0], baseline=baseline).to_dict())
    )
    answer = client.get("/api/leaderboard", params={"baseline": "nope"})
    assert answer.status_code == 422 and answer.json()["detail"].startswith("baseline: no run 'nope'")
    answer = client.get("/api/leaderboard", params={"correction": "bonferroni"})
    assert (
        answer.status_code == 422
        and answer.json()["detail"] == "correction must be 'holm' or 'bh', got 'bonferroni'"
    )
    answer = client.get("/api/leaderboard/export", params={"format": "xlsx"})
    assert answer.status_code == 422 and "format must be 'md' or 'csv'" in answer.json()["detail"]
    csv_answer = client.get("/api/leaderboard/export", params={"format": "csv", "tasks": "demo_qa"})
    assert csv_answer.headers["content-disposition"] == 'attachment; filename="leaderboard.csv"'
    assert "demo_shapes" not in csv_answer.text and csv_answer.text.count("\n") == 7

    assert client.get("/api/training-runs").json() == {
        "runs": [{"name": "tiny-run", "checkpoints": 3, "last_step": 300}]
    }
    view = client.get("/api/training", params={"name": "tiny-run"}).json()
    assert [p["step"] for p in view["points"]] == [100, 200, 300] and view["pending"] == []
    assert view["server"] is False and "unreachable" in view["server_note"]
    assert "s3cret" not in json.dumps(view)
    answer = client.get("/api/training", params={"name": "other"})
    assert answer.status_code == 404 and answer.json()["detail"].startswith("no training run 'other'")
