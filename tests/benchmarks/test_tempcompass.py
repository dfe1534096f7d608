"""tempcompass (multiple choice, yes/no, caption matching): the published prompts and answer rules
(an answer they cannot read is wrong: no judge), percentages overall and per temporal aspect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "lmms-eval/TempCompass"
MC_Q = "Which way does the car move?\nA. left\nB. right\nC. up"
CM_Q = "Which caption matches the video?\nCaption A: a car moves left\nCaption B: a car moves right"
# config -> rows of (question, gold, answer, dim, right?)
ROWS = {
    "multi-choice": [
        (MC_Q, "B. right", "B", "direction", True),
        (MC_Q, "B. right", "B) right", "direction", True),
        (MC_Q, "B. right", "(B)", "speed", False),  # not read by the published rule
        (MC_Q, "B. right", "The answer is B", "speed", False),
    ],
    "yes_no": [
        ("Does the car move left?", "no", "No.", "direction", True),
        ("Does the car move right?", "yes", "Yes, it does", "direction", True),
        ("Is it fast?", "no", "not sure", "speed", True),  # starts with "no"
        ("Is it slow?", "yes", "I think so", "speed", False),
    ],
    "caption_matching": [
        (CM_Q, "Caption B: a car moves right", "Caption B", "order", True),
        (CM_Q, "Caption B: a car moves right", "a car moves right", "order", True),
        (CM_Q, "Caption B: a car moves right", "caption b", "order", False),
    ],
}
TASKS = {
    "multi-choice": "tempcompass_multi_choice",
    "yes_no": "tempcompass_yes_no",
    "caption_matching": "tempcompass_caption_matching",
}


@pytest.fixture
def tempcompass_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    text = datasets.Value("string")
    features = {"video_id": text, "question": text, "answer": text, "dim": text}
    for config, rows in ROWS.items():
        docs = [
            {"video_id": f"{config}_{i}", "question": q, "answer": gold, "dim": dim}
            for i, (q, gold, _, dim, _) in enumerate(rows)
        ]
        hub_dataset(REPO, "test", docs, features, config=config)
        for doc in docs:
            write_video(dataset_root / REPO / "videos" / f"{doc['video_id']}.mp4", frames=2)
    use_dataset_root(monkeypatch, dataset_root, "tempcompass")


def _answer(task: str, doc: dict[str, Any]) -> str:
    config, index = doc["video_id"].rsplit("_", 1)
    return ROWS[config][int(index)][2]


def _percent(rows: list[tuple[Any, ...]], dim: str | None = None) -> float:
    picked = [r for r in rows if dim is None or r[3] == dim]
    return 100 * sum(r[4] for r in picked) / len(picked)


def test_rules_and_breakdown(tempcompass_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("tempcompass", _answer)["results"]
    for config, task in TASKS.items():
        assert results[task]["avg_accuracy,none"] == pytest.approx(_percent(ROWS[config])), task
    assert results["tempcompass_multi_choice"]["direction_accuracy,none"] == pytest.approx(100.0)
    assert results["tempcompass_multi_choice"]["speed_accuracy,none"] == pytest.approx(0.0)
    assert "action_accuracy,none" not in results["tempcompass_multi_choice"]  # no such questions
    assert results["tempcompass_yes_no"]["speed_accuracy,none"] == pytest.approx(50.0)


def test_prompts_and_video(tempcompass_data: None, run_benchmark: Any, dataset_root: Path) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark(list(TASKS.values()), _answer, model=simple, limit=1)
    text, [video] = simple.seen["tempcompass_multi_choice"][0]
    assert text == f"{MC_Q}\nPlease directly give the best option:"
    assert video == str(dataset_root / REPO / "videos" / "multi-choice_0.mp4")
    assert simple.seen["tempcompass_yes_no"][0][0] == "Does the car move left?\nPlease answer yes or no:"
    assert (
        simple.seen["tempcompass_caption_matching"][0][0] == f"{CM_Q}\nPlease directly give the best option:"
    )
