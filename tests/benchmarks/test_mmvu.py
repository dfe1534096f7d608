"""mmvu_val: the published prompts (multiple choice and open), the video under the local copy, and
the published rules without a judge (hand-worked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "lmms-eval/MMVU"
CHOICES = {"A": "cat", "B": "dog", "C": "bird", "D": "", "E": ""}
# (question_type, gold, answer, right?)
CASES = [
    ("multiple-choice", "B", "B", True),
    ("multiple-choice", "B", "The answer is (A)", False),
    ("multiple-choice", "B", "B and A", True),  # the first capital letter
    ("multiple-choice", "B", "I pick b", True),  # no capital: the gold letter in lower case
    ("multiple-choice", "B", "hot dog", True),  # no capital: the gold choice's text
    ("multiple-choice", "B", "cat", False),
    ("multiple-choice", "B", "A dog", True),  # reads A, but names the gold choice's text
    ("open-ended", "Paris", "The capital is Paris.", True),
    ("open-ended", "3.5", "3.50", True),
    ("open-ended", "Paris", "Lyon", False),
]


@pytest.fixture
def mmvu_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    text = datasets.Value("string")
    rows = [
        {
            "id": str(i),
            "video_path": "videos/Biology/0.mp4",
            "question": f"Question {i}?",
            "question_type": qt,
            "choices": CHOICES if qt == "multiple-choice" else dict.fromkeys(CHOICES, ""),
            "answer": gold,
        }
        for i, (qt, gold, *_) in enumerate(CASES)
    ]
    features = {
        "id": text,
        "video_path": text,
        "question": text,
        "question_type": text,
        "choices": dict.fromkeys(CHOICES, text),
        "answer": text,
    }
    hub_dataset(REPO, "validation", rows, features)
    write_video(dataset_root / REPO / "videos" / "Biology" / "0.mp4", frames=2)
    use_dataset_root(monkeypatch, dataset_root, "mmvu")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["id"])][2]


def test_accuracy_and_prompts(mmvu_data: None, run_benchmark: Any, dataset_root: Path) -> None:
    simple = ScriptedModel(_answer, chat=False)
    results = run_benchmark("mmvu_val", _answer, model=simple)["results"]["mmvu_val"]
    assert results["accuracy,none"] == pytest.approx(100 * 7 / 10)
    text, [video] = simple.seen["mmvu_val"][0]
    assert text == (
        "\nQuestion:Question 0?\nA: cat\nB: dog\nC: bird\nD: \nE: \nVisual Information: processed video\n"
        "Do not generate any intermediate reasoning process. Answer directly with the option letter from the\n"
        "given choices.\n"
    )
    assert video == str(dataset_root / REPO / "videos" / "Biology" / "0.mp4")
    text, _ = simple.seen["mmvu_val"][7]
    assert text.endswith(
        "Visual Information: processed video\nDo not generate any intermediate reasoning process. Directly output the final answer.\n"
    )
