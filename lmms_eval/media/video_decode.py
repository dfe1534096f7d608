"""Video files decoded into sampled, resized frames: :func:`read_video` and its backends.

``read_video(source, nframes | fps, max_num_frames, start_time, end_time, max_pixels, min_pixels,
return_timestamps)`` returns a ``(frames, height, width, 3)`` uint8 array (RGB); with
``return_timestamps=True`` a ``(frames, timestamps)`` pair, the timestamps in seconds from the
first frame. :func:`decode_video` takes the same arguments and returns a :class:`DecodedVideo`
that also carries the frame indices, the video's frame rate and its frame count (what a model
processor wants as video metadata). :func:`probe_video` gives the frame count, frame rate, size
and every frame's timestamp without decoding. ``read_video_pyav`` is the published package's older
name of :func:`read_video`; its ``num_frm`` argument is accepted too (``nframes``, or the cap of
``fps`` sampling when ``fps`` is given, as in the published reader).

Sources
    a path (``str`` / ``PathLike``), a ``file://`` or ``http(s)://`` URL, a ``data:video/...`` URI,
    bytes, a ``{"path" | "url" | "bytes": ...}`` dict, or a video given as frames (a list of
    images or a folder of frame images; its frame rate is the dict's ``fps`` key, else 1).

Which frames
    Frame ``i`` is the ``i``-th frame in presentation order. The frames inside
    ``[start_time, end_time]`` (seconds, both ends included; default the whole video) are the
    candidates; :func:`~lmms_eval.media.video.frames_to_sample` says how many to take and
    :func:`~lmms_eval.media.video.sample_frame_indices` (``"uniform"``) which: the first, the last
    and evenly spaced ones between, ``int(i * (total - 1) / (count - 1))``. These are the indices
    the published ``read_video`` returns for the same arguments. Two deliberate differences: when
    ``fps`` sampling gives less than one frame (a clip shorter than ``1 / fps`` seconds) the first
    frame is returned, and a container that stores no frame count (WebM, MKV) is sampled like any
    other; the published reader returns every frame in both cases.

Size
    Frames are scaled as they are decoded (never held at full size) so that ``width * height`` is
    at most ``max_pixels`` and at least ``min_pixels``, keeping the aspect ratio (sizes rounded
    down, at least 1 pixel); without either they keep their size.

Backends (``backend=``, else ``$LMMS_VIDEO_DECODE_BACKEND``, else ``pyav``)
    * ``pyav`` (the ``video`` extra, ``pip install av``): one pass over the packets (no decoding)
      finds every frame's timestamp and the keyframes; then only the stretches that lead to the
      chosen frames are decoded, seeking to the keyframe before a chosen frame when that skips
      ahead. Decoding uses FFmpeg's threads.
    * ``torchcodec`` (``pip install torchcodec``): frames fetched by index, eight at a time, with
      ``$LMMS_VIDEO_TORCHCODEC_THREADS`` FFmpeg threads (default: the CPU count, at most 8).
    * ``dali`` (``pip install nvidia-dali-cuda120``): NVIDIA DALI's decoder on the GPU
      (``$LMMS_VIDEO_DALI_DEVICE=gpu``, default) or CPU; the frame count and timestamps come from
      PyAV's packet scan. torchcodec and DALI are exercised by the tests only where installed.

    The backends choose the same frame indices; a missing optional backend is a one-line
    :class:`~lmms_eval.errors.MissingDependencyError` naming the install command.

Broken videos
    A missing file, a file that does not open as a video, one without a video stream or frames,
    one that ends before the frames its header announces (MP4), and a video-only file whose frames
    end over a second (and 5%) before its announced length (MKV, WebM) raise
    :class:`~lmms_eval.media.errors.MediaError` (``problem`` says which), never anything else.
"""

from __future__ import annotations

import bisect
import contextlib
import io
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from lmms_eval.errors import MissingDependencyError
from lmms_eval.media.errors import MediaError
from lmms_eval.media.image import load_image
from lmms_eval.media.urls import decode_data_uri
from lmms_eval.media.video import frames_to_sample, is_frame_video, sample_frame_indices, video_frames

