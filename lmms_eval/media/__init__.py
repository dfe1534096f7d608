"""Media for model backends and task helpers: images, videos and audio, below ``models/``.

* :mod:`lmms_eval.media.image`: :func:`load_image` (an RGB PIL image from any image source) and
  :func:`encode_image_data_uri` (the ``data:`` URI sent to APIs; ``LMMS_IMAGE_ENCODE_FORMAT``,
  ``LMMS_IMAGE_JPEG_QUALITY``);
* :mod:`lmms_eval.media.video`: :func:`sample_frame_indices` (the one frame sampler),
  :func:`frames_to_sample` (how many frames), :func:`is_video`, and the readers of videos given as
  frame lists or frame folders;
* :mod:`lmms_eval.media.video_decode`: :func:`read_video` (``read_video_pyav``) and
  :func:`decode_video`: sampled, resized frames of video files with the pyav, torchcodec or dali
  backend (``LMMS_VIDEO_DECODE_BACKEND``); :func:`probe_video`: frame count, rate and timestamps
  without decoding;
* :mod:`lmms_eval.media.parts`: :func:`content_part`, the chat part of a ``doc_to_visual`` item;
* :mod:`lmms_eval.media.prefetch`: :func:`prefetch_batches`, the bounded pool that loads the media
  of the next batches while the model runs (``LMMS_MEDIA_PREFETCH``, ``LMMS_MEDIA_WORKERS``);
* :mod:`lmms_eval.media.errors`: :class:`MediaError`, raised for missing, corrupt, truncated or
  empty media (backends turn it into a per-request ``input`` failure);
* :mod:`lmms_eval.media.synthetic`: clips whose frames show their index, for tests and benchmarks;
* :mod:`lmms_eval.media.audio`: :func:`load_audio` (samples from any audio source, resampled with
  soxr, mono, cut to ``max_seconds``), :func:`encode_wav` and the URL of an audio part;
* :mod:`lmms_eval.media.urls`: ``data:`` URIs and ``file://`` URLs.

Importing this package imports only the standard library; PIL, numpy, PyAV, soundfile, soxr,
torchcodec and DALI
are imported when a medium is handled. ``docs/media.md`` is the guide. This package imports
nothing of ``lmms_eval`` but :mod:`lmms_eval.errors` (and, inside :func:`media_failure`,
:mod:`lmms_eval.api.instance`).
"""

from __future__ import annotations

from lmms_eval.media.audio import DecodedAudio, audio_url, encode_wav, load_audio, resample_audio
from lmms_eval.media.errors import MediaError, MediaProblem, media_failure
from lmms_eval.media.image import (
    IMAGE_ENCODE_FORMATS,
    IMAGE_SUFFIXES,
    encode_image,
    encode_image_data_uri,
    image_encode_format,
    image_quality,
    load_image,
    normalise_image_format,
    sniff_image_mime,
)
from lmms_eval.media.parts import content_part
from lmms_eval.media.prefetch import Loaded, prefetch_batches, prefetch_settings
from lmms_eval.media.urls import data_uri, decode_data_uri, media_url
from lmms_eval.media.video import (
    DEFAULT_NFRAMES,
    FRAME_SAMPLINGS,
    FrameSampling,
    frames_to_sample,
    is_frame_video,
    is_video,
    load_video_frames,
    sample_frame_indices,
    sample_video_frames,
    video_frames,
)
from lmms_eval.media.video_decode import (
    VIDEO_BACKENDS,
    DecodedVideo,
    FrameSelection,
    VideoBackend,
    VideoProbe,
    decode_video,
    probe_video,
    read_video,
    read_video_pyav,
    video_backend,
)

__all__ = [
    "DEFAULT_NFRAMES",
    "FRAME_SAMPLINGS",
    "IMAGE_ENCODE_FORMATS",
    "IMAGE_SUFFIXES",
    "VIDEO_BACKENDS",
    "DecodedAudio",
    "DecodedVideo",
    "FrameSampling",
    "FrameSelection",
    "Loaded",
    "MediaError",
    "MediaProblem",
    "VideoBackend",
    "VideoProbe",
    "audio_url",
    "content_part",
    "data_uri",
    "decode_data_uri",
    "decode_video",
    "encode_image",
    "encode_image_data_uri",
    "encode_wav",
    "frames_to_sample",
    "image_encode_format",
    "image_quality",
    "is_frame_video",
    "is_video",
    "load_audio",
    "load_image",
    "load_video_frames",
    "media_failure",
    "media_url",
    "normalise_image_format",
    "prefetch_batches",
    "prefetch_settings",
    "probe_video",
    "read_video",
    "read_video_pyav",
    "resample_audio",
    "sample_frame_indices",
    "sample_video_frames",
    "sniff_image_mime",
    "video_backend",
    "video_frames",
]
