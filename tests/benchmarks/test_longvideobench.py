"""longvideobench_val_v / _val_i: prompt (unused "N/A" options left out), letters without a random
guess, duration-group and category breakdowns, clustered errors by video; the interleaved variant's
frames and subtitles."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "longvideobench/LongVideoBench"
POST = "Answer with the option's letter from the given choices directly.\n"
OPTIONS = ["red", "blue", "green", "black", "N/A"]
QUESTION_0 = "What color 0?\nA. red\nB. blue\nC. green\nD. black\n" + POST
# vid1's subtitles; starting_timestamp_for_subtitles is 1.0, so their spans are 0.5-1.5 s (after
# frame 1, shown), 1-2 s (no frame strictly inside: left out) and 2.2-2.4 s (under a second: the
# second around 2.3 s holds frame 2, so shown after it)
SUBTITLES = [
    {"start": "00:00:01.500", "end": "00:00:02.500", "line": "hello"},
    {"start": "00:00:02.000", "end": "00:00:03.000", "line": "dropped"},
    {"timestamp": [3.2, 3.4], "text": "world"},
]

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
    fields |= {"subtitle_path": text, "duration": datasets.Value("float64")}
    return datasets.Features(fields | {"starting_timestamp_for_subtitles": datasets.Value("float64")})


@pytest.fixture
def lvb_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rows = [
        {"id": str(i), "video_id": vid, "video_path": f"{vid}.mp4", "question": f"What color {i}?"}
        | {f"option{k}": text for k, text in enumerate(OPTIONS)}
        | {"correct_choice": gold, "duration_group": group, "question_category": category}
        | {"subtitle_path": f"{vid}_en.json", "duration": 4.0, "starting_timestamp_for_subtitles": 1.0}
        for i, (vid, group, category, gold, _, _) in enumerate(CASES)
    ]
    hub_dataset(REPO, "validation", rows, _features())
    for vid in ("vid1", "vid2"):  # 16 frames at 4 fps: 4 s; frame i has red 16 * i
        write_video(dataset_root / REPO / "videos" / f"{vid}.mp4", frames=16, fps=4)
        cues = SUBTITLES if vid == "vid1" else []
        (dataset_root / REPO / "subtitles" / f"{vid}_en.json").parent.mkdir(exist_ok=True)
        (dataset_root / REPO / "subtitles" / f"{vid}_en.json").write_text(json.dumps(cues))
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


def test_interleaved_scores_match_the_video_variant(lvb_data: Path, run_benchmark: Any) -> None:
    scores = run_benchmark("longvideobench_val_i", _answer)["results"]["longvideobench_val_i"]
    assert scores["lvb_acc,none"] == pytest.approx(3 / 5)
    assert scores["lvb_acc_t2o,none"] == pytest.approx(1 / 3)


def test_interleaved_prompt_and_frames(lvb_data: Path, run_benchmark: Any) -> None:
    """Duration 4 s: frames at 0, 1, 2, 3 s, video frames 0, 4, 8, 12 (i * int(4 s * 4 fps / 4)).
    The expected text is what the published ``longvideobench_doc_to_text`` returns for this doc
    with ``insert_interleave_subtitles`` (run on the same doc and subtitle file)."""
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("longvideobench_val_i", _answer, model=simple, limit=2)
    text, frames = simple.seen["longvideobench_val_i"][0]
    assert text == "<image>\n<image>\nhello\n<image>\nworld\n<image>\n" + QUESTION_0
    assert [round(int(f.getpixel((8, 8))[0]) / 16) for f in frames] == [0, 4, 8, 12]
    other, other_frames = simple.seen["longvideobench_val_i"][1]  # vid1 again: same frames
    assert other.startswith("<image>\n<image>\nhello\n") and len(other_frames) == 4

    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("longvideobench_val_i", _answer, model=chat, limit=1)
    [message] = chat.seen["longvideobench_val_i"][0]
    kinds = [part["type"] if part["type"] != "text" else part["text"] for part in message["content"]]
    assert kinds == ["image", "image", "hello", "image", "world", "image", QUESTION_0]