VideoBackend = Literal["pyav", "torchcodec", "dali"]
VIDEO_BACKENDS: tuple[VideoBackend, ...] = ("pyav", "torchcodec", "dali")
BACKEND_ENV = "LMMS_VIDEO_DECODE_BACKEND"
TORCHCODEC_THREADS_ENV = "LMMS_VIDEO_TORCHCODEC_THREADS"
DALI_DEVICE_ENV = "LMMS_VIDEO_DALI_DEVICE"
_INSTALL = {
    "pyav": ("av", "video"),
    "torchcodec": ("torchcodec", "torchcodec"),
    "dali": ("nvidia-dali-cuda120", "dali"),
}
_TORCHCODEC_CHUNK = 8


# -- arguments and results -------------------------------------------------------------------------


@dataclass(frozen=True)
class FrameSelection:
    """Which frames to read and at what size (the arguments of :func:`read_video`)."""

    nframes: int | None = None
    fps: float | None = None
    max_num_frames: int | None = None
    start_time: float | None = None
    end_time: float | None = None
    max_pixels: int | None = None
    min_pixels: int | None = None

    def indices(self, timestamps: Sequence[float], video_fps: float | None) -> list[int]:
        """The chosen frame indices, given every frame's timestamp (module doc, "Which frames")."""
        first = 0 if self.start_time is None else bisect.bisect_left(timestamps, self.start_time)
        last = len(timestamps) if self.end_time is None else bisect.bisect_right(timestamps, self.end_time)
        total = max(0, last - first)
        count = frames_to_sample(total, video_fps, self.nframes, self.fps, self.max_num_frames)
        return [first + i for i in sample_frame_indices(total, count)]

    def size(self, width: int, height: int) -> tuple[int, int]:
        """``(width, height)`` scaled into ``[min_pixels, max_pixels]``, aspect ratio kept."""
        area = width * height
        scale = 1.0
        if self.max_pixels is not None and area > self.max_pixels:
            scale = math.sqrt(self.max_pixels / area)
        elif self.min_pixels is not None and 0 < area < self.min_pixels:
            scale = math.sqrt(self.min_pixels / area)
        if scale == 1.0:
            return width, height
        return max(1, int(width * scale)), max(1, int(height * scale))


@dataclass
class DecodedVideo:
    """Frames read from a video: ``frames`` is a ``(n, height, width, 3)`` uint8 RGB array."""

    frames: Any
    indices: list[int]
    timestamps: list[float]
    video_fps: float
    total_frames: int
    source: str = ""
    backend: str = "pyav"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def duration(self) -> float:
        """The whole video's length in seconds (frame count / frame rate)."""
        return self.total_frames / self.video_fps if self.video_fps else 0.0


# -- backends: selection and imports --------------------------------------------------------------


def video_backend(backend: str | None = None) -> VideoBackend:
    """``backend``, else ``$LMMS_VIDEO_DECODE_BACKEND``, else ``pyav``; an unknown name is a ValueError."""
    name = (backend or os.environ.get(BACKEND_ENV) or "pyav").strip().lower()
    for known in VIDEO_BACKENDS:
        if name == known:
            return known
    raise ValueError(
        f"unknown video decode backend {name!r} ({BACKEND_ENV}); use one of {', '.join(VIDEO_BACKENDS)}"
    )


def _missing(backend: VideoBackend) -> MissingDependencyError:
    package, extra = _INSTALL[backend]
    error = MissingDependencyError(package, extra, f"decoding videos with the {backend} backend")
    error.args = (f"{error.args[0]} (or: pip install {package})",)
    return error


def import_av() -> Any:
    """The ``av`` module (PyAV), or a one-line error naming ``pip install 'lmms_eval[video]'``."""
    try:
        import av
    except ImportError:
        raise _missing("pyav") from None
    return av


def torchcodec_threads() -> int:
    """``$LMMS_VIDEO_TORCHCODEC_THREADS``, else the CPU count (at most 8)."""
    raw = os.environ.get(TORCHCODEC_THREADS_ENV, "").strip()
    if not raw:
        return max(1, min(8, os.cpu_count() or 1))
    try:
        return max(0, int(raw))
    except ValueError:
        raise ValueError(f"{TORCHCODEC_THREADS_ENV}={raw!r} is not an integer (FFmpeg threads)") from None


# -- sources -------------------------------------------------------------------------------------


