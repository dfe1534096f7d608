"""perceptiontest_val_mc: prompt, letters, area/reasoning breakdowns, clustered errors by video."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "lmms-eval/PerceptionTest_Val"
OPTIONS = ["cutting", "pouring", "stirring"]
POST = "\nAnswer with the option's letter from the given choices directly."

# (video_name, area, reasoning, gold index, output, correct?)
CASES = [
    ("video_1", "physics", "descriptive", "1", "B", True),
    ("video_1", "physics", "predictive", "2", "The answer is (C).", True),
    ("video_1", "memory", "descriptive", "0", "A and B", False),
    ("video_2", "memory", "explanatory", "1", "D", False),  # no option D
    ("video_2", "semantics", "descriptive", "2", "c", True),
]


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    return datasets.Features(
        {
            "video_name": text,
            "question_id": text,
            "question": text,
            "options": datasets.Sequence(text),
            "answer_id": text,
            "area": text,
            "reasoning": text,
        }
    )


@pytest.fixture
def perception_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rows = [
        {
            "video_name": video,
            "question_id": str(i),
            "question": f"What is the person doing {i}?",
            "options": OPTIONS,
            "answer_id": gold,
            "area": area,
            "reasoning": reasoning,
        }
        for i, (video, area, reasoning, gold, _, _) in enumerate(CASES)
    ]
    hub_dataset(REPO, "validation", rows, _features(), config="mc_question_val")
    for video in ("video_1", "video_2"):
        write_video(dataset_root / REPO / "videos" / f"{video}.mp4", frames=8)
    use_dataset_root(monkeypatch, dataset_root, "perceptiontest_val")
    return dataset_root / REPO


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["question_id"])][4]


def test_scores_and_breakdowns(perception_data: Path, run_benchmark: Any) -> None:
    scores = run_benchmark("perceptiontest_val_mc", _answer)["results"]["perceptiontest_val_mc"]
    assert scores["accuracy,none"] == pytest.approx(3 / 5)
    assert scores["accuracy_area_physics,none"] == pytest.approx(1.0)
    assert scores["accuracy_area_memory,none"] == pytest.approx(0.0)
    assert scores["accuracy_reasoning_descriptive,none"] == pytest.approx(2 / 3)
    assert "accuracy_area_abstraction,none" not in scores
    assert scores["accuracy_n_clusters,none"] == 2
    assert isinstance(scores["accuracy_stderr_clustered,none"], float)


def test_prompt_and_video(perception_data: Path, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("perceptiontest_val_mc", _answer, model=chat, limit=1)
    [message] = chat.seen["perceptiontest_val_mc"][0]
    video, text = message["content"]
    assert video == {"type": "video", "url": str(perception_data / "videos" / "video_1.mp4")}
    assert os.path.isfile(video["url"])
    assert text["text"] == "What is the person doing 0?\nA. cutting\nB. pouring\nC. stirring" + POST
