"""Audio: one loader (:func:`load_audio`), WAV encoding, and the URL an API is sent for an audio part.

Audio is given as a path (relative paths against ``base_dir`` when the caller gives one, e.g. the
dataset folder), a ``file://`` URL, a ``data:`` URI, bytes, a ``{"array", "sampling_rate"}`` dict
(the decoded ``datasets`` ``Audio`` feature), a ``{"bytes", "path"}`` dict (``Audio(decode=False)``)
or a decoder object with ``get_all_samples()`` (``datasets`` 4+ decodes audio to torchcodec's
``AudioDecoder``). ``http(s)`` URLs are not fetched (as for images): download the file and give
its path.

Files and bytes are decoded with soundfile (WAV, FLAC, OGG/Opus, MP3 with libsndfile 1.1+), and
with PyAV when soundfile cannot read them (M4A/AAC, other containers); samples are resampled with
soxr (``pip install 'lmms_eval[audio]'``). Audio that cannot be read raises
:class:`~lmms_eval.media.errors.MediaError`, which backends turn into a per-request failure.
"""

from __future__ import annotations

import io
import os
import wave
from dataclasses import dataclass
from typing import Any

from lmms_eval.errors import MissingDependencyError
from lmms_eval.media.errors import MediaError
from lmms_eval.media.urls import data_uri, decode_data_uri, is_remote, media_url

# suffixes of audio files (``.webm`` is read as a video)
AUDIO_SUFFIXES = (".wav", ".mp3", ".m4a", ".aac", ".flac", ".ogg", ".opus")


@dataclass(frozen=True)
class DecodedAudio:
    """Float32 samples in [-1, 1], ``(frames,)`` when mono, else ``(frames, channels)``."""

    samples: Any
    sampling_rate: int

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.sampling_rate

    def as_dict(self) -> dict[str, Any]:
        """The ``{"array", "sampling_rate"}`` dict of the ``datasets`` ``Audio`` feature."""
        return {"array": self.samples, "sampling_rate": self.sampling_rate}


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(module, "audio", "reading audio") from None


# -- decoding ----------------------------------------------------------------------------------------


def _decode_pyav(data: bytes | str, label: str) -> DecodedAudio:
    """Decode with PyAV (containers soundfile does not read, e.g. M4A/AAC)."""
    import numpy as np

    av = _require("av")
    try:
        with av.open(io.BytesIO(data) if isinstance(data, bytes) else data) as container:
            if not container.streams.audio:
                raise MediaError(f"{label}: no audio stream", "empty")
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="fltp")
            chunks = [
                out.to_ndarray() for frame in container.decode(stream) for out in resampler.resample(frame)
            ]
            rate = int(stream.rate or stream.codec_context.sample_rate)
    except MediaError:
        raise
    except (av.error.FFmpegError, ValueError, OSError) as exc:
        raise MediaError(f"{label}: not audio soundfile or PyAV can read ({exc})", "corrupt") from None
    if not chunks or rate <= 0:
        raise MediaError(f"{label}: no audio samples", "empty")
    planar = np.concatenate(chunks, axis=1)  # (channels, frames)
    return DecodedAudio(planar.T.astype(np.float32), rate)


def _decode(data: bytes | str, label: str) -> DecodedAudio:
    """Decode a file (path) or encoded bytes: soundfile first, PyAV when soundfile cannot."""
    sf = _require("soundfile")
    try:
        samples, rate = sf.read(io.BytesIO(data) if isinstance(data, bytes) else data, dtype="float32")
    except (sf.LibsndfileError, RuntimeError, TypeError):
        return _decode_pyav(data, label)
    return DecodedAudio(samples, int(rate))


def _from_array(array: Any, sampling_rate: Any, label: str) -> DecodedAudio:
    import numpy as np

    if not sampling_rate or int(sampling_rate) <= 0:
        raise MediaError(f"{label}: no sampling rate", "unsupported")
    samples = np.asarray(array)
    if samples.dtype.kind in "iu":  # integer PCM
        samples = samples / float(np.iinfo(samples.dtype).max)
    elif samples.dtype.kind != "f":
        raise MediaError(f"{label}: samples of type {samples.dtype} are not audio", "corrupt")
    return DecodedAudio(samples.astype(np.float32), int(sampling_rate))