def _describe(source: Any) -> str:
    if isinstance(source, (bytes, bytearray)):
        return f"<{len(source)} bytes>"
    text = os.fsdecode(source) if isinstance(source, (str, os.PathLike)) else repr(source)
    return text[:60] + "..." if text.startswith("data:") else text[:300]


def _unwrap(source: Any) -> Any:
    if isinstance(source, dict):
        return source.get("bytes") or source.get("path") or source.get("url") or source.get("video")
    return source


def open_target(source: Any) -> str | io.BytesIO:
    """What a decoder opens: a local path or URL, or the bytes of an in-memory video.

    A local path that does not exist is a :class:`MediaError` (``missing``).
    """
    source = _unwrap(source)
    if isinstance(source, (bytes, bytearray)):
        return io.BytesIO(bytes(source))
    if not isinstance(source, (str, os.PathLike)):
        raise MediaError(f"cannot read a {type(source).__name__} as a video", "unsupported")
    text = os.fsdecode(source)
    if text.startswith("data:"):
        return io.BytesIO(decode_data_uri(text)[1])
    if text.startswith("file://"):
        from urllib.parse import unquote, urlsplit

        text = unquote(urlsplit(text).path)
    if "://" not in text and not os.path.isfile(text):
        raise MediaError(f"video file not found: {text}", "missing")
    return text


# -- reading --------------------------------------------------------------------------------------


def decode_video(
    source: Any,
    selection: FrameSelection | None = None,
    backend: str | None = None,
    frame_format: str = "rgb24",
) -> DecodedVideo:
    """The frames of ``source`` chosen by ``selection`` (module doc), with their indices."""
    selection = selection or FrameSelection()
    if is_frame_video(source):
        return _frames_from_list(source, selection)
    name = video_backend(backend)
    target = open_target(source)
    reader: Callable[[str | io.BytesIO, FrameSelection, str], DecodedVideo] = _READERS[name]
    video = reader(target, selection, frame_format)
    video.source, video.backend = _describe(source), name
    return video


@overload
def read_video(
    source: Any,
    nframes: int | None = ...,
    *,
    fps: float | None = ...,
    max_num_frames: int | None = ...,
    start_time: float | None = ...,
    end_time: float | None = ...,
    max_pixels: int | None = ...,
    min_pixels: int | None = ...,
    return_timestamps: Literal[False] = ...,
    backend: str | None = ...,
    num_frm: int | None = ...,
    force_include_last_frame: bool = ...,
    format: str = ...,
) -> Any: ...


@overload
def read_video(
    source: Any,
    nframes: int | None = ...,
    *,
    fps: float | None = ...,
    max_num_frames: int | None = ...,
    start_time: float | None = ...,
    end_time: float | None = ...,
    max_pixels: int | None = ...,
    min_pixels: int | None = ...,
    return_timestamps: Literal[True],
    backend: str | None = ...,
    num_frm: int | None = ...,
    force_include_last_frame: bool = ...,
    format: str = ...,
) -> tuple[Any, list[float]]: ...


def read_video(
    source: Any,
    nframes: int | None = None,
    *,
    fps: float | None = None,
    max_num_frames: int | None = None,
    start_time: float | None = None,
    end_time: float | None = None,
    max_pixels: int | None = None,
    min_pixels: int | None = None,
    return_timestamps: bool = False,
    backend: str | None = None,
    num_frm: int | None = None,
    force_include_last_frame: bool = False,
    format: str = "rgb24",
) -> Any:
    """Sampled frames of a video as a ``(n, height, width, 3)`` uint8 array (module doc).

    ``num_frm`` is the published name: ``nframes`` without ``fps``, the cap (``max_num_frames``)
    with it. ``force_include_last_frame`` is accepted for compatibility: the uniform rule already
    takes the last frame whenever it takes more than one.
    """
    del force_include_last_frame
    if num_frm is not None:
        if fps is None and nframes is None:
            nframes = num_frm
        elif fps is not None and max_num_frames is None:
            max_num_frames = num_frm
    selection = FrameSelection(nframes, fps, max_num_frames, start_time, end_time, max_pixels, min_pixels)
    video = decode_video(source, selection, backend, frame_format=format)
    return (video.frames, video.timestamps) if return_timestamps else video.frames


read_video_pyav = read_video  # the published package's older name


