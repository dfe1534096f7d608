"""stvqa: hidden test answers, so the run writes the submission file and reports no score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_helpers import solid_image


def test_submission_file(hub_dataset: Any, run_benchmark: Any, tmp_path: Path) -> None:
    import datasets

    features = datasets.Features(
        {
            "question_id": datasets.Value("int64"),
            "image": datasets.Image(),
            "question": datasets.Value("string"),
            "answers": datasets.List(datasets.Value("string")),
        }
    )
    rows = [{"question_id": 7, "image": solid_image(), "question": "What brand?", "answers": []}]
    hub_dataset("lmms-lab-encoder/ST-VQA", "test", rows, features)
    results = run_benchmark("stvqa", lambda t, d: " Coca Cola ", output_path=str(tmp_path / "out"))
    assert results["results"]["stvqa"].get("submission,none") is None
    [path] = (tmp_path / "out").rglob("stvqa_test_submission.json")
    assert json.loads(path.read_text()) == [{"question_id": 7, "answer": "Coca Cola"}]
