"""clotho_aqa_val / clotho_aqa_test: the published single-word prompt after the question, the clip
handed to simple and chat models, exact match ignoring case and punctuation (hand-worked).
clotho_asqa_test_v2: the bare question, one judge call per answer with the published prompt, the
first digit 0-5 of the reply as the rating, gpt_eval = 100 * mean rating / 5 (the published
aggregation gives 70.0 on the four readable replies below)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import build_tiny_qwen2_5_omni, build_tiny_qwen2_audio, wav_clip, write_audio_split
from bench_helpers import ScriptedModel

REPO = "lmms-lab-audio/ClothoAQA"
POST = "\nAnswer the question using a single word only. "

# (question, answer, scripted output, exact match)
CASES = [
    ("Is it raining?", "yes", "Yes.", True),  # case and the full stop are ignored
    ("Are birds singing?", "no", "No", True),
    ("What animal is heard?", "dog", "dogs", False),  # no stemming
    ("Is there a car?", "yes", "It is a car", False),  # the whole output is compared
    ("What is the weather like?", "rainy", "RAINY!", True),
]


@pytest.fixture
def clotho_data(dataset_root: Path) -> None:
    rows = [
        {"audio": wav_clip(300 + 50 * i), "question": q, "answer": a} for i, (q, a, *_) in enumerate(CASES)
    ]
    write_audio_split(dataset_root, REPO, "clotho_aqa", "clotho_aqa_test_filtered", rows)
    write_audio_split(dataset_root, REPO, "clotho_aqa", "clotho_aqa_val_filtered", rows[:2])


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for q, _, out, _ in CASES if q == doc["question"])


def test_exact_match_ignoring_case_and_punctuation(clotho_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("clotho_aqa", _answer)["results"]
    assert results["clotho_aqa_test"]["exact_match,none"] == pytest.approx(3 / 5)
    assert results["clotho_aqa_val"]["exact_match,none"] == pytest.approx(1.0)
    assert "clotho_asqa_test_v2" not in results  # the published group has only val and test


def test_prompt_and_audio(clotho_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("clotho_aqa_val", _answer, model=simple)
    text, [audio] = simple.seen["clotho_aqa_val"][0]
    assert text == "Is it raining?" + POST
    assert sorted(audio) == ["array", "sampling_rate"] and audio["sampling_rate"] == 16000
    assert len(audio["array"]) == 8000
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("clotho_aqa_val", _answer, model=chat)
    [message] = chat.seen["clotho_aqa_val"][1]
    assert [p["type"] for p in message["content"]] == ["audio", "text"]
    assert message["content"][1]["text"] == "Are birds singing?" + POST


@pytest.mark.parametrize("model_id", ["qwen2_audio", "qwen2_5_omni"])
def test_tiny_audio_chat_models_end_to_end(
    clotho_data: None, run_benchmark: Any, tmp_path: Path, model_id: str
) -> None:
    """The whole path with a real (tiny, random) audio chat model: task messages, audio decoding
    and resampling, the engine, scoring; every document answered, none failed."""
    pytest.importorskip("transformers")
    pytest.importorskip("soxr")
    from lmms_eval.models import get_model

    build = {"qwen2_audio": build_tiny_qwen2_audio, "qwen2_5_omni": build_tiny_qwen2_5_omni}[model_id]
    folder = build(str(tmp_path / model_id))
    model = get_model(model_id).create_from_arg_string(f"pretrained={folder},device=cpu,batch_size=2", {})
    out = run_benchmark("clotho_aqa_test", _answer, model=model, gen_kwargs="max_new_tokens=3")
    assert out["n-samples"]["clotho_aqa_test"]["effective"] == len(CASES)
    assert "failed" not in out["n-samples"]["clotho_aqa_test"]
    assert 0.0 <= out["results"]["clotho_aqa_test"]["exact_match,none"] <= 1.0


# v2: (question, reference, scripted output, judge reply, rating)
V2 = [
    ("What is heard?", "A dog barking loudly.", "a dog", "Explanation: it lacks detail.\nRating: 4", 4),
    ("Where is it?", "In a busy street.", "a kitchen", "Rating: 2", 2),
    ("What makes the sound?", "Rain on a roof.", "rain falling on a roof", "5", 5),
    (
        "How many birds?",
        "Three birds.",
        "one bird",
        "Explanation: the reference has 3 birds, the model 1.\nRating: 1",
        3,
    ),
    ("Is it loud?", "Very loud.", "quiet", "Rating: 7", 0),  # no digit 0-5: unreadable, 0
]
V2_GPT_EVAL = 100 * (4 + 2 + 5 + 3 + 0) / 5 / 5  # 56.0; first digit of the fourth reply is 3


@pytest.fixture
def clotho_v2_data(dataset_root: Path) -> None:
    rows = [{"audio": wav_clip(300 + 50 * i), "question": q, "answer": a} for i, (q, a, *_) in enumerate(V2)]
    write_audio_split(dataset_root, REPO, "clotho_asqa_test_v2", "test", rows)


def _v2_answer(task: str, doc: dict[str, Any]) -> str:
    return next(case[2] for case in V2 if case[0] == doc["question"])


def test_v2_judge_rating(clotho_v2_data: None, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval import llm_judge
    from lmms_eval.llm_judge import DummyJudge, Request
    from lmms_eval.llm_judge.base import ProviderReply

    prompts: list[str] = []

    class Judge(DummyJudge):
        def _invoke(self, request: Request) -> ProviderReply:
            text = request.prompt_text()
            prompts.append(text)
            reply = next(case[3] for case in V2 if f"[Model Answer]\n            {case[2]}\n" in text)
            return ProviderReply(text=reply, latency_s=0.0, attempts=1)

    monkeypatch.setenv("API_TYPE", "dummy")
    monkeypatch.setattr(llm_judge, "get_server", lambda *a, **k: Judge())
    simple = ScriptedModel(_v2_answer, chat=False)
    out = run_benchmark("clotho_asqa_test_v2", _v2_answer, model=simple, log_samples=True)
    assert out["results"]["clotho_asqa_test_v2"]["gpt_eval,none"] == pytest.approx(V2_GPT_EVAL)
    assert len(prompts) == len(V2)
    first = next(p for p in prompts if "a dog\n" in p)
    assert first.startswith(
        "\n            [Question]\n            What is heard?\n\n            [Reference Answer]\n"
        "            A dog barking loudly.\n\n            [Model Answer]\n            a dog\n\n            [Task]\n"
    )
    assert first.endswith('I think ...")\n            Rating: (int)')
    text, [audio] = simple.seen["clotho_asqa_test_v2"][0]
    assert text == "What is heard?"  # no post prompt
    assert audio["sampling_rate"] == 16000


def test_v2_without_judge_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.errors import ConfigError
    from lmms_eval.tasks.clotho_aqa.utils import process_results_batch_v2

    monkeypatch.delenv("API_TYPE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"LLM judge only"):
        process_results_batch_v2([{"question": "Q?", "answer": "A"}], [["answer"]])
