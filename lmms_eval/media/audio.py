"""Audio: samples as WAV bytes, and the URL an API is sent for an audio part.

Audio is given as a path, a URL, bytes, or a ``{"array", "sampling_rate"}`` dict (the ``datasets``
``Audio`` feature). Nothing here decodes audio files.
"""

from __future__ import annotations

import io
import wave
from typing import Any

from lmms_eval.media.urls import data_uri, media_url


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


__all__ = ["audio_url", "encode_wav"]
