"""Video files of ``dataset_kwargs: {video: true, cache_dir: NAME}`` tasks.

Archives (zip, and tar split into parts) from a local folder or a Hub snapshot are extracted once
into ``$HF_HOME/<cache_dir>``, where the task's utils resolve video paths.
"""

from __future__ import annotations

import logging
import os
import re
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.data.files import expand as _expand
from lmms_eval.data.files import local_path as _local_path
from lmms_eval.data.files import short_error as _short
from lmms_eval.data.hub import _offline_reason
from lmms_eval.data.load import LOCAL_BUILDERS, local_copy_hint
from lmms_eval.errors import DatasetError

logger = logging.getLogger(__name__)


def video_cache_dir(cache_dir: str) -> str:
    """The folder of a video task's files: ``cache_dir`` itself when absolute (``~`` and ``$VAR``
    expanded), otherwise ``$HF_HOME/<cache_dir>``."""
    expanded = _expand(cache_dir)
    if os.path.isabs(expanded):
        return expanded
    hf_home = _expand(os.environ.get("HF_HOME") or os.path.join("~", ".cache", "huggingface"))
    return os.path.join(hf_home, expanded)


def prepare_video_files(
    dataset_path: str, dataset_kwargs: Mapping[str, Any], base_dir: str, task_name: str
) -> str | None:
    """Put a video task's files under ``video_cache_dir(cache_dir)`` and return that folder.

    The source is a local dataset folder, or else a snapshot of the Hub dataset repo. Its ``*.zip``
    archives and (split) ``*.tar*`` archives are extracted there, or with ``create_link`` the folder
    becomes a link to the source. Nothing happens when the folder already has files, unless
    ``force_unzip`` / ``force_download`` is set. Without ``cache_dir`` nothing is extracted.
    """
    cache_dir = dataset_kwargs.get("cache_dir")
    if dataset_path in LOCAL_BUILDERS or not isinstance(cache_dir, str) or not cache_dir:
        return None
    target = video_cache_dir(cache_dir)
    force = bool(dataset_kwargs.get("force_unzip") or dataset_kwargs.get("force_download"))
    if os.path.isdir(target) and os.listdir(target) and not force:
        return target
    local = _local_path(dataset_path, base_dir)
    source = local if local is not None and os.path.isdir(local) else None
    if source is None:
        source = _snapshot(dataset_path, dataset_kwargs, task_name)
    if dataset_kwargs.get("create_link"):
        if os.path.islink(target) or os.path.isfile(target):
            os.remove(target)
        elif os.path.isdir(target) and not os.listdir(target):
            os.rmdir(target)
        if not os.path.exists(target):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            os.symlink(source, target, target_is_directory=True)
        return target
    os.makedirs(target, exist_ok=True)
    _extract_archives(source, target, task_name)
    return target


def _snapshot(repo_id: str, dataset_kwargs: Mapping[str, Any], task_name: str) -> str:
    offline = _offline_reason()
    local_only = offline is not None or bool(dataset_kwargs.get("local_files_only"))
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(
            repo_id=repo_id,
            repo_type="dataset",
            revision=dataset_kwargs.get("revision"),
            force_download=bool(dataset_kwargs.get("force_download")) and not local_only,
            local_files_only=local_only,
            token=dataset_kwargs.get("token") if isinstance(dataset_kwargs.get("token"), str) else None,
        )
    except Exception as exc:
        why = (offline or "local_files_only is set") if local_only else "the download failed"
        raise DatasetError(
            f"task '{task_name}': the video files of dataset '{repo_id}' are not in the local Hub cache "
            f"and {why} [{_short(exc)}]; {local_copy_hint(task_name)}, download them where the Hub is "
            "reachable, or set dataset_kwargs.cache_dir to a folder that already holds the videos"
        ) from None


# ``x.tar``, ``x.tar.gz`` and the parts of a split archive: ``x.tar.00``, ``x.tar.part1``, ``x.tar.gz.aa``
_TAR_PART = re.compile(r"(.+\.tar)(?:\.(?:gz|tgz|bz2|xz|zst))?(?:\.(?:part)?\d+|\.[a-z]{2})?\Z")


def _extract_archives(source: str, target: str, task_name: str) -> None:
    """Extract every zip archive and every (possibly split: ``x.tar.00``, ``x.tar.01``) tar archive."""
    tar_parts: dict[str, list[str]] = {}
    zips: list[str] = []
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file in sorted(files):
            path = os.path.join(folder, file)
            if file.endswith(".zip"):
                zips.append(path)
            elif match := _TAR_PART.match(file):
                tar_parts.setdefault(os.path.join(folder, match.group(1)), []).append(path)
    try:
        for path in zips:
            logger.info("task %s: extracting %s", task_name, path)
            with zipfile.ZipFile(path) as archive:
                archive.extractall(target)
        for group, parts in sorted(tar_parts.items()):
            logger.info("task %s: extracting %s (%d part(s))", task_name, group, len(parts))
            _extract_tar_parts(sorted(parts), target)
    except (OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
        raise DatasetError(
            f"task '{task_name}': extracting the video archives of '{source}' into '{target}' failed: "
            f"{_short(exc)}; delete '{target}' and retry (or set dataset_kwargs.force_unzip)"
        ) from None


class _ConcatenatedFiles:
    """A read-only stream over several files in order (the parts of a split tar archive)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._paths = list(paths)
        self._handle = open(self._paths.pop(0), "rb")  # noqa: SIM115 - closed in read()/close()

    def read(self, size: int = -1) -> bytes:
        chunks = []
        while size != 0:
            chunk = self._handle.read(size)
            if chunk:
                chunks.append(chunk)
                size = size - len(chunk) if size > 0 else size
                continue
            self._handle.close()
            if not self._paths:
                break
            self._handle = open(self._paths.pop(0), "rb")  # noqa: SIM115
        return b"".join(chunks)

    def close(self) -> None:
        self._handle.close()


def _extract_tar_parts(parts: Sequence[str], target: str) -> None:
    stream = _ConcatenatedFiles(parts)
    try:
        with tarfile.open(fileobj=stream, mode="r|*") as archive:  # type: ignore[arg-type]
            if hasattr(tarfile, "data_filter"):
                archive.extractall(target, filter="data")
            else:  # pragma: no cover - Python without extraction filters
                archive.extractall(target)
    finally:
        stream.close()


# -- media columns ----------------------------------------------------------------------------------
