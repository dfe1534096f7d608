"""Media for model backends and task helpers: images, videos and audio, below ``models/``.

* :mod:`lmms_eval.media.image`: :func:`load_image` (an RGB PIL image from any image source) and
  :func:`encode_image_data_uri` (the ``data:`` URI sent to APIs; ``LMMS_IMAGE_ENCODE_FORMAT``,
  ``LMMS_IMAGE_JPEG_QUALITY``);
* :mod:`lmms_eval.media.video`: :func:`sample_frame_indices` (the one frame sampler),
  :func:`is_video`, and the readers of videos given as frame lists or frame folders;
* :mod:`lmms_eval.media.audio`: :func:`encode_wav` and the URL of an audio part;
* :mod:`lmms_eval.media.urls`: ``data:`` URIs and ``file://`` URLs.

Importing this package imports only the standard library; PIL and numpy are imported when a
medium is handled. This package imports nothing of ``lmms_eval`` but :mod:`lmms_eval.errors`.
"""

from __future__ import annotations

from lmms_eval.media.audio import audio_url, encode_wav
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
from lmms_eval.media.urls import data_uri, decode_data_uri, media_url
from lmms_eval.media.video import (
    FRAME_SAMPLINGS,
    FrameSampling,
    is_frame_video,
    is_video,
    load_video_frames,
    sample_frame_indices,
    sample_video_frames,
    video_frames,
)

__all__ = [
    "FRAME_SAMPLINGS",
    "IMAGE_ENCODE_FORMATS",
    "IMAGE_SUFFIXES",
    "FrameSampling",
    "audio_url",
    "data_uri",
    "decode_data_uri",
    "encode_image",
    "encode_image_data_uri",
    "encode_wav",
    "image_encode_format",
    "image_quality",
    "is_frame_video",
    "is_video",
    "load_image",
    "load_video_frames",
    "media_url",
    "normalise_image_format",
    "sample_frame_indices",
    "sample_video_frames",
    "sniff_image_mime",
    "video_frames",
]