def _frames_from_list(source: Any, selection: FrameSelection) -> DecodedVideo:
    """A video given as frames: the same selection, the frame rate from a dict's ``fps`` (else 1)."""
    import numpy as np

    frames = video_frames(source)
    video_fps = float(source.get("fps") or 1.0) if isinstance(source, dict) else 1.0
    timestamps = [i / video_fps for i in range(len(frames))]
    indices = selection.indices(timestamps, video_fps)
    images = [load_image(frames[i]) for i in indices]
    if not images:
        raise MediaError("video has no frames in the chosen time range", "empty")
    size = selection.size(*images[0].size)
    array = np.stack([np.asarray(im if im.size == size else im.resize(size)) for im in images])
    return DecodedVideo(array, indices, [timestamps[i] for i in indices], video_fps, len(frames))


# -- pyav -----------------------------------------------------------------------------------------


@dataclass
class _Timeline:
    """Every frame's pts in presentation order, and the keyframes' pts, from the packets alone."""

    pts: list[int]
    keyframes: list[int]
    seconds: list[float]


def _scan(container: Any, stream: Any) -> _Timeline:
    pts: list[int] = []
    keys: list[int] = []
    for packet in container.demux(stream):
        stamp = packet.pts if packet.pts is not None else packet.dts
        if stamp is None or packet.size == 0:
            continue
        pts.append(int(stamp))
        if packet.is_keyframe:
            keys.append(int(stamp))
    pts.sort()
    keys.sort()
    base = pts[0] if pts else 0
    unit = float(stream.time_base) if stream.time_base is not None else 0.0
    return _Timeline(pts, keys, [(p - base) * unit for p in pts])


@contextlib.contextmanager
def _open_pyav(target: str | io.BytesIO) -> Iterator[tuple[Any, Any, _Timeline]]:
    """The open container, its first video stream and that stream's timeline (checked: frames
    present, none missing from what the header announces)."""
    av = import_av()
    where = target if isinstance(target, str) else "<in-memory video>"
    try:
        container = av.open(target)
    except FileNotFoundError:
        raise MediaError(f"video file not found: {where}", "missing") from None
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise MediaError(f"video '{where}' does not open as a video: {exc}", "corrupt") from None
    with container:
        if not container.streams.video:
            raise MediaError(f"video '{where}' has no video stream", "empty")
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        try:
            timeline = _scan(container, stream)
        except av.FFmpegError as exc:
            raise MediaError(f"video '{where}' is corrupt: {exc}", "corrupt") from None
        announced = int(stream.frames or 0)
        if not timeline.pts:
            raise MediaError(f"video '{where}' has no frames", "empty")
        if announced > len(timeline.pts):
            raise MediaError(
                f"video '{where}' is truncated: its header announces {announced} frames, it holds "
                f"{len(timeline.pts)}",
                "truncated",
            )
        missing = _missing_seconds(container, timeline)
        if missing is not None:
            raise MediaError(
                f"video '{where}' is truncated: its frames end {missing:.1f} s before its announced length",
                "truncated",
            )
        yield container, stream, timeline


def _missing_seconds(container: Any, timeline: _Timeline) -> float | None:
    """How much of a video-only file's announced length has no frames, when over a second (and
    over 5%); files with a frame count (MP4) are checked by it, the others (MKV, WebM) by this."""
    if len(container.streams) != 1 or not container.duration:
        return None
    announced = container.duration / 1_000_000
    missing = announced - timeline.seconds[-1]
    return missing if missing > max(1.0, 0.05 * announced) else None


def _pyav_read(target: str | io.BytesIO, selection: FrameSelection, frame_format: str) -> DecodedVideo:

    av = import_av()
    where = target if isinstance(target, str) else "<in-memory video>"
    with _open_pyav(target) as (container, stream, timeline):
        video_fps = _frame_rate(stream, timeline)
        indices = selection.indices(timeline.seconds, video_fps)
        if not indices:
            raise MediaError(f"video '{where}' has no frames in the chosen time range", "empty")
        size = selection.size(stream.codec_context.width, stream.codec_context.height)
        try:
            frames, found = _decode_at(container, stream, timeline, indices, size, frame_format)
        except av.FFmpegError as exc:
            raise MediaError(f"video '{where}' fails to decode: {exc}", "corrupt") from None
    if found < len(indices):
        raise MediaError(
            f"video '{where}' is truncated: it ends before frame {indices[found]} of {len(timeline.pts)}",
            "truncated",
        )
    seconds = [timeline.seconds[i] for i in indices]
    return DecodedVideo(frames, indices, seconds, video_fps, len(timeline.pts))


