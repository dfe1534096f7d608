"""clotho_aqa_val / clotho_aqa_test: the published single-word prompt after the question, the clip
handed to simple and chat models, exact match ignoring case and punctuation (hand-worked)."""

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
