"""temporal_grounding_charades: the published prompt, the video found under Charades_v1_480, one
interval parser, temporal IoU and recall at 0.3 / 0.5 / 0.7 (hand-worked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

from lmms_eval.scoring.temporal import parse_interval, recall_at_iou, temporal_iou

REPO = "lmms-eval/charades_sta"
TASK = "temporal_grounding_charades"

# gold (0.0, 6.9) for every row; (answer, IoU)
CASES = [
    ("The event happens in the 0.0 - 6.9 seconds.", 1.0),
    ("2.5 - 8.1", 4.4 / 8.1),  # overlap 2.5..6.9, union 0..8.1
    ("from 3 to 10 seconds", 3.9 / 10.0),
    ("The event happens in 1.2s - 7s", 5.7 / 7.0),
    ("[2.5, 8.1]", 0.0),  # no "a - b" pair: no interval
    ("The event happens in the 30.0 - 40.0 seconds.", 0.0),
]


@pytest.mark.parametrize(
    ("answer", "interval"),
    [
        ("The event happens in the 24.3 - 30.4 seonds.", (24.3, 30.4)),
        ("2.5-8.1s", (2.5, 8.1)),
        ("from 3 to 10 seconds", (3.0, 10.0)),
        ("10.0 - 5.0", (5.0, 10.0)),  # put in order
        ("0:05 - 1:10", (5.0, 70.0)),  # m:ss
        ("00:00:02.5 - 00:00:08", (2.5, 8.0)),  # h:mm:ss
        ("1.0 - 6.0 and 8 - 9", (1.0, 6.0)),  # the first pair
        ("at 4 seconds", None),
        ("[2.5, 8.1]", None),
        ("", None),
    ],
)
def test_parse_interval(answer: str, interval: tuple[float, float] | None) -> None:
    assert parse_interval(answer) == (pytest.approx(interval) if interval else None)


def test_temporal_iou_hand_worked() -> None:
    assert temporal_iou((0.0, 10.0), (5.0, 15.0)) == pytest.approx(5 / 15)
    assert temporal_iou((2.5, 8.1), (0.0, 6.9)) == pytest.approx(4.4 / 8.1)
    assert temporal_iou((0.0, 1.0), (2.0, 3.0)) == 0.0
    assert temporal_iou(None, (0.0, 1.0)) == 0.0
    assert recall_at_iou([0.2, 0.3, 0.5, 0.9], 0.5) == 0.5


@pytest.fixture
def charades_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    rows = [
        {"video": f"v{i % 2}.mp4", "caption": f"person opens door {i}", "timestamp": [0.0, 6.9]}
        for i in range(len(CASES))
    ]
    features = {
        "video": datasets.Value("string"),
        "caption": datasets.Value("string"),
        "timestamp": datasets.Sequence(datasets.Value("float64")),
    }
    hub_dataset(REPO, "test", rows, features)
    for i in range(2):
        write_video(dataset_root / REPO / "Charades_v1_480" / f"v{i}.mp4", frames=8)
    use_dataset_root(monkeypatch, dataset_root, "charades_sta")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["caption"].split()[-1])][0]


def test_recall_and_mean_iou(charades_data: None, run_benchmark: Any) -> None:
    results = run_benchmark(TASK, _answer)["results"][TASK]
    ious = [iou for _, iou in CASES]
    for key, threshold in (("IOU@3", 0.3), ("IOU@5", 0.5), ("IOU@7", 0.7)):
        assert results[f"charades_sta_{key},none"] == pytest.approx(100 * recall_at_iou(ious, threshold))
    assert results["charades_sta_IOU@3,none"] == pytest.approx(100 * 4 / 6)
    assert results["charades_sta_IOU@7,none"] == pytest.approx(100 * 2 / 6)
    assert results["charades_sta_mIOU,none"] == pytest.approx(100 * sum(ious) / 6)


def test_prompt_and_video(charades_data: None, run_benchmark: Any, dataset_root: Path) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark(TASK, _answer, model=simple, limit=1)
    text, [video] = simple.seen[TASK][0]
    assert text.startswith("Please find the visual event described by a sentence in the video")
    assert text.endswith(
        "Now I will give you the textual sentence: person opens door 0. Please return its start time and end time."
    )
    assert video == str(dataset_root / REPO / "Charades_v1_480" / "v0.mp4")
