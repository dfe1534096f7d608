"""lmms_eval.media.audio.load_audio: every source kind, resampling, mono, duration limits, failures;
audio parts in ChatMessages and in tasks' messages."""

from __future__ import annotations

import base64
import io
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lmms_eval.errors import MissingDependencyError
from lmms_eval.media import DecodedAudio, MediaError, load_audio, media_failure
from lmms_eval.media.urls import data_uri
from lmms_eval.protocol import ChatMessages, openai_audio_part

RATE = 16000


def tone(hz: float, seconds: float = 1.0, rate: int = RATE, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def stereo() -> np.ndarray:
    """Left: a 440 Hz tone; right: silence."""
    left = tone(440)
    return np.stack([left, np.zeros_like(left)], axis=1)


def encoded(samples: np.ndarray, fmt: str = "WAV", rate: int = RATE) -> bytes:
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, samples, rate, format=fmt)
    return buffer.getvalue()


def m4a(samples: np.ndarray, rate: int = RATE) -> bytes:
    import av

    out = io.BytesIO()
    with av.open(out, "w", format="ipod") as container:
        stream: Any = container.add_stream("aac", rate=rate)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(samples[None, :], format="flt", layout="mono")
        frame.sample_rate = rate
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    return out.getvalue()


def peak_hz(audio: DecodedAudio) -> float:
    spectrum = np.abs(np.fft.rfft(audio.samples))
    return float(np.argmax(spectrum) * audio.sampling_rate / len(audio.samples))


# -- sources -----------------------------------------------------------------------------------------


def test_every_source_kind_gives_the_same_samples(tmp_path: Path) -> None:
    samples = stereo()
    wav = encoded(samples)
    (tmp_path / "clips").mkdir()
    (tmp_path / "clips" / "a.wav").write_bytes(wav)
    sources: list[Any] = [
        wav,
        str(tmp_path / "clips" / "a.wav"),
        tmp_path / "clips" / "a.wav",
        "file://" + str(tmp_path / "clips" / "a.wav"),
        data_uri("audio/wav", wav),
        {"bytes": wav, "path": "ignored.wav"},
        {"bytes": None, "path": str(tmp_path / "clips" / "a.wav")},
    ]
    for source in sources:
        audio = load_audio(source, mono=False)
        assert audio.sampling_rate == RATE and audio.samples.shape == (RATE, 2)
        assert np.allclose(audio.samples, samples, atol=1 / 32767), source
    relative = load_audio("clips/a.wav", base_dir=str(tmp_path))
    assert relative.samples.shape == (RATE,)


def test_array_dicts_and_integer_pcm() -> None:
    audio = load_audio({"array": tone(440, rate=8000), "sampling_rate": 8000})
    assert audio.sampling_rate == 8000 and audio.samples.dtype == np.float32
    pcm = np.array([0, 16384, -32767], dtype=np.int16)
    assert load_audio({"array": pcm, "sampling_rate": 8000}).samples.tolist() == pytest.approx(
        [0.0, 16384 / 32767, -1.0]
    )
    assert load_audio({"array": [0.25, -0.25], "sampling_rate": 4}).as_dict()["sampling_rate"] == 4


def test_decoder_objects_of_datasets_4_are_read() -> None:
    class Samples:  # the shape of torchcodec's AudioSamples: (channels, frames) data
        def __init__(self) -> None:
            import torch

            self.data = torch.tensor(stereo().T.copy())
            self.sample_rate = RATE

    class Decoder:
        def get_all_samples(self) -> Samples:
            return Samples()

    pytest.importorskip("torch")
    audio = load_audio(Decoder(), mono=False)
    assert audio.samples.shape == (RATE, 2) and np.allclose(audio.samples, stereo())


def test_flac_and_m4a_decode() -> None:
    flac = load_audio(encoded(tone(440), "FLAC"))
    assert peak_hz(flac) == pytest.approx(440, abs=2)
    aac = load_audio(m4a(tone(440)))  # soundfile cannot read MP4: PyAV decodes it
    assert aac.sampling_rate == RATE and peak_hz(aac) == pytest.approx(440, abs=2)


# -- resampling, mono, duration ------------------------------------------------------------------


def test_resampling_keeps_the_pitch_and_the_duration() -> None:
    audio = load_audio(
        {"array": tone(1000, seconds=0.5, rate=44100), "sampling_rate": 44100}, sampling_rate=RATE
    )
    assert audio.sampling_rate == RATE and len(audio.samples) == RATE // 2
    assert audio.seconds == pytest.approx(0.5)
    assert peak_hz(audio) == pytest.approx(1000, abs=3)
    assert np.max(np.abs(audio.samples)) == pytest.approx(0.5, abs=0.02)


