"""vsibench: the published prompt (the published interface snapshots' two cases), mean relative
accuracy for numeric answers (hand-worked), the published first-word letter rule and our strict
one, the category breakdown and the overall mean of categories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

from lmms_eval.scoring.mra import first_number, mean_relative_accuracy

REPO = "nyu-visionx/VSI-Bench"


@pytest.mark.parametrize(
    ("prediction", "gold", "mra"),
    [
        (4, 4, 1.0),
        (5, 4, 0.6),  # error 0.25 <= 1 - θ for θ = .50 ... .75: 6 of 10
        (7, 10, 0.5),  # error 0.30: θ = .50 ... .70
        (4.5, 4, 0.8),  # error 0.125: θ = .50 ... .85
        (6, 5, 0.6),  # error 0.2 misses 1 - 0.8 in floating point, as published
        (115, 100, 0.8),
        (12, 4, 0.0),
        (None, 4, 0.0),
        (0, 0, 1.0),
        (1, 0, 0.0),
    ],
)
def test_mean_relative_accuracy(prediction: float | None, gold: float, mra: float) -> None:
    assert mean_relative_accuracy(prediction, gold) == pytest.approx(mra)


def test_first_number() -> None:
    assert [first_number(t) for t in ("about 4.5 m", "3 or 4", "four chairs", "4,000", "-3", "none")] == [
        4.5,
        3.0,
        4.0,
        4.0,
        -3.0,
        None,
    ]


def test_published_prompt_snapshots() -> None:
    """The two vsibench cases of the published prompt-stability test, default kwargs."""
    from lmms_eval.tasks.vsibench.utils import vsibench_doc_to_text

    kwargs = {
        "pre_prompt": "",
        "mca_post_prompt": "Answer with the option's letter from the given choices directly.",
        "na_post_prompt": "Please answer the question using a single word or phrase.",
    }
    mca = {
        "question": "Which way?",
        "question_type": "object_rel_direction_easy",
        "options": ["Left", "Right"],
    }
    assert vsibench_doc_to_text(mca, kwargs) == (
        "These are frames of a video.\nWhich way?\nOptions:\nLeft\nRight\n"
        "Answer with the option's letter from the given choices directly."
    )
    na = {"question": "How many?", "question_type": "object_counting", "options": []}
    assert vsibench_doc_to_text(na, kwargs) == (
        "These are frames of a video.\nHow many?\nPlease answer the question using a single word or phrase."
    )


# (question_type, gold, answer, published score, strict score)
CASES = [
    ("object_counting", "4", "5", 0.6, 0.6),
    ("object_counting", "10", "The answer is 7.", 0.5, 0.5),
    ("object_abs_distance", "2.5", "3.0", 0.6, 0.6),
    ("object_size_estimation", "120", "100", 0.7, 0.7),
    ("room_size_estimation", "20.0", "abc", 0.0, 0.0),
    ("object_rel_distance", "A", "A.", 1.0, 1.0),
    ("object_rel_direction_easy", "B", "b", 1.0, 1.0),
    ("object_rel_direction_easy", "B", "C", 0.0, 0.0),
    ("object_rel_direction_medium", "C", "C", 1.0, 1.0),
    ("object_rel_direction_hard", "A", "B", 0.0, 0.0),
    ("route_planning", "D", "D. go left", 1.0, 1.0),
    ("obj_appearance_order", "A", "(A)", 0.0, 1.0),
    ("obj_appearance_order", "B", "Answer: B", 0.0, 1.0),
]
# category means: counting .55, abs .6, size .7, room 0, rel_distance 1, direction (.5 + 1 + 0) / 3,
# route 1, appearance 0
CATEGORY = {
    "object_counting_mra": 0.55,
    "object_abs_distance_mra": 0.6,
    "object_size_estimation_mra": 0.7,
    "room_size_estimation_mra": 0.0,
    "object_rel_distance_accuracy": 1.0,
    "object_rel_direction_accuracy": 0.5,
    "route_planning_accuracy": 1.0,
    "obj_appearance_order_accuracy": 0.0,
}
OVERALL = sum(CATEGORY.values()) / 8
# strict: appearance 1 (both answers read), the other categories the same
STRICT = (OVERALL * 8 + 1.0) / 8


@pytest.fixture
def vsibench_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    text = datasets.Value("string")
    rows = [
        {
            "id": i,
            "dataset": "scannet",
            "scene_name": f"scene{i % 3}",
            "question": f"Question {i}?",
            "question_type": qt,
            "options": [] if gold[0].isdigit() else ["A. w", "B. x", "C. y", "D. z"],
            "ground_truth": gold,
        }
        for i, (qt, gold, *_) in enumerate(CASES)
    ]
    features = datasets.Features(
        {
            "id": datasets.Value("int64"),
            "dataset": text,
            "scene_name": text,
            "question": text,
            "question_type": text,
            "options": datasets.Sequence(text),
            "ground_truth": text,
        }
    )
    hub_dataset(REPO, "test", rows, features, config="full")
    for i in range(3):
        write_video(dataset_root / REPO / "scannet" / f"scene{i}.mp4", frames=8)
    use_dataset_root(monkeypatch, dataset_root, "vsibench")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["id"])][2]


def test_categories_overall_and_strict(vsibench_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("vsibench", _answer)["results"]["vsibench"]
    for key, value in CATEGORY.items():
        assert results[f"{key},none"] == pytest.approx(value), key
    assert results["vsibench_overall,none"] == pytest.approx(OVERALL)
    assert results["vsibench_overall_strict,none"] == pytest.approx(STRICT)


def test_prompt_and_video(vsibench_data: None, run_benchmark: Any, dataset_root: Path) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("vsibench", _answer, model=simple, limit=6)
    text, [video] = simple.seen["vsibench"][5]
    assert text == (
        "These are frames of a video.\nQuestion 5?\nOptions:\nA. w\nB. x\nC. y\nD. z\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert video == str(dataset_root / REPO / "scannet" / "scene2.mp4")
