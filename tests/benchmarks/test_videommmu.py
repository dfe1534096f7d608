"""video_mmmu: the published prompts of each track, the lecture video (or the question clip) found
under the subject folder, MMMU scoring with the published random fallback beside our strict key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "lmms-eval/VideoMMMU"
OPTIONS = ["Cubism", "Baroque", "Pop art"]
# (id, question_type, gold, answer, right by both rules?)
CASES = [
    ("Adaptation_Art_1", "multiple-choice", "B", "(B) Baroque", True),
    ("Adaptation_Art_2", "multiple-choice", "A", "C", False),
    ("Adaptation_Math_3", "open", "42", "The answer is 42.", True),
    ("Adaptation_Math_4", "open", "7", "It is 8", False),
]


@pytest.fixture
def videommmu_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    text = datasets.Value("string")
    rows = [
        {
            "id": i,
            "question": f"Question {n}?",
            "options": OPTIONS if qt == "multiple-choice" else [],
            "question_type": qt,
            "answer": gold,
        }
        for n, (i, qt, gold, *_) in enumerate(CASES)
    ]
    features = {
        "id": text,
        "question": text,
        "options": datasets.Sequence(text),
        "question_type": text,
        "answer": text,
    }
    for config in ("Adaptation", "Perception"):
        hub_dataset(REPO, "test", rows, features, config=config)
    for i, *_ in CASES:
        subject = i.split("_")[1]
        write_video(dataset_root / REPO / subject / f"{i}.mp4", frames=4)
        write_video(dataset_root / REPO / "question_only" / f"{i}_image.mp4", frames=2)
    use_dataset_root(monkeypatch, dataset_root, "video_mmmu")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["question"].split()[-1].rstrip("?"))][3]


def test_scores_and_prompts(videommmu_data: None, run_benchmark: Any, dataset_root: Path) -> None:
    simple = ScriptedModel(_answer, chat=False)
    tasks = ["video_mmmu_adaptation", "video_mmmu_perception", "video_mmmu_adaptation_question_only"]
    results = run_benchmark(tasks, _answer, model=simple)["results"]
    for task in tasks:
        assert results[task]["mmmu_acc,none"] == pytest.approx(
            0.5
        )  # every answer names an option or a number
        assert results[task]["mmmu_acc_strict,none"] == pytest.approx(0.5)
    text, [video] = simple.seen["video_mmmu_adaptation"][0]
    assert text == (
        "You should watch and learn the video content. Then apply what you learned to answer the following "
        "multi-choice question. The image for this question is at the end of the video.\n"
        "Question 0?\nA. Cubism\nB. Baroque\nC. Pop art"
    )
    assert video == str(dataset_root / REPO / "Art" / "Adaptation_Art_1.mp4")
    text, _ = simple.seen["video_mmmu_adaptation"][2]
    assert text.endswith(
        "open-ended question. The image for this question is at the end of the video.\nQuestion 2?"
    )
    text, _ = simple.seen["video_mmmu_perception"][0]
    assert (
        text
        == "Question 0?\nA. Cubism\nB. Baroque\nC. Pop art\nPlease ignore the Quiz question in last frame of the video."
    )
    text, [clip] = simple.seen["video_mmmu_adaptation_question_only"][0]
    assert text == "Question 0?\nA. Cubism\nB. Baroque\nC. Pop art"
    assert clip.endswith("question_only/Adaptation_Art_1_image.mp4")


def test_group_lists_three_tracks() -> None:
    from lmms_eval.tasks import TaskManager

    manager = TaskManager()
    assert {"video_mmmu_adaptation", "video_mmmu_comprehension", "video_mmmu_perception"} <= set(
        manager.all_subtasks
    )
    assert "video_mmmu" in manager.all_groups