def test_mono_is_the_mean_of_the_channels_and_max_seconds_cuts() -> None:
    samples = stereo()
    mono = load_audio({"array": samples, "sampling_rate": RATE})
    assert mono.samples.shape == (RATE,)
    assert np.allclose(mono.samples, samples[:, 0] / 2)
    cut = load_audio({"array": samples, "sampling_rate": RATE}, mono=False, max_seconds=0.25)
    assert cut.samples.shape == (RATE // 4, 2)
    both = load_audio({"array": samples, "sampling_rate": RATE}, sampling_rate=8000, max_seconds=0.5)
    assert both.samples.shape == (4000,)


# -- failures ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (b"RIFF not really a wave file at all", "corrupt"),
        ("no/such/file.wav", "missing"),
        ("https://example.org/a.wav", "unsupported"),
        ({"array": np.zeros(0, dtype=np.float32), "sampling_rate": RATE}, "empty"),
        ({"array": np.array([0.0, np.nan]), "sampling_rate": RATE}, "corrupt"),
        ({"array": np.zeros(4), "sampling_rate": None}, "unsupported"),
        ({"path": None}, "unsupported"),
        (3.5, "unsupported"),
        ("data:audio/wav;base64,@@@", "corrupt"),
    ],
)
def test_broken_audio_is_a_media_error_and_a_per_request_failure(source: Any, problem: str) -> None:
    with pytest.raises(MediaError) as caught:
        load_audio(source)
    assert caught.value.problem == problem
    failure = media_failure(caught.value)
    assert failure.kind == "input" and not failure.retryable


def test_a_truncated_file_fails_as_media(tmp_path: Path) -> None:
    path = tmp_path / "cut.flac"
    path.write_bytes(encoded(tone(440), "FLAC")[:60])
    with pytest.raises(MediaError):
        load_audio(path)


def test_missing_resampler_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "soxr", None)
    with pytest.raises(MissingDependencyError, match=r"lmms_eval\[audio\]"):
        load_audio({"array": tone(440), "sampling_rate": RATE}, sampling_rate=8000)
    assert load_audio({"array": tone(440), "sampling_rate": RATE}, sampling_rate=RATE).sampling_rate == RATE


# -- protocol ----------------------------------------------------------------------------------------


def _wav_part(part: dict[str, Any]) -> tuple[int, int, np.ndarray]:
    assert part["type"] == "input_audio" and part["input_audio"]["format"] == "wav"
    with wave.open(io.BytesIO(base64.b64decode(part["input_audio"]["data"]))) as reader:
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
        return reader.getframerate(), reader.getnchannels(), pcm


def test_openai_messages_carry_input_audio_wav(tmp_path: Path) -> None:
    flac = tmp_path / "a.flac"
    flac.write_bytes(encoded(stereo(), "FLAC"))
    messages = ChatMessages.from_raw(
        [
            {
                "role": "user",
                "content": [
                    {"type": "audio", "url": str(flac)},
                    {"type": "text", "text": "Transcribe."},
                ],
            }
        ]
    )
    part = messages.to_openai_messages()[0]["content"][0]
    rate, channels, pcm = _wav_part(part)
    assert (rate, channels, len(pcm)) == (RATE, 2, 2 * RATE)  # converted to WAV, channels kept
    assert messages.to_hf_messages()[0]["content"][0] == {"type": "audio", "audio": str(flac)}
    assert messages.extract_media()[2] == [str(flac)]
    with pytest.raises(MediaError):
        openai_audio_part(str(tmp_path / "gone.wav"))


def test_tasks_put_doc_to_audio_and_audio_visuals_into_messages(write_files: Any, tmp_path: Path) -> None:
    from lmms_eval.tasks import TaskManager

    root = write_files(
        {
            "t/data.jsonl": '{"clip": "x.wav", "text": "hello"}\n',
            "t/utils.py": "def audio(doc):\n    return [{'array': [0.0, 0.5], 'sampling_rate': 8000}]\n",
            "t/chat.yaml": "task: audio_chat\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
            "    test: data.jsonl\ntest_split: test\ndoc_to_text: '{{text}}'\ndoc_to_target: text\n"
            "doc_to_audio: !function utils.audio\noutput_type: generate_until\n",
            "t/simple.yaml": "task: audio_simple\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
            "    test: data.jsonl\ntest_split: test\ndoc_to_text: '{{text}}'\ndoc_to_target: text\n"
            "doc_to_visual: !function utils.audio\noutput_type: generate_until\n",
        },
        tmp_path / "tasks",
    )
    tasks = TaskManager(include_path=str(root)).load_task_or_group(["audio_chat", "audio_simple"])
    for name in ("audio_chat", "audio_simple"):
        task: Any = tasks[name]
        doc = task.eval_docs[0]
        content = task.build_messages(doc)[0]["content"]
        assert [p["type"] for p in content] == ["audio", "text"]
        assert content[0]["url"] == {"array": [0.0, 0.5], "sampling_rate": 8000}
    simple: Any = tasks["audio_simple"]
    assert simple.doc_to_visual(simple.eval_docs[0]) == [{"array": [0.0, 0.5], "sampling_rate": 8000}]
