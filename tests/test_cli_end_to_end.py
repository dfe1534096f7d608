"""The CLI end to end on the bundled demo task with the dummy model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lmms_eval.cli import main


def test_demo_task_run_writes_results_and_samples(tmp_path: Path, capsys) -> None:
    code = main(
        [
            "--model", "dummy", "--model_args", "answer_field=answer,accuracy=0.75",
            "--tasks", "demo_qa", "--output_path", str(tmp_path), "--log_samples",
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "demo_qa" in out and "exact_match" in out
    run_dir = tmp_path / "dummy"
    results_file = next(run_dir.glob("*_results.json"))
    results = json.loads(results_file.read_text())
    score = results["results"]["demo_qa"]["exact_match,none"]
    samples = [
        json.loads(line) for line in next(run_dir.glob("*_samples_demo_qa.jsonl")).read_text().splitlines()
    ]
    assert len(samples) == 120 == results["n-samples"]["demo_qa"]["effective"]
    # the aggregate is the mean of the logged per-sample scores
    assert abs(score - sum(s["exact_match"] for s in samples) / len(samples)) < 1e-12
    assert 0.6 < score < 0.9
    assert results["status"] == "completed"


def test_python_dash_m_reports_unknown_task_with_suggestion(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lmms_eval", "--model", "dummy", "--tasks", "demo_q"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "unknown task or group 'demo_q'" in proc.stderr and "demo_qa" in proc.stderr
    assert "Traceback" not in proc.stderr
