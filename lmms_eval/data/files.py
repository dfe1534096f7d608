"""Local paths of task data: ``data_files`` resolution against the YAML folder, path expansion."""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.errors import DatasetError

GLOB_CHARS = "*?["


def expand(path: str) -> str:
    return os.path.expanduser(os.path.expandvars(path))


def local_path(path: str, base_dir: str) -> str | None:
    """``path`` as an existing local file or folder: absolute, under the YAML folder, or under cwd."""
    expanded = expand(path)
    candidates = [expanded] if os.path.isabs(expanded) else [os.path.join(base_dir, expanded), expanded]
    for candidate in candidates:
        if os.path.exists(candidate):
            return os.path.abspath(candidate)
    return None


def resolve_data_files(data_files: Any, base_dir: str, task_name: str) -> Any:
    """Make local ``data_files`` (str, list or per-split dict; globs allowed) absolute.

    A relative path is looked up under the task YAML's folder, then under the working directory;
    URLs (``scheme://``) are kept. A path or pattern that matches nothing is a ``DatasetError``.
    """

    def resolve(path: Any) -> str:
        if not isinstance(path, str):
            raise DatasetError(
                f"task '{task_name}': dataset_kwargs.data_files entries must be paths, got {path!r}"
            )
        if "://" in path:
            return path
        expanded = expand(path)
        candidates = [expanded] if os.path.isabs(expanded) else [os.path.join(base_dir, expanded), expanded]
        for candidate in candidates:
            if any(ch in candidate for ch in GLOB_CHARS):
                if any(os.path.isfile(p) for p in glob.glob(candidate, recursive=True)):
                    return os.path.abspath(candidate)
            elif os.path.exists(candidate):
                return os.path.abspath(candidate)
        where = (
            f"'{expanded}'"
            if os.path.isabs(expanded)
            else f"'{base_dir}' (the task YAML's folder) or '{os.getcwd()}'"
        )
        raise DatasetError(
            f"task '{task_name}': data file '{path}' not found in {where}; "
            "fix dataset_kwargs.data_files in the task YAML or create the file"
        )

    if isinstance(data_files, str):
        return resolve(data_files)
    if isinstance(data_files, Mapping):
        return {
            str(split): resolve_data_files(files, base_dir, task_name) for split, files in data_files.items()
        }
    if isinstance(data_files, Sequence):
        return [resolve(p) for p in data_files]
    raise DatasetError(
        f"task '{task_name}': dataset_kwargs.data_files must be a path, a list of paths or "
        f"a mapping of split to paths, got {type(data_files).__name__}"
    )


def short_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"
