"""Synthetic videos for the video benchmark tests, encoded with PyAV at test time.

``write_video(path, frames=8, fps=8, size=(32, 24), shade=0)`` writes a tiny MPEG-4 clip whose
frames are solid colours (frame ``i`` has red ``(shade + 16 * i) % 256``), so a decoded frame tells
which video and which frame it came from. ``write_srt`` writes a SubRip subtitle file.
:class:`ScriptedLoglikelihoods` answers the log-likelihood requests of the ``_mcppl`` tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_helpers import ScriptedModel

from lmms_eval.api.instance import Instance


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


class ScriptedLoglikelihoods(ScriptedModel):
    """A simple model for the ``_mcppl`` tasks: the log-likelihood of choice ``i`` of a doc is
    ``scores(task, doc)[i]``; ``seen[task][doc_id]`` holds the ``(context, continuation)`` of each
    choice's request, in order."""

    def __init__(self, scores: Callable[[str, dict[str, Any]], Sequence[float]]) -> None:
        super().__init__(lambda task, doc: "", chat=False)
        self.scores = scores

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        out = []
        for request in requests:
            context, continuation, _visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            self.seen.setdefault(task, {}).setdefault(doc_id, []).append((context, continuation))
            values = list(self.scores(task, doc))
            out.append((float(values[request.idx]), values[request.idx] == max(values)))
        return out
