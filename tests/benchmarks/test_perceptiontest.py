"""perceptiontest_val_mc: prompt, letters, area/reasoning breakdowns, clustered errors by video;
perceptiontest_val_mcppl: the most likely option, scored and broken down the same way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import ScriptedLoglikelihoods, use_dataset_root, write_video

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
# log-likelihood of each option per question (mcppl): the highest wins, the first on ties
LOGLIKELIHOODS = [
    [-3.0, -1.0, -2.0],  # B: right
    [-1.0, -2.0, -3.0],  # A: wrong (gold C)
    [-2.0, -2.0, -2.0],  # all tie: A, right
    [-1.0, -3.0, -2.0],  # A: wrong (gold B; the least likely option would have been right)
    [-9.0, -8.0, -0.5],  # C: right
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


def test_mcppl_scores_the_most_likely_option(perception_data: Path, run_benchmark: Any) -> None:
    """Context: the bare question; continuations: " " + each option as given (the published
    ``perceptiontest_val_doc_to_choice`` returns the options unchanged)."""
    model = ScriptedLoglikelihoods(lambda task, doc: LOGLIKELIHOODS[int(doc["question_id"])])
    results = run_benchmark("perceptiontest_val_mcppl", _answer, model=model)
    scores = results["results"]["perceptiontest_val_mcppl"]
    assert scores["accuracy,none"] == pytest.approx(3 / 5)
    assert scores["accuracy_area_physics,none"] == pytest.approx(1 / 2)
    assert scores["accuracy_area_memory,none"] == pytest.approx(1 / 2)
    assert scores["accuracy_area_semantics,none"] == pytest.approx(1.0)
    assert scores["accuracy_reasoning_descriptive,none"] == pytest.approx(1.0)
    assert scores["accuracy_reasoning_explanatory,none"] == pytest.approx(0.0)
    assert scores["accuracy_n_clusters,none"] == 2
    requests = model.seen["perceptiontest_val_mcppl"][0]
    assert requests == [("What is the person doing 0?", f" {o}") for o in OPTIONS]
