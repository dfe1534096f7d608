"""nextqa_mc_test: prompt, MMMU-style letters without a random guess, question-type breakdowns,
clustered errors by video, NExTVideo/ clips under --dataset_root. nextqa_oe_val/_test: prompt and
WUPS@0 end to end on Debian's WordNet (video_fixtures.wordnet_toolkit)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import video_fixtures
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "lmms-eval/NExTQA"
wordnet_toolkit = video_fixtures.wordnet_toolkit  # the session fixture
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


def _first_prompt(run_benchmark: Any, task: str, answer: Any, data: Path) -> str:
    """The text of the first doc's prompt, after checking its video is NExTVideo/1001.mp4."""
    chat = ScriptedModel(answer, chat=True)
    run_benchmark(task, answer, model=chat, limit=1)
    [message] = chat.seen[task][0]
    video, text = message["content"]
    assert video == {"type": "video", "url": str(data / "NExTVideo" / "1001.mp4")}
    assert os.path.isfile(video["url"])
    return text["text"]


def test_prompt_and_video(nextqa_data: Path, run_benchmark: Any) -> None:
    assert (
        _first_prompt(run_benchmark, "nextqa_mc_test", _answer, nextqa_data)
        == "what happens 0\nA. sit\nB. stand\nC. run\nD. jump\nE. walk"
    )


# Open-ended: (video, type, answer, additional reference, output, WUPS@0 in percent worked out
# from the published scorer's word similarities, test_wups.py)
OE_CASES = [
    (1001, "CW", "running", "", "The dog is running.", 10.0),  # wup(dog, run) = 0.1, run = 1
    (1001, "TN", "dog", "cat", "woman", 200 / 3),  # the better reference: wup(woman, dog) = 2/3
    (2002, "DC", "dogs", None, "dog", 100.0),  # the same lemma
    (2002, "CH", "the dog", "", "a cat", 600 / 7),  # wup(dog, cat) = 6/7
]
OE_POST_PROMPT = "\nAnswer a question using a short phrase or sentence."


@pytest.fixture
def nextqa_oe_data(
    hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch, wordnet_toolkit: Any
) -> Path:
    import datasets

    from lmms_eval.scoring import wups

    features = {"video": datasets.Value("int64"), "qid": datasets.Value("int64")}
    features |= {
        key: datasets.Value("string") for key in ("question", "answer", "type", "additional_ref_answer")
    }
    rows = [
        {"video": video, "qid": i, "question": f" what happens {i} ", "answer": answer, "type": kind}
        | {"additional_ref_answer": extra}
        for i, (video, kind, answer, extra, _, _) in enumerate(OE_CASES)
    ]
    for split in ("validation", "test"):
        hub_dataset(REPO, split, rows, datasets.Features(features), config="OE")
    for video in (1001, 2002):
        write_video(dataset_root / REPO / "NExTVideo" / f"{video}.mp4", frames=8)
    use_dataset_root(monkeypatch, dataset_root, "nextqa")
    monkeypatch.setattr(wups, "default_toolkit", lambda: wordnet_toolkit)
    return dataset_root / REPO


def _oe_answer(task: str, doc: dict[str, Any]) -> str:
    return OE_CASES[int(doc["qid"])][4]


def test_open_ended_wups(nextqa_oe_data: Path, run_benchmark: Any) -> None:
    results = run_benchmark(["nextqa_oe_val", "nextqa_oe_test"], _oe_answer, bootstrap_iters=10)["results"]
    expected = sum(case[5] for case in OE_CASES) / len(OE_CASES)
    for task in ("nextqa_oe_val", "nextqa_oe_test"):
        assert results[task]["WUPS,none"] == pytest.approx(expected)
        assert results[task]["WUPS_n_clusters,none"] == 2


def test_open_ended_prompt_and_video(nextqa_oe_data: Path, run_benchmark: Any) -> None:
    text = _first_prompt(run_benchmark, "nextqa_oe_val", _oe_answer, nextqa_oe_data)
    assert text == "what happens 0" + OE_POST_PROMPT
