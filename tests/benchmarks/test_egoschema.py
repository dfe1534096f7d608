"""egoschema_subset (scored) and egoschema (the full set's submission file): prompt, option index
from letters or option text, no random guess, videos/ clips under --dataset_root; the _mcppl
variants' choices, most likely option and submission file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import ScriptedLoglikelihoods, use_dataset_root, write_video

REPO = "lmms-eval/egoschema"
OPTIONS = ["A. cooking", "B. cleaning", "C. reading", "D. sleeping", "E. walking"]
POST = "Answer with the option's letter from the given choices directly."

# (video_idx, gold index, output, correct?)
CASES = [
    ("v0", "2", "C", True),
    ("v1", "2", "(C) reading", True),
    ("v2", "1", "cleaning", True),  # the whole answer is option B's text
    ("v3", "0", "I am not sure", False),  # nothing parses: wrong, -1 in the submission
]
# log-likelihood of each option per question (mcppl): the highest wins, the first on ties
LOGLIKELIHOODS = [
    [-5.0, -4.0, -1.0, -3.0, -2.0],  # C: right
    [-1.0, -2.0, -3.0, -4.0, -5.0],  # A: wrong (gold C)
    [-2.0, -1.0, -1.0, -3.0, -4.0],  # B and C tie: B, right
    [-3.0, -3.0, -3.0, -3.0, -3.0],  # all tie: A, right
]


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    return datasets.Features(
        {
            "question_idx": text,
            "question": text,
            "video_idx": text,
            "option": datasets.Sequence(text),
            "answer": text,
        }
    )


@pytest.fixture
def egoschema_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rows = [
        {
            "question_idx": str(i),
            "question": f"What is c doing {i}?",
            "video_idx": vid,
            "option": OPTIONS,
            "answer": gold,
        }
        for i, (vid, gold, _, _) in enumerate(CASES)
    ]
    hub_dataset(REPO, "test", rows, _features(), config="Subset")
    hub_dataset(REPO, "test", [dict(r, answer="") for r in rows], _features(), config="GENERATION")
    hub_dataset(REPO, "test", [dict(r, answer="") for r in rows], _features(), config="MC_PPL")
    for vid, *_ in CASES:
        write_video(dataset_root / REPO / "videos" / f"{vid}.mp4", frames=8)
    use_dataset_root(monkeypatch, dataset_root, "egoschema")
    return dataset_root / REPO


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["question_idx"])][2]


def test_subset_score(egoschema_data: Path, run_benchmark: Any) -> None:
    scores = run_benchmark("egoschema_subset", _answer)["results"]["egoschema_subset"]
    assert scores["score,none"] == pytest.approx(3 / 4)


def test_full_set_writes_the_submission_file(
    egoschema_data: Path, run_benchmark: Any, tmp_path: Path
) -> None:
    results = run_benchmark("egoschema", _answer, output_path=str(tmp_path / "out"))
    assert results["results"]["egoschema"]["submission,none"] is None  # answers hidden: no score
    [path] = results["output_files"]["submissions"]["egoschema"]
    assert Path(path).name == "inference_results_egoschema_MC.json"
    assert json.loads(Path(path).read_text()) == {"v0": 2, "v1": 2, "v2": 1, "v3": -1}


def test_prompt_and_video(egoschema_data: Path, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("egoschema_subset", _answer, model=chat, limit=1)
    [message] = chat.seen["egoschema_subset"][0]
    video, text = message["content"]
    assert video == {"type": "video", "url": str(egoschema_data / "videos" / "v0.mp4")}
    assert os.path.isfile(video["url"])
    assert text["text"] == "What is c doing 0?\n" + "\n".join(OPTIONS) + "\n" + POST


def _loglikelihoods(task: str, doc: dict[str, Any]) -> list[float]:
    return LOGLIKELIHOODS[int(doc["question_idx"])]


def test_subset_mcppl_scores_the_most_likely_option(egoschema_data: Path, run_benchmark: Any) -> None:
    """Context: the bare question; continuations: " " + each option text without its "A. "
    (the published ``egoschema_doc_to_choice`` gives the same texts for these options)."""
    model = ScriptedLoglikelihoods(_loglikelihoods)
    results = run_benchmark("egoschema_subset_mcppl", _answer, model=model)
    assert results["results"]["egoschema_subset_mcppl"]["score,none"] == pytest.approx(3 / 4)
    requests = model.seen["egoschema_subset_mcppl"][0]
    assert requests == [
        ("What is c doing 0?", f" {t}") for t in ("cooking", "cleaning", "reading", "sleeping", "walking")
    ]


def test_full_set_mcppl_writes_its_submission_file(
    egoschema_data: Path, run_benchmark: Any, tmp_path: Path
) -> None:
    model = ScriptedLoglikelihoods(_loglikelihoods)
    results = run_benchmark("egoschema_mcppl", _answer, model=model, output_path=str(tmp_path / "out"))
    assert results["results"]["egoschema_mcppl"]["submission,none"] is None
    [path] = results["output_files"]["submissions"]["egoschema_mcppl"]
    assert Path(path).name == "inference_results_egoschema_MC_PPL.json"
    assert json.loads(Path(path).read_text()) == {"v0": 2, "v1": 0, "v2": 1, "v3": 0}
