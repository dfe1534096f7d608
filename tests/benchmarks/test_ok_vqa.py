"""ok_vqa_val2014: VQA soft accuracy and the submission file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

# question id, question, answers, scripted answer, soft accuracy worked by hand
ROWS = [
    (1, "What sport is this?", ["tennis"] * 10, "Tennis", 1.0),
    (2, "Which animal?", ["a dog"] * 3 + ["cat"] * 7, "Dog!", 0.9),  # article and ! dropped
    (3, "What season?", ["summer"] + ["fall"] * 9, "summer", 0.3),  # 1 match: 9 * 1/3 / 10
]


@pytest.fixture
def okvqa_data(hub_dataset: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "question_id": datasets.Value("int64"),
            "image": datasets.Image(),
            "question": datasets.Value("string"),
            "answers": datasets.List(datasets.Value("string")),
        }
    )
    rows = [{"question_id": i, "image": solid_image(), "question": q, "answers": a} for i, q, a, _, _ in ROWS]
    hub_dataset("lmms-lab-encoder/OK-VQA", "val2014", rows, features)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(r[3] for r in ROWS if r[0] == doc["question_id"])


def test_accuracy_prompt_and_submission(okvqa_data: None, run_benchmark: Any, tmp_path: Path) -> None:
    model = ScriptedModel(_answer, chat=True)
    results = run_benchmark("ok_vqa_val2014", _answer, model=model, output_path=str(tmp_path / "out"))
    assert results["results"]["ok_vqa_val2014"]["exact_match,none"] == pytest.approx((1 + 0.9 + 0.3) / 3)
    [message] = model.seen["ok_vqa_val2014"][0]
    assert message["content"][1]["text"].startswith("What sport is this?\nWhen the provided information")
    [path] = (tmp_path / "out").rglob("ok_vqa_val2014_submission.json")
    written = json.loads(path.read_text())
    assert {"question_id": 2, "answer": "dog"} in written
