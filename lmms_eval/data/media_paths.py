"""Relative media paths in local datasets, resolved against the dataset's folder.

A local dataset (``data_files``, a ``--dataset_root`` copy, a ``save_to_disk`` folder) may name its
images, videos and audio by paths relative to where the dataset lives: ``clips/001.mp4`` beside
``test.parquet``. Those paths must not depend on the working directory, so after loading, every
string value that

* ends in a media suffix (:data:`MEDIA_SUFFIXES`: images, videos, audio),
* is a relative path (not absolute, not a URL or ``data:`` URI), and
* names an existing file under one of the dataset's folders (tried in order: the dataset folder,
  then each data file's folder)

is replaced by that file's absolute path; every other value is left as it is (a missing file
stays relative, and fails later as that document's ``input`` failure). Only columns whose first
non-empty value is such a path are looked at, so image datasets with embedded images cost nothing.
Nested lists of paths (a frame list, several images) are resolved too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lmms_eval.media.audio import AUDIO_SUFFIXES
from lmms_eval.media.image import IMAGE_SUFFIXES
from lmms_eval.media.video import VIDEO_SUFFIXES

MEDIA_SUFFIXES = IMAGE_SUFFIXES + VIDEO_SUFFIXES + AUDIO_SUFFIXES
_ROWS_PROBED = 20


def _relative_media(value: Any) -> bool:
    if not isinstance(value, str) or not value or "://" in value or value.startswith("data:"):
        return False
    return not os.path.isabs(value) and value.lower().endswith(MEDIA_SUFFIXES)


def resolve_path(value: Any, folders: Sequence[str]) -> Any:
    """``value`` made absolute when it is a relative media path found under ``folders``; lists
    element by element; anything else unchanged."""
    if isinstance(value, list):
        return [resolve_path(v, folders) for v in value]
    if not _relative_media(value):
        return value
    for folder in folders:
        candidate = os.path.join(folder, value)
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return value


def _first_value(value: Any) -> Any:
    while isinstance(value, list) and value:
        value = value[0]
    return value


def media_columns(rows: Iterable[Mapping[str, Any]], folders: Sequence[str]) -> list[str]:
    """Columns holding relative media paths that resolve under ``folders`` (in the first rows)."""
    found: dict[str, None] = {}
    for count, row in enumerate(rows):
        if count >= _ROWS_PROBED:
            break
        for key, value in row.items():
            first = _first_value(value)
            if key not in found and _relative_media(first) and resolve_path(first, folders) != first:
                found[key] = None
    return list(found)


def _datasets_columns(dataset: Any, folders: Sequence[str]) -> list[str]:
    """Like :func:`media_columns` for a ``datasets.Dataset``, reading only its string columns."""
    features = getattr(dataset, "features", None) or {}
    textual = [
        name
        for name, feature in features.items()
        if "string" in repr(feature) and "Image(" not in repr(feature)
    ]
    if not textual:
        return []
    head = dataset.select_columns(textual).select(range(min(_ROWS_PROBED, len(dataset))))
    return media_columns(head, folders)


def resolve_split(dataset: Any, folders: Sequence[str]) -> Any:
    """A split with its relative media paths resolved (module doc); the same object when none."""
    folders = [f for f in dict.fromkeys(folders) if f and os.path.isdir(f)]
    if not folders:
        return dataset
    rows = getattr(dataset, "_rows", None)
    if isinstance(rows, list):  # a ListDataset: rows are plain dicts
        columns = media_columns(rows, folders)
        if not columns:
            return dataset
        return type(dataset)(
            [{**row, **{c: resolve_path(row.get(c), folders) for c in columns}} for row in rows]
        )
    if not hasattr(dataset, "map") or not hasattr(dataset, "features"):
        return dataset
    columns = _datasets_columns(dataset, folders)
    if not columns:
        return dataset

    def resolve_batch(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {c: [resolve_path(v, folders) for v in batch[c]] for c in columns}

    return dataset.map(resolve_batch, batched=True, desc="resolving media paths")


def resolve_splits(splits: dict[str, Any], folders: Sequence[str]) -> dict[str, Any]:
    """Every split of a local dataset with its relative media paths resolved (module doc)."""
    return {name: resolve_split(dataset, folders) for name, dataset in splits.items()}


def data_file_folders(data_files: Any) -> list[str]:
    """The folders of local ``data_files`` (a path, a list, or ``{split: path(s)}``), in order."""
    if isinstance(data_files, Mapping):
        items: list[Any] = [
            f for value in data_files.values() for f in (value if isinstance(value, list) else [value])
        ]
    elif isinstance(data_files, (list, tuple)):
        items = list(data_files)
    else:
        items = [data_files]
    folders = [os.path.dirname(os.path.abspath(f)) for f in items if isinstance(f, str) and "://" not in f]
    return list(dict.fromkeys(folders))


__all__ = [
    "MEDIA_SUFFIXES",
    "data_file_folders",
    "media_columns",
    "resolve_path",
    "resolve_split",
    "resolve_splits",
]
