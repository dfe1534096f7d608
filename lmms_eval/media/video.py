"""Videos: one frame sampler (:func:`sample_frame_indices`) and the frame readers built on it.

A video is given as a list of frames (anything :func:`~lmms_eval.media.image.load_image` reads), a
folder of frame images (in natural order: ``frame_2`` before ``frame_10``), or a
``{"frames" | "path" | "url": ...}`` dict of either. Video files (``.mp4``, ...) are recognised by
:func:`is_video` but not decoded here: backends send them as files or URLs, or ask for frames.

Frame sampling (``sampling``):

* ``"uniform"``: the first and the last frame and evenly spaced ones between, the indices of
  ``numpy.linspace(0, total - 1, count)`` truncated to integers (``int(i * ((total - 1) / (count - 1)))``
  in floating point, the last one ``total - 1``); one frame is the first frame. This is the rule of
  the published ``read_video`` (checked frame by frame on generated clips), and of the transformers,
  vLLM and SGLang backends;
* ``"centered"``: the centre of each of ``count`` equal segments, ``int((i + 0.5) * total / count)``
  (one frame: the middle one); the OpenAI backends.

Both give every frame when ``count`` is None, not positive, or at least the number of frames.

How many frames (:func:`frames_to_sample`, the rule of :func:`~lmms_eval.media.video_decode.read_video`):
``nframes`` when given; else with ``fps``, ``floor(duration * fps)`` frames where ``duration`` is
``total / video_fps`` (at least one frame); then at most ``max_num_frames``. With neither,
``max_num_frames`` frames (default :data:`DEFAULT_NFRAMES`, 8, as the published reader).
"""

from __future__ import annotations

import math
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any, Literal

from lmms_eval.media.errors import MediaError
from lmms_eval.media.image import IMAGE_SUFFIXES, load_image

FrameSampling = Literal["uniform", "centered"]
FRAME_SAMPLINGS: tuple[FrameSampling, ...] = ("uniform", "centered")
_DIGITS = re.compile(r"(\d+)")
# frames read when neither nframes, fps nor max_num_frames is given (the published default)
DEFAULT_NFRAMES = 8
# suffixes of common video files (any suffix that is not an image suffix counts as a video)
VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v", ".mpg", ".mpeg", ".flv", ".wmv", ".3gp")


def sample_frame_indices(total: int, count: int | None, sampling: FrameSampling = "uniform") -> list[int]:
    """``count`` increasing indices spread evenly over ``range(total)`` (module doc for ``sampling``);
    all of them when ``count`` is None or not positive or ``total <= count``."""
    if total < 0:
        raise ValueError(f"a video cannot have {total} frames")
    if sampling not in FRAME_SAMPLINGS:
        raise ValueError(f"unknown frame sampling {sampling!r}; use one of {', '.join(FRAME_SAMPLINGS)}")
    if count is None or count <= 0 or total <= count:
        return list(range(total))
    if sampling == "centered":
        return [int((i + 0.5) * total / count) for i in range(count)]
    if count == 1:
        return [0]
    step = (total - 1) / (count - 1)  # numpy.linspace's step, so the same floats and the same indices
    return [int(i * step) for i in range(count - 1)] + [total - 1]


def frames_to_sample(
    total: int,
    video_fps: float | None = None,
    nframes: int | None = None,
    fps: float | None = None,
    max_num_frames: int | None = None,
) -> int | None:
    """How many of ``total`` frames to sample (module doc); None or 0 means every frame.

    ``nframes`` and ``fps`` exclude each other; ``fps`` needs the video's own ``video_fps``.
    """
    if nframes is not None and fps is not None:
        raise ValueError("give nframes or fps, not both")
    if fps is not None:
        if fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        if not video_fps or video_fps <= 0:
            raise ValueError("sampling by fps needs the video's frame rate, which is unknown")
        count = max(1, math.floor(total / video_fps * fps))
        cap = DEFAULT_NFRAMES if max_num_frames is None else max_num_frames
        return count if cap <= 0 else min(count, cap)
    if nframes is None:
        return DEFAULT_NFRAMES if max_num_frames is None else max_num_frames
    if max_num_frames is not None and max_num_frames > 0 and nframes > 0:
        return min(nframes, max_num_frames)
    return nframes


# -- what a video is -----------------------------------------------------------------------------------


