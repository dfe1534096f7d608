"""The Qwen audio chat models (``qwen2_audio``, ``qwen2_5_omni``) on tiny random checkpoints built at test time:
registration, audio parts reaching the model, batched == single, broken audio as a per-request
failure, loglikelihood."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from audio_fixtures import (
    build_tiny_qwen2_5_omni,
    build_tiny_qwen2_audio,
    check_batched_equals_single,
    speak,
    texts,
    tone,
)

pytest.importorskip("transformers")
pytest.importorskip("soxr")

TASK, SPLIT = "audio_qa", "test"
BUILDERS = {"qwen2_audio": build_tiny_qwen2_audio, "qwen2_5_omni": build_tiny_qwen2_5_omni}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def checkpoint(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    model_id = str(request.param)
    return model_id, BUILDERS[model_id](str(tmp_path_factory.mktemp(model_id)))


def docs() -> dict[int, dict[str, Any]]:
    spoken = speak("hello world") or tone(330, 0.8, rate=22050)
    return {
        0: {"audio": tone(440), "question": "What is the sound?"},
        1: {"audio": spoken, "question": "What is said?"},
        2: {"audio": tone(880, 0.3, rate=8000), "question": "Which tone is it?"},
        3: {"audio": {"array": [], "sampling_rate": 16000}, "question": "Empty?"},  # a per-request failure
        4: {"audio": tone(220, 2.0, rate=44100), "question": "How many seconds?"},
    }


def doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    content = [{"type": "audio", "url": doc["audio"]}, {"type": "text", "text": doc["question"]}]
    return [{"role": "user", "content": content}]


def request(doc_id: int, gen_kwargs: dict[str, Any] | None = None) -> Instance:
    args = (doc_to_messages, gen_kwargs or {"max_new_tokens": 6}, None, doc_id, TASK, SPLIT)
    return Instance("generate_until", args, 0, {"task": TASK, "doc_id": doc_id, "split": SPLIT})


def model(checkpoint: tuple[str, str], **kwargs: Any) -> Any:
    from lmms_eval.models import get_model

    model_id, folder = checkpoint
    instance = get_model(model_id).create_from_arg_string(f"pretrained={folder},device=cpu", kwargs)
    instance.task_dict = {TASK: {SPLIT: docs()}}
    return instance


@pytest.mark.parametrize("model_id", sorted(BUILDERS))
def test_registered_as_chat_models(model_id: str) -> None:
    from lmms_eval.models import AVAILABLE_CHAT_TEMPLATE_MODELS, MODEL_REGISTRY_V2

    resolved = MODEL_REGISTRY_V2.resolve(model_id)
    assert resolved.model_type == "chat" and resolved.class_path.startswith(
        f"lmms_eval.models.hf.{model_id}."
    )
    assert model_id in AVAILABLE_CHAT_TEMPLATE_MODELS


def test_batched_equals_single_and_broken_audio_fails_alone(checkpoint: tuple[str, str]) -> None:
    requests = [request(i) for i in range(5)]
    check_batched_equals_single(lambda size: model(checkpoint, batch_size=size), requests, 6)


def test_audio_reaches_the_model(checkpoint: tuple[str, str]) -> None:
    engine = model(checkpoint, batch_size=2)
    captured: list[dict[str, Any]] = []
    generate = engine.model.generate

    def spy(**kwargs: Any) -> Any:
        captured.append(kwargs)
        return generate(**kwargs)

    engine.model.generate = spy
    engine.generate_until([request(0), request(2)])
    engine.generate_until([request(4)])
    features = [call["input_features"] for call in captured]
    assert [f.shape[0] for f in features] == [2, 1]
    assert features[0].shape[-1] == 3000  # resampled to 16 kHz and padded to one 30 s window
    assert not features[0][0].equal(features[0][1]) and not features[0][0].equal(features[1][0])
    # the prompt holds the processor's audio tokens, as many as the clip's length gives
    audio_id = engine.processor.audio_token_id
    counts = sorted((captured[0]["input_ids"] == audio_id).sum(dim=1).tolist())
    assert 0 < counts[0] < counts[1]  # 0.3 s of audio against 1 s
    # different audio changes what the model computes
    logits = [
        engine.model(**{k: v[i : i + 1] for k, v in captured[0].items() if k != "generation_config"}).logits
        for i in range(2)
    ]
    assert not logits[0][:, -1].allclose(logits[1][:, -1])


def test_loglikelihood_and_text_only(checkpoint: tuple[str, str]) -> None:
    engine = model(checkpoint)
    args = (doc_to_messages, " yes", None, 0, TASK, SPLIT)
    broken = (doc_to_messages, " yes", None, 3, TASK, SPLIT)
    scores = engine.loglikelihood(
        [
            Instance("loglikelihood", a, 0, {"task": TASK, "doc_id": a[3], "split": SPLIT})
            for a in (args, broken)
        ]
    )
    assert isinstance(scores[0], tuple) and scores[0][0] < 0
    assert isinstance(scores[1], RequestFailure) and scores[1].kind == "input"

    def text_only(doc: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": doc["question"]}]}]

    plain = Instance(
        "generate_until", (text_only, {"max_new_tokens": 3}, None, 0, TASK, SPLIT), 0, request(0).metadata
    )
    assert isinstance(engine.generate_until([plain])[0], GenerationResult)


def test_omni_loads_the_thinker_only(tmp_path: Path) -> None:
    """The released Omni checkpoint holds the talker too; evaluation builds and loads only the thinker."""
    from safetensors import safe_open

    folder = build_tiny_qwen2_5_omni(str(tmp_path / "omni"))
    with safe_open(str(Path(folder) / "model.safetensors"), "pt") as weights:
        prefixes = {key.split(".")[0] for key in weights.keys()}  # noqa: SIM118 (not a dict)
    assert prefixes == {"thinker", "talker", "token2wav"}
    engine = model(("qwen2_5_omni", folder))
    assert type(engine.model).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    names = {name.split(".")[0] for name, _ in engine.model.named_parameters()}
    assert names and not names & {"talker", "token2wav"}
    from PIL import Image

    def image_and_audio(doc: dict[str, Any]) -> list[dict[str, Any]]:
        image = {"type": "image", "url": Image.new("RGB", (64, 48), "red")}
        return [{"role": "user", "content": [image, *doc_to_messages(doc)[0]["content"]]}]

    both = Instance(
        "generate_until",
        (image_and_audio, {"max_new_tokens": 4}, None, 0, TASK, SPLIT),
        0,
        request(0).metadata,
    )
    outs = engine.generate_until([request(0), both])
    assert all(isinstance(o, GenerationResult) and o.token_counts for o in outs)
    counts = [
        o.token_counts.input_tokens or 0 for o in outs if isinstance(o, GenerationResult) and o.token_counts
    ]
    assert counts[1] > counts[0]  # the image's tokens are in the prompt


def test_audio_from_doc_to_visual(checkpoint: tuple[str, str]) -> None:
    """A simple-layout request (audio dicts from ``doc_to_visual``, as the published audio tasks
    give them) reaches the model as the same audio part as ``doc_to_messages``."""
    engine = model(checkpoint)

    def visuals(doc: dict[str, Any]) -> list[Any]:
        return [doc["audio"]]

    simple = Instance(
        "generate_until",
        (docs()[1]["question"], {"max_new_tokens": 6}, visuals, 1, TASK, SPLIT),
        0,
        request(1).metadata,
    )
    out = engine.generate_until([simple, request(1)])
    assert isinstance(out[0], GenerationResult) and texts(out[:1]) == texts(out[1:])


def test_omni_thinker_saved_alone_answers_as_the_full_checkpoint(tmp_path: Path) -> None:
    """A thinker saved on its own (as after fine-tuning it) loads as it is and answers exactly as
    the full checkpoint it came from."""
    from transformers import Qwen2_5OmniForConditionalGeneration

    from lmms_eval.models.hf.compat import load_processor

    full = build_tiny_qwen2_5_omni(str(tmp_path / "omni"))
    thinker_dir = tmp_path / "thinker"
    loaded = Qwen2_5OmniForConditionalGeneration.from_pretrained(full, enable_audio_output=False)
    loaded.thinker.generation_config = loaded.generation_config
    loaded.thinker.save_pretrained(thinker_dir)
    load_processor(full).save_pretrained(thinker_dir)
    engine = model(("qwen2_5_omni", str(thinker_dir)))
    assert type(engine.model).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    requests = [request(0), request(1)]
    assert texts(engine.generate_until(requests)) == texts(
        model(("qwen2_5_omni", full)).generate_until(requests)
    )
