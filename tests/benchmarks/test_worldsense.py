"""worldsense: the published prompt, the video to every model, its audio track to audio-capable
models only (one notice for the others), and the score in percent."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root

REPO = "lmms-lab/worldsense"
CASES = [("B", "B"), ("(C) a bird", "C"), ("I think A", "D")]  # (answer, gold): 2 of 3 right


def write_video_with_audio(path: Path, seconds: float = 1.0, rate: int = 8000) -> Path:
    """An MPEG-4 clip (4 fps, 32x24) with a mono AAC track of a 440 Hz tone."""
    import av
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        video = container.add_stream("mpeg4", rate=4)
        video.width, video.height, video.pix_fmt = 32, 24, "yuv420p"
        audio = container.add_stream("aac", rate=rate)
        audio.layout = "mono"
        for i in range(int(4 * seconds)):
            frame = av.VideoFrame.from_ndarray(np.full((24, 32, 3), 16 * i, dtype=np.uint8), format="rgb24")
            for packet in video.encode(frame):
                container.mux(packet)
        t = np.arange(int(rate * seconds)) / rate
        samples = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
        for start in range(0, len(samples), 1024):
            chunk = samples[start : start + 1024].reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="mono")
            frame.sample_rate, frame.pts = rate, start
            for packet in audio.encode(frame):
                container.mux(packet)
        for stream in (video, audio):
            for packet in stream.encode():
                container.mux(packet)
    return path


@pytest.fixture
def worldsense_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    text = datasets.Value("string")
    rows = [
        {
            "video_path": "w.mp4",
            "question": f"What sings {i}?",
            "candidates": ["A. a dog", "B. a man", "C. a bird", "D. a car"],
            "answer": gold,
        }
        for i, (_, gold) in enumerate(CASES)
    ]
    hub_dataset(
        REPO,
        "test",
        rows,
        {"video_path": text, "question": text, "candidates": datasets.Sequence(text), "answer": text},
    )
    write_video_with_audio(dataset_root / REPO / "w.mp4")
    use_dataset_root(monkeypatch, dataset_root, "WorldSense")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["question"].split()[-1].rstrip("?"))][0]


def test_score_and_prompt_without_audio(
    worldsense_data: None, run_benchmark: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from lmms_eval.tasks.worldsense import utils

    utils._noticed.clear()
    chat = ScriptedModel(_answer, chat=True)
    with caplog.at_level(logging.WARNING, logger="lmms_eval.tasks.worldsense.utils"):
        results = run_benchmark("worldsense", _answer, model=chat)["results"]["worldsense"]
    assert results["worldsense_score,none"] == pytest.approx(200 / 3)
    [message] = chat.seen["worldsense"][0]
    assert [p["type"] for p in message["content"]] == ["video", "text"]
    assert message["content"][1]["text"].endswith("What sings 0?\nA. a dog\nB. a man\nC. a bird\nD. a car\n")
    notices = [r for r in caplog.records if "audio tracks are left out" in r.getMessage()]
    assert len(notices) == 1  # once, not once per document


def test_audio_track_reaches_audio_capable_models(worldsense_data: None, run_benchmark: Any) -> None:
    omni = ScriptedModel(_answer, chat=True)
    omni._model_name = "qwen2_5_omni"
    run_benchmark("worldsense", _answer, model=omni, limit=1)
    [message] = omni.seen["worldsense"][0]
    video, audio, _text = message["content"]
    assert video["type"] == "video" and audio["type"] == "audio"
    track = audio["url"]
    assert track["sampling_rate"] == 16000 and 0.8 * 16000 < len(track["array"]) < 1.3 * 16000
