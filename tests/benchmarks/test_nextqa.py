"""nextqa_mc_test: prompt, MMMU-style letters without a random guess, question-type breakdowns,
clustered errors by video, NExTVideo/ clips under --dataset_root."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "lmms-eval/NExTQA"
OPTIONS = ["sit", "stand", "run", "jump", "walk"]

# (video, type, gold index, output, correct?)
CASES = [
    (1001, "CW", 2, "C", True),
    (1001, "CH", 2, "(C) run", True),
    (1001, "TN", 1, "run.", False),  # the text of option C, gold is B
    (2002, "TC", 1, "stand", True),  # the whole answer is option B's text
    (2002, "DC", 0, "c", False),  # a lowercase letter alone is no answer (MMMU parser)
    (2002, "DL", 4, "I cannot tell", False),  # nothing parses: wrong, never a guess
]


def _features() -> Any:
    import datasets

    fields = {"video": datasets.Value("int64"), "question": datasets.Value("string")}
    fields |= {f"a{i}": datasets.Value("string") for i in range(5)}
    fields |= {
        "answer": datasets.Value("int64"),
        "qid": datasets.Value("int64"),
        "type": datasets.Value("string"),
    }
    return datasets.Features(fields)


@pytest.fixture
def nextqa_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rows = [
        {"video": video, "question": f"what happens {i}", "answer": gold, "qid": i, "type": kind}
        | {f"a{k}": text for k, text in enumerate(OPTIONS)}
        for i, (video, kind, gold, _, _) in enumerate(CASES)
    ]
    hub_dataset(REPO, "test", rows, _features(), config="MC")
    for video in (1001, 2002):
        write_video(dataset_root / REPO / "NExTVideo" / f"{video}.mp4", frames=8)
    use_dataset_root(monkeypatch, dataset_root, "nextqa")
    return dataset_root / REPO


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["qid"])][3]


def test_scores_and_breakdowns(nextqa_data: Path, run_benchmark: Any) -> None:
    scores = run_benchmark("nextqa_mc_test", _answer, bootstrap_iters=10)["results"]["nextqa_mc_test"]
    assert scores["exact_match,none"] == pytest.approx(3 / 6)
    assert scores["exact_match_causal,none"] == pytest.approx(1.0)
    assert scores["exact_match_temporal,none"] == pytest.approx(0.5)
    assert scores["exact_match_descriptive,none"] == pytest.approx(0.0)
    assert scores["exact_match_n_clusters,none"] == 2
    assert isinstance(scores["exact_match_stderr_clustered,none"], float)


def test_prompt_and_video(nextqa_data: Path, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("nextqa_mc_test", _answer, model=chat, limit=1)
    [message] = chat.seen["nextqa_mc_test"][0]
    video, text = message["content"]
    assert video == {"type": "video", "url": str(nextqa_data / "NExTVideo" / "1001.mp4")}
    assert os.path.isfile(video["url"])
    assert text["text"] == "what happens 0\nA. sit\nB. stand\nC. run\nD. jump\nE. walk"
