"""air_bench_foundation_* (published four-line options prompt, letters read by extract_mcq_answer
with no random guess, accuracy 0-1 with the per-task_name shares logged) and air_bench_chat_*
(two judge calls per question in both orders, model score the mean of its two scores, unreadable
verdicts 0, a clear error without a judge), on synthetic tones with scripted answers."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import wav_clip, write_audio_split
from bench_helpers import ScriptedModel

REPO = "lmms-lab/AIR_Bench"
POST = "\nAnswer with the option's letter from the given choices directly."
CHAT_POST = "Give a detail answer to the question in English."

# (uniq_id, task_name, (choice_a .. choice_d), answer_gt, scripted output, right)
FOUNDATION = [
    ("1", "Sound_AQA", ("dog", "cat", "cow", "pig"), "cow", "C", True),
    ("2", "Sound_AQA", ("dog", "cat", "cow", "pig"), "pig", "The answer is (D)", True),
    ("3", "Sound_AQA", ("rain", "wind", None, None), "wind", "b", True),  # a bare lowercase letter counts
    ("4", "Sound_AQA", ("rain", "wind", None, None), "rain", "C", False),  # no option C: wrong, not a guess
    ("5", "Vocal_Sound", ("cough", "laugh", "sneeze", None), "laugh", "A or B", False),  # no commitment
    ("6", "Vocal_Sound", ("cough", "laugh", "sneeze", None), "sneeze", "C. sneeze", True),
    ("7", "Vocal_Sound", ("cough", "laugh", "sneeze", None), "cough", "", False),  # empty: wrong
]
# Sound_AQA 3 of 4, Vocal_Sound 1 of 3: 4 of 7 overall.
ACCURACY = 4 / 7


def _foundation_row(i: int, case: tuple[Any, ...]) -> dict[str, Any]:
    uid, task, choices, answer, *_ = case
    fields = dict(zip(("choice_a", "choice_b", "choice_c", "choice_d"), choices, strict=True))
    return {
        "audio": wav_clip(220 + 40 * i),
        "uniq_id": uid,
        "task_name": task,
        "question": f"Q{uid}?",
        **fields,
        "answer_gt": answer,
    }


@pytest.fixture
def foundation_data(dataset_root: Path) -> None:
    rows = [_foundation_row(i, case) for i, case in enumerate(FOUNDATION)]
    write_audio_split(dataset_root, REPO, "Foundation", "sound", rows)


def _foundation_answer(task: str, doc: dict[str, Any]) -> str:
    return next(case[4] for case in FOUNDATION if case[0] == doc["uniq_id"])


def test_foundation_accuracy(foundation_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("air_bench_foundation_sound", _foundation_answer)["results"]
    assert results["air_bench_foundation_sound"]["accuracy,none"] == pytest.approx(ACCURACY)


def test_foundation_breakdown_by_task_name(caplog: pytest.LogCaptureFixture) -> None:
    from lmms_eval.tasks.air_bench import utils

    items = [utils.process_results_foundation(_foundation_row(0, c), [c[4]])["accuracy"] for c in FOUNDATION]
    assert utils.accuracy_by_task(items) == pytest.approx({"Sound_AQA": 3 / 4, "Vocal_Sound": 1 / 3})
    utils.logger.addHandler(caplog.handler)  # lmms_eval loggers need not propagate to the root
    try:
        with caplog.at_level(logging.INFO, logger=utils.logger.name):
            assert utils.aggregate_foundation(items) == pytest.approx(ACCURACY)
    finally:
        utils.logger.removeHandler(caplog.handler)
    assert "by task: Sound_AQA 0.7500, Vocal_Sound 0.3333" in caplog.text


@pytest.mark.parametrize("case", FOUNDATION, ids=[case[0] for case in FOUNDATION])
def test_foundation_each_answer(case: tuple[Any, ...]) -> None:
    from lmms_eval.tasks.air_bench.utils import process_results_foundation

    doc = _foundation_row(0, case)
    item = process_results_foundation(doc, [case[4]])
    assert item == {"accuracy": {"id": case[0], "task": case[1], "score": float(case[5])}}


def test_foundation_prompt_lists_four_lines(foundation_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_foundation_answer, chat=False)
    run_benchmark("air_bench_foundation_sound", _foundation_answer, model=simple)
    text, [audio] = simple.seen["air_bench_foundation_sound"][0]
    assert text == "Q1?\nA. dog\nB. cat\nC. cow\nD. pig\n" + POST
    assert sorted(audio) == ["array", "sampling_rate"] and audio["sampling_rate"] == 16000
    text, _ = simple.seen["air_bench_foundation_sound"][2]
    assert text == "Q3?\nA. rain\nB. wind\nC. None\nD. None\n" + POST  # missing options printed as published


# Chat: (uniq_id, reference, scripted output, judge reply with the reference first, with the output first)
CHAT = [
    ("c1", "A dog barks twice.", "A dog is barking.", "8 6", "7 9"),  # model 6 and 7: 6.5
    ("c2", "Rain on a roof.", "Birds sing.", "9 2", "[[3, 9]]"),  # model 2 and 3: 2.5
    ("c3", "A bell rings.", "A bell.", "9 4", "no idea"),  # unreadable: 0
]
GPT_EVAL = (6.5 + 2.5 + 0) / 3


@pytest.fixture
def chat_data(dataset_root: Path) -> None:
    rows = [
        {
            "audio": wav_clip(300 + 50 * i),
            "uniq_id": uid,
            "task_name": "sound_chat",
            "question": f"What in {uid}?",
            "answer_gt": reference,
            "meta_info": f"description of {uid}",
        }
        for i, (uid, reference, *_) in enumerate(CHAT)
    ]
    write_audio_split(dataset_root, REPO, "Chat", "sound", rows)


def _chat_answer(task: str, doc: dict[str, Any]) -> str:
    return next(case[2] for case in CHAT if case[0] == doc["uniq_id"])


def test_chat_scores_both_orders(
    chat_data: None, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval import llm_judge
    from lmms_eval.llm_judge import DummyJudge, Request
    from lmms_eval.llm_judge.base import ProviderReply

    prompts: list[str] = []

    class Judge(DummyJudge):
        def _invoke(self, request: Request) -> ProviderReply:
            text = request.prompt_text()
            prompts.append(text)
            for _uid, reference, output, reference_first, output_first in CHAT:
                if f"[Assistant 1's answer]\n{reference}\n" in text and output in text:
                    return ProviderReply(text=reference_first, latency_s=0.0, attempts=1)
                if f"[Assistant 1's answer]\n{output}\n" in text:
                    return ProviderReply(text=output_first, latency_s=0.0, attempts=1)
            raise AssertionError(text)

    monkeypatch.setenv("API_TYPE", "dummy")
    monkeypatch.setattr(llm_judge, "get_server", lambda *a, **k: Judge())
    simple = ScriptedModel(_chat_answer, chat=False)
    scores = run_benchmark("air_bench_chat_sound", _chat_answer, model=simple)["results"][
        "air_bench_chat_sound"
    ]
    assert scores["gpt_eval,none"] == pytest.approx(GPT_EVAL)
    assert len(prompts) == 6
    assert (
        "[Audio description]\ndescription of c1\n" in prompts[0] and "[Question]\nWhat in c1?\n" in prompts[0]
    )
    text, [audio] = simple.seen["air_bench_chat_sound"][0]
    assert text == "What in c1?" + CHAT_POST  # no separator, as published
    assert audio["sampling_rate"] == 16000


def test_chat_without_judge_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.errors import ConfigError
    from lmms_eval.tasks.air_bench.utils import process_results_batch_chat

    monkeypatch.delenv("API_TYPE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    doc = {"uniq_id": "c1", "question": "Q?", "answer_gt": "A", "meta_info": "m"}
    with pytest.raises(ConfigError, match=r"needs an LLM judge.*no offline rule"):
        process_results_batch_chat([doc], [["answer"]])


def test_chat_with_dummy_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dummy judge answers comparative requests offline: the first answer 10, the second 10
    when it contains the first's text, else 1."""
    from lmms_eval.tasks.air_bench.utils import process_results_batch_chat

    monkeypatch.setenv("API_TYPE", "dummy")
    doc = {"uniq_id": "c1", "task_name": "t", "question": "Q?", "answer_gt": "a dog", "meta_info": "m"}
    [row] = process_results_batch_chat([doc], [["I hear a dog barking"]])
    assert row["gpt_eval"]["score"] == pytest.approx(
        (10 + 10) / 2
    )  # as second it contains the reference: 10; as first: 10
    [row] = process_results_batch_chat([doc], [["a cat"]])
    assert row["gpt_eval"]["score"] == pytest.approx((1 + 10) / 2)  # as second: 1; as first: 10