def _from_text(text: str, base_dir: str | None) -> DecodedAudio:
    if text.startswith("data:"):
        try:
            payload = decode_data_uri(text)[1]
        except Exception as exc:  # the URI's own error, as a media error of this sample
            raise MediaError(str(exc), "corrupt") from None
        return _decode(payload, f"data URI {text[:40]!r}...")
    if is_remote(text):
        raise MediaError(
            f"audio URLs are not fetched: {text}; download the file and give its path", "unsupported"
        )
    path = text.removeprefix("file://")
    if base_dir and not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    if not os.path.isfile(path):
        raise MediaError(f"audio file not found: {path}", "missing")
    return _decode(path, f"audio file '{path}'")


def _read(source: Any, base_dir: str | None) -> DecodedAudio:
    """The samples of any audio source, at their own rate."""
    if isinstance(source, DecodedAudio):
        return source
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, str):
        return _from_text(source, base_dir)
    if isinstance(source, (bytes, bytearray)):
        return _decode(bytes(source), f"{len(source)} bytes of audio")
    if isinstance(source, dict):
        if source.get("array") is not None:
            return _from_array(source["array"], source.get("sampling_rate"), "audio dict")
        inner = source.get("bytes") or source.get("path")
        if inner:
            return _read(inner, base_dir)
        raise MediaError(f"audio dict with keys {sorted(source)} has no array, bytes or path", "unsupported")
    if hasattr(source, "get_all_samples"):  # torchcodec's AudioDecoder (datasets 4+)
        decoded = source.get_all_samples()
        return _from_array(decoded.data.numpy().T, decoded.sample_rate, "audio decoder")
    raise MediaError(f"cannot read audio from a {type(source).__name__}", "unsupported")


# -- loading -----------------------------------------------------------------------------------------


def resample_audio(samples: Any, rate: int, target: int) -> Any:
    """``samples`` (``(frames,)`` or ``(frames, channels)``) from ``rate`` to ``target`` Hz (soxr)."""
    if rate == target:
        return samples
    soxr = _require("soxr")
    return soxr.resample(samples, rate, target)


def load_audio(
    source: Any,
    sampling_rate: int | None = None,
    mono: bool = True,
    max_seconds: float | None = None,
    base_dir: str | None = None,
) -> DecodedAudio:
    """The audio of ``source`` (see the module docstring) as float32 samples.

    ``sampling_rate`` resamples to that rate (default: the source's own); ``mono`` averages the
    channels; ``max_seconds`` keeps only the first seconds. Raises :class:`MediaError` for missing,
    corrupt, empty or unsupported sources.
    """
    import numpy as np

    audio = _read(source, base_dir)
    samples = np.asarray(audio.samples, dtype=np.float32)
    if samples.ndim not in (1, 2) or samples.size == 0:
        raise MediaError(f"audio with shape {samples.shape} has no samples", "empty")
    if not np.isfinite(samples).all():
        raise MediaError("audio samples contain NaN or infinity", "corrupt")
    rate = audio.sampling_rate
    if max_seconds is not None:
        samples = samples[: max(1, round(max_seconds * rate))]
    if mono and samples.ndim == 2:
        samples = samples.mean(axis=1)
    if sampling_rate is not None:
        samples = np.asarray(resample_audio(samples, rate, int(sampling_rate)), dtype=np.float32)
        rate = int(sampling_rate)
    return DecodedAudio(samples, rate)


# -- encoding ----------------------------------------------------------------------------------------


def encode_wav(samples: Any, sampling_rate: int) -> bytes:
    """Mono or ``(frames, channels)`` samples (floats in [-1, 1] or int16) as 16-bit PCM WAV bytes."""
    import numpy as np

    data = np.asarray(samples)
    if data.dtype.kind == "f":
        data = (np.clip(data, -1.0, 1.0) * 32767.0).round()
    data = data.astype("<i2")
    channels = 1 if data.ndim == 1 else int(data.shape[1])
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(2)
        writer.setframerate(sampling_rate)
        writer.writeframes(data.tobytes())
    return buffer.getvalue()


def audio_url(source: Any) -> str:
    """A ``data:audio/wav`` URI for ``{"array", "sampling_rate"}``, else :func:`media_url`."""
    if isinstance(source, dict) and "array" in source and "sampling_rate" in source:
        return data_uri("audio/wav", encode_wav(source["array"], int(source["sampling_rate"])))
    return media_url(source)


__all__ = [
    "AUDIO_SUFFIXES",
    "DecodedAudio",
    "audio_url",
    "encode_wav",
    "load_audio",
    "resample_audio",
]
