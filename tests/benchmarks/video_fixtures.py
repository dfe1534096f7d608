"""Synthetic videos for the video benchmark tests, encoded with PyAV at test time.

``write_video(path, frames=8, fps=8, size=(32, 24), shade=0)`` writes a tiny MPEG-4 clip whose
frames are solid colours (frame ``i`` has red ``(shade + 16 * i) % 256``), so a decoded frame tells
which video and which frame it came from. ``write_srt`` writes a SubRip subtitle file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def write_video(
    path: Path, frames: int = 8, fps: int = 8, size: tuple[int, int] = (32, 24), shade: int = 0
) -> Path:
    """An ``frames``-frame ``size`` (width, height) clip at ``fps`` frames per second."""
    import av
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    width, height = size
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            pixels = np.zeros((height, width, 3), dtype=np.uint8)
            pixels[..., 0] = (shade + 16 * i) % 256
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def _timestamp(seconds: float) -> str:
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{millis:03d}"


def write_srt(path: Path, cues: Sequence[tuple[float, float, str]]) -> Path:
    """A SubRip file with one numbered cue per ``(start_s, end_s, text)``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = [
        f"{i}\n{_timestamp(start)} --> {_timestamp(end)}\n{text}\n"
        for i, (start, end, text) in enumerate(cues, 1)
    ]
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def use_dataset_root(monkeypatch: Any, dataset_root: Path, cache_dir: str) -> None:
    """Keep video loading off the user's files: ``HF_HOME`` is an empty temporary folder, so the
    videos can only come from the local copy under ``dataset_root`` (``--dataset_root`` of the run,
    which the video tasks' ``doc_to_visual`` sees as ``$LMMS_EVAL_DATASET_ROOT`` while it runs)."""
    hf_home = dataset_root.parent / "hf_home"
    hf_home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.delenv("LMMS_EVAL_DATASET_ROOT", raising=False)
    assert not (hf_home / cache_dir).exists()
