"""mvbench: the 20 subtasks, the published prompt, letters from candidate positions, clips found in
their subtask folder, the group's mean over questions, clustered errors by clip."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "OpenGVLab/MVBench"
SUBTASKS = [
    "action_sequence",
    "moving_count",
    "action_prediction",
    "episodic_reasoning",
    "action_antonym",
    "action_count",
    "scene_transition",
    "object_shuffle",
    "object_existence",
    "fine_grained_pose",
    "unexpected_action",
    "moving_direction",
    "state_change",
    "object_interaction",
    "character_order",
    "action_localization",
    "counterfactual_inference",
    "fine_grained_action",
    "moving_attribute",
    "egocentric_navigation",
]
CANDIDATES = ["sat down", "stood up", "ran away"]

# (subtask, video, answer, output, correct?)
CASES = [
    ("action_sequence", "c1.mp4", "stood up", "(B) stood up", True),
    ("action_sequence", "c1.mp4", "sat down", "b", False),
    ("action_sequence", "c2.mp4", "ran away", "The answer is C.", True),
    ("moving_count", "m1.mp4", "sat down", "A", True),
    # an empty answer: left out of the published denominator, wrong in the strict one
    ("moving_count", "m1.mp4", "stood up", "", False),
]


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    return datasets.Features(
        {"video": text, "question": text, "candidates": datasets.Sequence(text), "answer": text}
    )


@pytest.fixture
def mvbench_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from lmms_eval.tasks.mvbench.utils import VIDEO_FOLDERS

    for sub in ("action_sequence", "moving_count"):
        rows = [
            {"video": video, "question": f"What happens {i}?", "candidates": CANDIDATES, "answer": answer}
            for i, (s, video, answer, _, _) in enumerate(CASES)
            if s == sub
        ]
        hub_dataset(REPO, "train", rows, _features(), config=sub)
        for video in {r["video"] for r in rows}:  # the Hub repo's tree: video/<subtask folder>/<clip>
            write_video(dataset_root / REPO / "video" / VIDEO_FOLDERS[sub] / video, frames=8)
    use_dataset_root(monkeypatch, dataset_root, "mvbench_video")
    return dataset_root / REPO


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["question"].split()[-1].rstrip("?"))][3]


def test_the_twenty_subtasks_are_indexed() -> None:
    from lmms_eval.tasks import TaskManager

    manager = TaskManager()
    assert {f"mvbench_{s}" for s in SUBTASKS} <= set(manager.all_subtasks)
    assert len(SUBTASKS) == 20 and "mvbench" in manager.all_groups


def test_accuracy_per_subtask_and_group_mean(mvbench_data: Path, run_benchmark: Any) -> None:
    results = run_benchmark(["mvbench_action_sequence", "mvbench_moving_count"], _answer, bootstrap_iters=10)
    scores = results["results"]
    assert scores["mvbench_action_sequence"]["mvbench_accuracy,none"] == pytest.approx(200 / 3)
    assert scores["mvbench_action_sequence"]["mvbench_accuracy_strict,none"] == pytest.approx(200 / 3)
    assert scores["mvbench_moving_count"]["mvbench_accuracy,none"] == pytest.approx(100.0)  # 1 of 1 answered
    assert scores["mvbench_moving_count"]["mvbench_accuracy_strict,none"] == pytest.approx(50.0)  # 1 of 2
    sequence = scores["mvbench_action_sequence"]
    assert sequence["mvbench_accuracy_n_clusters,none"] == 2  # c1.mp4 and c2.mp4
    assert isinstance(sequence["mvbench_accuracy_stderr_clustered,none"], float)


def test_group_averages_over_all_questions() -> None:
    from lmms_eval.tasks import TaskManager
    from lmms_eval.tasks._yaml import load_yaml_config

    manager = TaskManager()
    path = manager.index.entries["mvbench"].path
    assert path is not None
    group = load_yaml_config(path)
    assert group["task"] == [f"mvbench_{s}" for s in SUBTASKS]
    assert group["aggregate_metric_list"] == [
        {"metric": metric, "aggregation": "mean", "weight_by_size": True}
        for metric in ("mvbench_accuracy", "mvbench_accuracy_strict")
    ]


# (output, gold letter, published score, strict score): hand-worked on four options
RULE_CASES = [
    ("B", "B", 100.0, 100.0),
    ("b", "B", 100.0, 100.0),
    ("A B", "A", 100.0, 0.0),  # published: the first letter; strict: no commitment
    ("B or C", "B", 100.0, 0.0),
    ("A cat sits on the mat.", "A", 100.0, 0.0),  # published reads the article as option A
    ("B is wrong, so C", "C", 0.0, 100.0),  # published: first letter B; strict: the final C
    ("the answer is b", "B", 100.0, 0.0),  # strict: a lowercase letter counts only alone
    ("xB B5", "B", 0.0, 0.0),  # no standalone letter
]


@pytest.mark.parametrize(("output", "gold", "published", "strict"), RULE_CASES)
def test_published_and_strict_rules(output: str, gold: str, published: float, strict: float) -> None:
    from lmms_eval.tasks.mvbench.utils import process_results

    candidates = ["w", "x", "y", "z"]
    doc = {"candidates": candidates, "answer": candidates["ABCD".index(gold)]}
    out = process_results(doc, [output])
    assert (out["mvbench_accuracy"]["score"], out["mvbench_accuracy_strict"]["score"]) == (published, strict)


def test_published_denominator_leaves_out_empty_answers() -> None:
    from lmms_eval.tasks.mvbench.utils import published_accuracy, strict_accuracy

    items = [
        {"answered": True, "score": 100.0},
        {"answered": False, "score": 0.0},
        {"answered": True, "score": 0.0},
    ]
    assert published_accuracy(items) == 50.0
    assert strict_accuracy(items) == pytest.approx(100 / 3)


def test_prompt_and_clip_path(mvbench_data: Path, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("mvbench_action_sequence", _answer, model=chat, limit=1)
    [message] = chat.seen["mvbench_action_sequence"][0]
    video, text = message["content"]
    expected = mvbench_data / "video" / "star" / "Charades_segment" / "c1.mp4"
    assert video == {"type": "video", "url": str(expected)} and os.path.isfile(video["url"])
    assert text["text"] == (
        "Question:What happens 0?\nOption:\n(A) sat down\n(B) stood up\n(C) ran away\nOnly give the best option.\n"
    )


def test_group_run_over_all_subtasks(
    hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch, run_benchmark: Any
) -> None:
    from lmms_eval.tasks.mvbench.utils import VIDEO_FOLDERS

    for n, sub in enumerate(SUBTASKS):  # one question each; every fourth answered wrong
        row = {
            "video": "c.mp4",
            "question": f"What happens {n}?",
            "candidates": CANDIDATES,
            "answer": "stood up",
        }
        hub_dataset(REPO, "train", [row], _features(), config=sub)
        path = dataset_root / REPO / "video" / VIDEO_FOLDERS[sub] / "c.mp4"
        if not path.exists():
            write_video(path, frames=4)
    use_dataset_root(monkeypatch, dataset_root, "mvbench_video")

    def answer(task: str, doc: dict[str, Any]) -> str:
        return "A" if int(doc["question"].split()[-1].rstrip("?")) % 4 == 0 else "B"

    results = run_benchmark("mvbench", answer)
    assert results["groups"]["mvbench"]["mvbench_accuracy,none"] == pytest.approx(75.0)
    assert results["results"]["mvbench_moving_count"]["mvbench_accuracy,none"] == pytest.approx(100.0)
