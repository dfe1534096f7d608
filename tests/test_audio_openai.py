"""OpenAI-compatible backends send audio as ``input_audio`` parts (base64 WAV), against the local
fault-injecting server; unreadable audio is a per-request failure that is never sent."""

from __future__ import annotations

import base64
import io
import wave
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from openai_server import OpenAIServer

from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure
from lmms_eval.models import get_model


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv


def requests_for(model: Any, audios: list[Any]) -> list[Instance]:
    docs = [{"audio": a, "text": f"Transcribe clip {i}."} for i, a in enumerate(audios)]

    def doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
        parts = [{"type": "audio", "url": doc["audio"]}, {"type": "text", "text": doc["text"]}]
        return [{"role": "user", "content": parts}]

    model.task_dict = {"t": {"test": docs}}
    return [
        Instance(
            "generate_until",
            (doc_to_messages, {"max_new_tokens": 8}, i, "t", "test"),
            0,
            {"task": "t", "doc_id": i, "split": "test"},
        )
        for i in range(len(docs))
    ]


@pytest.mark.parametrize("backend", ["openai", "async_openai"])
def test_audio_goes_out_as_input_audio_wav(server: OpenAIServer, backend: str) -> None:
    model = get_model(backend)(
        model="audio-model", base_url=server.base_url, api_key="sk-test", retry_backoff_s=0.01
    )
    samples = np.array([0.0, 0.25, -0.25, 0.5], dtype=np.float32)
    answers = model.generate_until(
        requests_for(model, [{"array": samples, "sampling_rate": 16000}, "gone.wav"])
    )
    assert (
        isinstance(answers[0], GenerationResult) and answers[0].text == ".0 pilc ebircsnarT"
    )  # the server reverses the text
    assert isinstance(answers[1], RequestFailure) and answers[1].kind == "input"  # not sent
    [payload] = server.payloads
    audio, text = payload["messages"][0]["content"]
    assert text == {"type": "text", "text": "Transcribe clip 0."}
    assert audio["type"] == "input_audio" and audio["input_audio"]["format"] == "wav"
    with wave.open(io.BytesIO(base64.b64decode(audio["input_audio"]["data"]))) as reader:
        assert (reader.getframerate(), reader.getnchannels()) == (16000, 1)
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
    assert pcm.tolist() == [0, 8192, -8192, 16384]
