"""The ``whisper`` simple model on a tiny random checkpoint built at test time: registration, language
and task tokens, batched == single, broken audio as a per-request failure."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.api.instance import Instance
from lmms_eval.errors import ModelArgsError

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from audio_fixtures import build_tiny_whisper, check_batched_equals_single, speak, tone

pytest.importorskip("transformers")
pytest.importorskip("soxr")

TASK, SPLIT = "asr", "test"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_tiny_whisper(str(tmp_path_factory.mktemp("tiny_whisper")))


def docs() -> dict[int, dict[str, Any]]:
    spoken = speak("hello world") or tone(330, 0.8, rate=22050)
    return {
        0: {"audio": tone(440)},
        1: {"audio": spoken},
        2: {"audio": tone(880, 0.3, rate=8000)},
        3: {"audio": {"array": [], "sampling_rate": 16000}},  # empty: a per-request failure
        4: {"audio": tone(220, 2.0, rate=44100)},
    }


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [doc["audio"]]


def request(doc_id: int, gen_kwargs: dict[str, Any] | None = None) -> Instance:
    args = ("ignored prompt", gen_kwargs or {"max_new_tokens": 8}, doc_to_visual, doc_id, TASK, SPLIT)
    return Instance("generate_until", args, 0, {"task": TASK, "doc_id": doc_id, "split": SPLIT})


def model(checkpoint: str, **kwargs: Any) -> Any:
    from lmms_eval.models import get_model

    instance = get_model("whisper").create_from_arg_string(f"pretrained={checkpoint},device=cpu", kwargs)
    instance.task_dict = {TASK: {SPLIT: docs()}}
    return instance


def test_whisper_is_a_registered_simple_model() -> None:
    from lmms_eval.models import AVAILABLE_SIMPLE_MODELS, MODEL_REGISTRY_V2

    resolved = MODEL_REGISTRY_V2.resolve("whisper")
    assert resolved.model_type == "simple" and resolved.class_path.endswith("hf.whisper.Whisper")
    assert "whisper" in AVAILABLE_SIMPLE_MODELS


def test_batched_equals_single_and_broken_audio_fails_alone(checkpoint: str) -> None:
    requests = [request(i) for i in range(5)]
    check_batched_equals_single(lambda size: model(checkpoint, batch_size=size), requests, 8)


def test_language_and_task_tokens_steer_the_decoder(checkpoint: str) -> None:
    captured: list[dict[str, Any]] = []
    whisper = model(checkpoint, language="fr", task="translate")
    generate = whisper.model.generate

    def spy(**kwargs: Any) -> Any:
        captured.append(kwargs)
        return generate(**kwargs)

    whisper.model.generate = spy
    whisper.generate_until([request(0, {"max_new_tokens": 4, "until": ["zzz"]})])
    assert captured[0]["language"] == "fr" and captured[0]["task"] == "translate"
    assert captured[0]["max_new_tokens"] == 4
    assert captured[0]["input_features"].shape[-1] == 3000  # one 30 s window of 10 ms frames
    tokenizer = whisper.processor.tokenizer
    features = captured[0]["input_features"]
    out = generate(
        input_features=features,
        language="fr",
        task="translate",
        max_new_tokens=1,
        return_dict_in_generate=True,
    )
    prompt = tokenizer.convert_ids_to_tokens(out.sequences[0].tolist()[:4])
    assert prompt == ["<|startoftranscript|>", "<|fr|>", "<|translate|>", "<|notimestamps|>"]


def test_bad_arguments_and_loglikelihood(checkpoint: str) -> None:
    with pytest.raises(ModelArgsError, match="transcribe"):
        model(checkpoint, task="summarise")
    with pytest.raises(ModelArgsError, match="generate_until"):
        model(checkpoint).loglikelihood([])
