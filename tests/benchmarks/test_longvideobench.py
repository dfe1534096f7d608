"""longvideobench_val_v: prompt (unused "N/A" options left out), letters without a random guess,
duration-group and category breakdowns, clustered errors by video."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "longvideobench/LongVideoBench"
POST = "Answer with the option's letter from the given choices directly.\n"
OPTIONS = ["red", "blue", "green", "black", "N/A"]

# (video_id, duration_group, question_category, gold index, output, correct?)
CASES = [
    ("vid1", 600, "S2E", 1, "B", True),
    ("vid1", 600, "S2E", 2, "(C) green", True),
    ("vid1", 600, "T2O", 0, "", False),  # empty: wrong, never a guess
    ("vid2", 15, "T2O", 3, "black", True),  # the whole answer is option D's text
    ("vid2", 15, "T2O", 3, "E", False),  # option E is unused
]


def _features() -> Any:
    import datasets

    text, integer = datasets.Value("string"), datasets.Value("int64")
    fields = {"id": text, "video_id": text, "video_path": text, "question": text}
    fields |= {f"option{i}": text for i in range(5)}
    fields |= {"correct_choice": integer, "duration_group": integer, "question_category": text}
    return datasets.Features(fields)


@pytest.fixture
def lvb_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rows = [
        {"id": str(i), "video_id": vid, "video_path": f"{vid}.mp4", "question": f"What color {i}?"}
        | {f"option{k}": text for k, text in enumerate(OPTIONS)}
        | {"correct_choice": gold, "duration_group": group, "question_category": category}
        for i, (vid, group, category, gold, _, _) in enumerate(CASES)
    ]
    hub_dataset(REPO, "validation", rows, _features())
    for vid in ("vid1", "vid2"):
        write_video(dataset_root / REPO / "videos" / f"{vid}.mp4", frames=8)
    use_dataset_root(monkeypatch, dataset_root, "datasets/longvideobench")
    return dataset_root / REPO


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["id"])][4]


def test_scores_and_breakdowns(lvb_data: Path, run_benchmark: Any) -> None:
    scores = run_benchmark("longvideobench_val_v", _answer)["results"]["longvideobench_val_v"]
    assert scores["lvb_acc,none"] == pytest.approx(3 / 5)
    assert scores["lvb_acc_duration_600,none"] == pytest.approx(2 / 3)
    assert scores["lvb_acc_duration_15,none"] == pytest.approx(0.5)
    assert scores["lvb_acc_s2e,none"] == pytest.approx(1.0)
    assert scores["lvb_acc_t2o,none"] == pytest.approx(1 / 3)
    assert scores["lvb_acc_n_clusters,none"] == 2
    assert isinstance(scores["lvb_acc_stderr_clustered,none"], float)


def test_prompt_and_video(lvb_data: Path, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("longvideobench_val_v", _answer, model=chat, limit=1)
    [message] = chat.seen["longvideobench_val_v"][0]
    video, text = message["content"]
    assert video == {"type": "video", "url": str(lvb_data / "videos" / "vid1.mp4")} and os.path.isfile(
        video["url"]
    )
    assert text["text"] == "What color 0?\nA. red\nB. blue\nC. green\nD. black\n" + POST
