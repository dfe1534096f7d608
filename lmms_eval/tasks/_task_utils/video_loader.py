"""``get_cache_dir`` / ``get_video``: the video folder of a task and a video file in it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lmms_eval.utils import resolve_cache_dir


def get_cache_dir(config: Mapping[str, Any], sub_dir: str = "videos") -> str:
    """``<$HF_HOME>/<dataset_kwargs.cache_dir>/<sub_dir>`` of a task config mapping."""
    hf_home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    cache_dir = (config.get("dataset_kwargs") or {}).get("cache_dir") or ""
    return os.path.join(resolve_cache_dir(str(cache_dir), hf_home), sub_dir)


def get_video(prefix: str, video_name: str, suffix: str = "mp4") -> str:
    """``<prefix>/<video_name>.<suffix>`` (also tried with an upper-case suffix).

    Raises ``FileNotFoundError`` naming every path tried when none exists.
    """
    tried = [os.path.join(prefix, f"{video_name}.{s}") for s in dict.fromkeys((suffix, suffix.upper()))]
    for path in tried:
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"video '{video_name}' not found; tried {', '.join(tried)}")