def _unwrap(source: Any) -> Any:
    """The first of ``frames``, ``path`` and ``url`` that a dict sets (anything else as it is)."""
    if isinstance(source, dict):
        return next((source[k] for k in ("frames", "path", "url") if source.get(k) is not None), None)
    return source


def _is_video_text(text: str) -> bool:
    if text.startswith("data:"):
        return text[len("data:") :].lower().startswith("video/")
    if os.path.isdir(text):
        return True
    path = urllib.parse.urlsplit(text).path if "://" in text else text
    suffix = os.path.splitext(path)[1].lower()
    return suffix != "" and suffix not in IMAGE_SUFFIXES


def is_video(visual: Any) -> bool:
    """Whether a ``doc_to_visual`` item is a video rather than an image.

    Videos: frame lists (lists, tuples), ``{"frames": ...}`` dicts, folders, ``data:video/...``
    URIs, and paths or URLs with a suffix that is not an image suffix (``clip.mp4``, ``v.webm?x=1``).
    Images: everything else (PIL images, arrays, bytes, ``{"bytes", "path"}`` dicts with bytes,
    paths with an image suffix or none).
    """
    if isinstance(visual, (list, tuple)):
        return True
    if isinstance(visual, dict):
        if "frames" in visual:
            return True
        if visual.get("bytes") is not None:
            return False
        visual = visual.get("path") or visual.get("url")
    if isinstance(visual, (str, os.PathLike)):
        return _is_video_text(os.fsdecode(visual))
    return False


def is_frame_video(source: Any) -> bool:
    """Whether a video is given as frames (a list, a folder, or a dict of one) rather than a file."""
    source = _unwrap(source)
    if isinstance(source, (list, tuple)):
        return True
    return isinstance(source, (str, os.PathLike)) and os.path.isdir(source)


# -- frames --------------------------------------------------------------------------------------------


def _natural_key(name: str) -> tuple[list[Any], str]:
    """``frame_2`` sorts before ``frame_10`` (and ``frame_01`` before ``frame_1``: ties by name)."""
    return [int(t) if t.isdigit() else t for t in _DIGITS.split(name)], name


def video_frames(source: Any) -> list[Any]:
    """All frames of a video given as frames: the list itself, or the paths of a folder's frame
    images in natural order. A video file, an empty list or a folder without frames is an error."""
    source = _unwrap(source)
    if isinstance(source, (list, tuple)):
        if not source:
            raise MediaError("video has no frames: its frame list is empty", "empty")
        return list(source)
    if isinstance(source, (str, os.PathLike)):
        path = os.fsdecode(source)
        if not os.path.isdir(path):
            what = "no such file or folder" if not os.path.exists(path) else "a file"
            raise MediaError(
                f"video '{path}' ({what}): only a list of frames or a folder of frame images is read "
                "here; read_video decodes video files",
                "missing" if what.startswith("no such") else "unsupported",
            )
        frames = sorted(
            (str(p) for p in Path(path).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES), key=_natural_key
        )
        if not frames:
            raise MediaError(
                f"video folder '{path}' holds no frame images ({', '.join(IMAGE_SUFFIXES)})", "empty"
            )
        return frames
    raise MediaError(
        f"cannot read a {type(source).__name__} as a video; give a list of frames or a folder", "unsupported"
    )


def sample_video_frames(source: Any, count: int | None, sampling: FrameSampling = "uniform") -> list[Any]:
    """At most ``count`` frames of a video given as frames (see :func:`video_frames`), as given
    (paths stay paths), chosen by :func:`sample_frame_indices`."""
    frames = video_frames(source)
    return [frames[i] for i in sample_frame_indices(len(frames), count, sampling)]


def load_video_frames(
    source: Any, max_num_frames: int | None, sampling: FrameSampling = "uniform"
) -> list[Any]:
    """At most ``max_num_frames`` sampled frames of a video given as frames, as RGB PIL images."""
    return [load_image(frame) for frame in sample_video_frames(source, max_num_frames, sampling)]


__all__ = [
    "DEFAULT_NFRAMES",
    "FRAME_SAMPLINGS",
    "VIDEO_SUFFIXES",
    "FrameSampling",
    "frames_to_sample",
    "is_frame_video",
    "is_video",
    "load_video_frames",
    "sample_frame_indices",
    "sample_video_frames",
    "video_frames",
]