def _frame_rate(stream: Any, timeline: _Timeline) -> float:
    rate = stream.average_rate or stream.guessed_rate
    if rate:
        return float(rate)
    span = timeline.seconds[-1] if timeline.seconds else 0.0
    return (len(timeline.pts) - 1) / span if span > 0 else 1.0


def _decode_at(
    container: Any,
    stream: Any,
    timeline: _Timeline,
    indices: Sequence[int],
    size: tuple[int, int],
    frame_format: str,
) -> tuple[Any, int]:
    """The frames at ``indices`` (ascending), converted and scaled as each is decoded, written
    into one array (no full-size frame is kept); and how many were found before the stream ended.

    Before each wanted frame, seek to the keyframe at or before it when that keyframe lies ahead
    of the last decoded frame; otherwise keep decoding forward.
    """
    import numpy as np

    width, height = size
    out: Any = None
    found = 0
    position: int | None = None
    decoded: Any = None
    for index in indices:
        wanted = timeline.pts[index]
        k = bisect.bisect_right(timeline.keyframes, wanted) - 1
        key = timeline.keyframes[k] if k >= 0 else timeline.pts[0]
        if decoded is None or position is None or key > position:
            container.seek(key, stream=stream, backward=True, any_frame=False)
            decoded = container.decode(stream)
        for frame in decoded:
            if frame.pts is None:
                continue
            position = int(frame.pts)
            if position >= wanted:
                image = frame.reformat(width=width, height=height, format=frame_format).to_ndarray()
                if out is None:
                    out = np.empty((len(indices), *image.shape), dtype=image.dtype)
                out[found] = image
                found += 1
                break
        else:
            break  # the stream ended before the wanted frame
    return out, found


# -- torchcodec -----------------------------------------------------------------------------------


def _torchcodec_read(target: str | io.BytesIO, selection: FrameSelection, frame_format: str) -> DecodedVideo:
    try:
        from torchcodec.decoders import VideoDecoder  # type: ignore[import-not-found]
    except ImportError:
        raise _missing("torchcodec") from None
    where = target if isinstance(target, str) else "<in-memory video>"
    source = target if isinstance(target, str) else target.getvalue()
    try:
        decoder = VideoDecoder(
            source, num_ffmpeg_threads=torchcodec_threads(), dimension_order="NHWC", seek_mode="exact"
        )
    except (RuntimeError, ValueError) as exc:
        raise MediaError(f"video '{where}' does not open as a video: {exc}", "corrupt") from None
    meta = decoder.metadata
    total = int(meta.num_frames or 0)
    if total == 0:
        raise MediaError(f"video '{where}' has no frames", "empty")
    video_fps = float(meta.average_fps or 1.0)
    seconds = [i / video_fps for i in range(total)]
    indices = selection.indices(seconds, video_fps)
    if not indices:
        raise MediaError(f"video '{where}' has no frames in the chosen time range", "empty")
    size = selection.size(int(meta.width or 0), int(meta.height or 0))
    chunks: list[Any] = []
    stamps: list[float] = []
    try:
        for begin in range(0, len(indices), _TORCHCODEC_CHUNK):
            batch = decoder.get_frames_at(indices=indices[begin : begin + _TORCHCODEC_CHUNK])
            chunks.append(_resize_nhwc(batch.data, size))
            stamps.extend(float(s) for s in batch.pts_seconds)
    except (RuntimeError, IndexError, ValueError) as exc:
        raise MediaError(f"video '{where}' fails to decode: {exc}", "truncated") from None
    import numpy as np

    first = float(meta.begin_stream_seconds or 0.0)
    return DecodedVideo(np.concatenate(chunks), indices, [s - first for s in stamps], video_fps, total)


def _resize_nhwc(frames: Any, size: tuple[int, int]) -> Any:
    """A uint8 NHWC tensor scaled to ``size`` (width, height), as a numpy array."""
    width, height = size
    if frames.shape[1] == height and frames.shape[2] == width:
        return frames.numpy()
    import torch

    scaled = torch.nn.functional.interpolate(
        frames.permute(0, 3, 1, 2).float(), size=(height, width), mode="bilinear", antialias=True
    )
    return scaled.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()


