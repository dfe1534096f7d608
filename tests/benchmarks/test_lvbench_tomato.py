"""lvbench and tomato: the published prompts, the videos found under the local copy, and the letter
rules (lvbench's published first-capital rule beside our strict one; tomato's MMMU-style parser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

# lvbench: (answer, gold, published, strict)
LV = [
    ("B", "B", 1.0, 1.0),
    ("(B) the dog", "B", 1.0, 1.0),
    ("b", "B", 0.0, 1.0),  # published: no capital letter
    ("A and B", "A", 1.0, 0.0),  # strict: no single commitment
    ("Definitely C", "C", 1.0, 1.0),  # the D of "Definitely" is not a letter on either side
    ("Answer: D", "A", 0.0, 0.0),
]
# tomato: (answer, gold index)
TOMATO = [("B", 1), ("The answer is (A).", 0), ("I think C", 1), ("", 0)]  # "" reads A, as published


@pytest.fixture
def video_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    text = datasets.Value("string")
    rows = [
        {"video_path": f"lv{i % 2}.mp4", "question": f"Q{i}?\n(A) x\n(B) y\n(C) z\n(D) w", "answer": gold}
        for i, (_, gold, *_) in enumerate(LV)
    ]
    hub_dataset("lmms-eval/LVBench", "train", rows, {"video_path": text, "question": text, "answer": text})
    rows = [
        {"video_path": "t.mp4", "question": f"Q{i}?", "options": ["left", "right", "up"], "answer": gold}
        for i, (_, gold) in enumerate(TOMATO)
    ]
    features = {
        "video_path": text,
        "question": text,
        "options": datasets.Sequence(text),
        "answer": datasets.Value("int64"),
    }
    hub_dataset("lmms-eval/TOMATO", "test", rows, features)
    for name in ("lv0.mp4", "lv1.mp4"):
        write_video(dataset_root / "lmms-eval/LVBench" / name, frames=4)
    write_video(dataset_root / "lmms-eval/TOMATO" / "t.mp4", frames=4)
    use_dataset_root(monkeypatch, dataset_root, "lvbench")


def _answer(task: str, doc: dict[str, Any]) -> str:
    index = int(doc["question"].split("?")[0][1:])
    return LV[index][0] if task == "lvbench" else TOMATO[index][0]


def test_lvbench_published_and_strict(video_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    results = run_benchmark("lvbench", _answer, model=simple)["results"]["lvbench"]
    assert results["lvbench_score,none"] == pytest.approx(sum(c[2] for c in LV) / len(LV))
    assert results["lvbench_score_strict,none"] == pytest.approx(sum(c[3] for c in LV) / len(LV))
    text, [video] = simple.seen["lvbench"][1]
    assert text == "Q1?\n(A) x\n(B) y\n(C) z\n(D) w\nAnswer the question with the option letter"
    assert video.endswith("LVBench/lv1.mp4")


def test_tomato_prompt_and_score(video_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    results = run_benchmark("tomato", _answer, model=simple)["results"]["tomato"]
    assert results["tomato_score,none"] == pytest.approx(3 / 4)  # "I think C" is wrong
    text, [video] = simple.seen["tomato"][0]
    assert (
        "<question> \nQ0? \n</question>\n\n<options> \n{'A': 'left', 'B': 'right', 'C': 'up'} \n</options>"
        in text
    )
    assert text.startswith("You will be provided with frames uniformly sampled from a video")
    assert video.endswith("TOMATO/t.mp4")
