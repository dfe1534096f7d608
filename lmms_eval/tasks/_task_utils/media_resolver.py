"""``resolve_media_reference``: find a dataset's media file on local disk."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lmms_eval.utils import resolve_cache_dir

EXTENSIONS = {
    "video": (".mp4", ".MP4", ".mkv", ".webm", ".avi", ".mov"),
    "audio": (".wav", ".mp3", ".flac", ".m4a", ".ogg", ".opus"),
    "image": (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif"),
}


def _hf_home() -> str:
    return os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")


def _search_dirs(cache_dir: str | None, env_vars: Iterable[str], extra_subdirs: Iterable[str]) -> list[Path]:
    """``$VAR`` folders first, then the cache folder (under ``$HF_HOME`` when relative) and its sub-folders."""
    dirs = [Path(os.environ[v]).expanduser() for v in env_vars if os.environ.get(v)]
    if cache_dir:
        base = Path(resolve_cache_dir(cache_dir, _hf_home()))
        dirs += [base, *(base / sub for sub in extra_subdirs)]
    return dirs


def resolve_media_reference(
    reference: Any,
    media_type: str = "video",
    cache_dir: str | None = None,
    env_vars: Iterable[str] = (),
    extra_subdirs: Iterable[str] = (),
) -> Any:
    """The local path of ``reference`` (a file name or relative path of a dataset's media).

    An existing path is returned as is. Otherwise each folder named by ``env_vars``, then
    ``cache_dir`` (relative to ``$HF_HOME``) and its ``extra_subdirs`` are searched for the name,
    also with the usual extensions of ``media_type`` appended. A reference that is found nowhere
    (or is not a string) is returned unchanged, so the model reports the missing file.
    """
    if not isinstance(reference, (str, os.PathLike)) or not str(reference):
        return reference
    name = os.fspath(reference)
    if os.path.exists(name):
        return name
    suffixes = ("", *EXTENSIONS.get(media_type, ()))
    for folder in _search_dirs(cache_dir, env_vars, extra_subdirs):
        for suffix in suffixes:
            candidate = folder / f"{name}{suffix}"
            if candidate.exists():
                return str(candidate)
    return name