# -- dali -----------------------------------------------------------------------------------------


def _dali_read(target: str | io.BytesIO, selection: FrameSelection, frame_format: str) -> DecodedVideo:
    """Decode with DALI: every frame is decoded (on the GPU by default), the chosen ones are kept.

    The frame count and timestamps come from PyAV's packet scan, so the indices match the other
    backends; DALI only decodes.
    """
    try:
        from nvidia.dali import fn, pipeline_def, types  # type: ignore[import-not-found]
    except ImportError:
        raise _missing("dali") from None
    data = target.getvalue() if isinstance(target, io.BytesIO) else open(target, "rb").read()  # noqa: SIM115
    probe = _pyav_probe(io.BytesIO(data))
    indices = selection.indices(probe.seconds, probe.video_fps)
    if not indices:
        raise MediaError("video has no frames in the chosen time range", "empty")
    device = os.environ.get(DALI_DEVICE_ENV, "gpu").strip().lower()

    @pipeline_def(batch_size=1, num_threads=2, device_id=0 if device == "gpu" else None)  # type: ignore[misc]
    def pipeline() -> Any:
        encoded = fn.external_source(source=[[_as_uint8(data)]], dtype=types.UINT8, cycle=False)
        return fn.experimental.decoders.video(encoded, device="mixed" if device == "gpu" else "cpu")

    pipe = pipeline()
    pipe.build()
    (output,) = pipe.run()
    decoded = output.as_cpu().as_array()[0] if device == "gpu" else output.as_array()[0]
    if len(decoded) <= indices[-1]:
        raise MediaError(f"video is truncated: DALI decoded {len(decoded)} frames", "truncated")
    size = selection.size(int(decoded.shape[2]), int(decoded.shape[1]))
    frames = [_resize_array(decoded[i], size) for i in indices]
    import numpy as np

    return DecodedVideo(
        np.stack(frames), indices, [probe.seconds[i] for i in indices], probe.video_fps, probe.total_frames
    )


def _as_uint8(data: bytes) -> Any:
    import numpy as np

    return np.frombuffer(data, dtype=np.uint8)


def _resize_array(frame: Any, size: tuple[int, int]) -> Any:
    import numpy as np
    from PIL import Image

    if (frame.shape[1], frame.shape[0]) == size:
        return frame
    return np.asarray(Image.fromarray(frame).resize(size, Image.Resampling.BILINEAR))


@dataclass(frozen=True)
class VideoProbe:
    """What a video file holds, read from its packets without decoding (:func:`probe_video`)."""

    total_frames: int
    video_fps: float
    width: int
    height: int
    seconds: list[float]  # every frame's timestamp, from the first frame

    @property
    def duration(self) -> float:
        return self.total_frames / self.video_fps if self.video_fps else 0.0


def probe_video(source: Any) -> VideoProbe:
    """Frame count, frame rate, size and every frame's timestamp of a video file, with PyAV and
    without decoding (a broken video is a :class:`MediaError`, as for :func:`read_video`)."""
    return _pyav_probe(open_target(source))


def _pyav_probe(target: str | io.BytesIO) -> VideoProbe:
    with _open_pyav(target) as (_container, stream, timeline):
        context = stream.codec_context
        fps = _frame_rate(stream, timeline)
        return VideoProbe(len(timeline.pts), fps, int(context.width), int(context.height), timeline.seconds)


_READERS: dict[VideoBackend, Callable[[str | io.BytesIO, FrameSelection, str], DecodedVideo]] = {
    "pyav": _pyav_read,
    "torchcodec": _torchcodec_read,
    "dali": _dali_read,
}


__all__ = [
    "BACKEND_ENV",
    "DALI_DEVICE_ENV",
    "TORCHCODEC_THREADS_ENV",
    "VIDEO_BACKENDS",
    "DecodedVideo",
    "FrameSelection",
    "VideoBackend",
    "VideoProbe",
    "decode_video",
    "import_av",
    "open_target",
    "probe_video",
    "read_video",
    "read_video_pyav",
    "torchcodec_threads",
]
