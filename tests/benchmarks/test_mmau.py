"""mmau_test_mini: the published lettered-options prompt, letters read by extract_mcq_answer
(no random guess), accuracy in percent (hand-worked), the clip handed to simple and chat models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import wav_clip, write_audio_split
from bench_helpers import ScriptedModel

REPO = "lmms-lab-audio/mmau"
POST = "\nAnswer with the option's letter from the given choices directly."
INSTRUMENTS = ["piano", "guitar", "drums", "violin"]

# (id, task, choices, answer, scripted output, right)
CASES = [
    ("q1", "music", INSTRUMENTS, "guitar", "B", True),
    ("q2", "music", INSTRUMENTS, "drums", "The answer is (C)", True),
    ("q3", "sound", ["dog", "cat"], "cat", "b", True),  # a bare lowercase letter counts
    ("q4", "sound", ["dog", "cat"], "dog", "A or B", False),  # no commitment: wrong, not a guess
    ("q5", "speech", ["happy", "sad", "angry"], "sad", "", False),  # empty: wrong, not a guess
    ("q6", "speech", ["happy", "sad", "angry"], "angry", "C. angry", True),
    ("q7", "speech", ["yes", "no"], "no", "C", False),  # not a letter of this question
    ("q8", "music", INSTRUMENTS, "violin", "violin", False),  # an option's text is no letter
]
ACCURACY = 100 * 4 / 8


@pytest.fixture
def mmau_data(dataset_root: Path) -> None:
    rows = [
        {
            "audio": wav_clip(200 + 40 * i),
            "id": qid,
            "question": f"Question {qid}?",
            "choices": json.dumps(options),
            "answer": answer,
            "task": task,
        }
        for i, (qid, task, options, answer, *_) in enumerate(CASES)
    ]
    write_audio_split(dataset_root, REPO, None, "test_mini", rows)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for qid, *_, out, _ in CASES if qid == doc["id"])


def test_accuracy_in_percent(mmau_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("mmau_test_mini", _answer)["results"]
    assert results["mmau_test_mini"]["accuracy,none"] == pytest.approx(ACCURACY)


@pytest.mark.parametrize(("qid", "task", "options", "answer", "output", "right"), CASES)
def test_each_answer(qid: str, task: str, options: list[str], answer: str, output: str, right: bool) -> None:
    from lmms_eval.tasks.mmau.utils import process_results

    doc = {"id": qid, "task": task, "choices": json.dumps(options), "answer": answer}
    assert process_results(doc, [output]) == {"accuracy": {"id": qid, "task": task, "score": float(right)}}


def test_prompt_lists_the_lettered_options(mmau_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("mmau_test_mini", _answer, model=simple)
    text, [audio] = simple.seen["mmau_test_mini"][0]
    assert text == "Question q1?\nA. piano\nB. guitar\nC. drums\nD. violin" + POST
    assert sorted(audio) == ["array", "sampling_rate"] and audio["sampling_rate"] == 16000
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("mmau_test_mini", _answer, model=chat)
    [message] = chat.seen["mmau_test_mini"][2]
    assert [p["type"] for p in message["content"]] == ["audio", "text"]
    assert message["content"][1]["text"] == "Question q3?\nA. dog\nB. cat" + POST
