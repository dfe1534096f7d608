"""Dataset loading for tasks: hub datasets through ``datasets``, local files, saved datasets.

Local JSON / JSON Lines files load natively (no ``datasets`` import, which costs about half a second);
everything else goes through ``datasets``. When the Hugging Face Hub is unreachable, loading falls
back to the local cache and otherwise fails within seconds with a message that says what to do.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import urlparse

from lmms_eval.errors import DatasetError

logger = logging.getLogger(__name__)

LOCAL_BUILDERS = ("json", "jsonl", "csv", "parquet", "arrow", "text", "pandas", "imagefolder", "audiofolder")
# dataset_kwargs consumed by lmms_eval itself and never passed to datasets.load_dataset
OWN_DATASET_KWARGS = (
    "video",
    "force_download",
    "force_unzip",
    "create_link",
    "From_YouTube",
    "load_from_disk",
    "max_retries",
)
HUB_PROBE_TIMEOUT_S = 3.0


class ListDataset(Sequence[dict[str, Any]]):
    """A list of row dicts with the small part of the ``datasets.Dataset`` API tasks rely on."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return ListDataset(self._rows[index])
        return self._rows[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)

    @property
    def column_names(self) -> list[str]:
        return list(self._rows[0]) if self._rows else []

    def select(self, indices: Sequence[int]) -> ListDataset:
        return ListDataset([self._rows[i] for i in indices])

    def to_hf(self) -> Any:
        import datasets

        return datasets.Dataset.from_list(self._rows)


def _read_json_rows(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        if path.endswith(".jsonl") or path.endswith(".json.lines"):
            rows = []
            for line_no, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise DatasetError(f"{path}:{line_no}: invalid JSON line: {exc.msg}") from None
            return rows
        text = handle.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        # JSON Lines with a .json suffix, as ``datasets`` also accepts
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: neither JSON nor JSON Lines: {exc.msg}") from None
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and len(data) == 1 and isinstance(next(iter(data.values())), list):
        return next(iter(data.values()))
    raise DatasetError(f"{path}: expected a JSON list of records (or JSON Lines)")


def _unify(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every row the same keys (missing ones None), as ``datasets`` does."""
    keys: dict[str, None] = {}
    for row in rows:
        if not isinstance(row, dict):
            raise DatasetError("every record of a JSON dataset must be an object")
        keys.update(dict.fromkeys(row))
    if all(len(row) == len(keys) for row in rows):
        return rows
    return [{k: row.get(k) for k in keys} for row in rows]


def _absolute_data_files(data_files: Any, base_dir: str) -> Any:
    def fix(path: str) -> str:
        if os.path.isabs(path) or "://" in path:
            return path
        candidate = os.path.join(base_dir, path)
        return candidate if os.path.exists(candidate) or any(ch in path for ch in "*?[") else path

    if isinstance(data_files, str):
        return fix(data_files)
    if isinstance(data_files, list):
        return [fix(p) for p in data_files]
    if isinstance(data_files, dict):
        return {k: _absolute_data_files(v, base_dir) for k, v in data_files.items()}
    return data_files


def _native_json(data_files: Any, split_names: Sequence[str]) -> dict[str, ListDataset] | None:
    """Load JSON/JSONL data files without ``datasets``; None when they need the full loader."""
    mapping = data_files if isinstance(data_files, dict) else {"train": data_files}
    out: dict[str, ListDataset] = {}
    for split, files in mapping.items():
        files = [files] if isinstance(files, str) else list(files)
        if any(any(ch in f for ch in "*?[") or "://" in f for f in files):
            return None
        rows: list[dict[str, Any]] = []
        for file in files:
            if not os.path.isfile(file):
                raise DatasetError(f"data file '{file}' does not exist")
            rows.extend(_read_json_rows(file))
        out[split] = ListDataset(_unify(rows))
    return out


@lru_cache(maxsize=8)
def hub_reachable(endpoint: str | None = None) -> bool:
    """Whether the Hub endpoint accepts a TCP connection within a few seconds (cached per process)."""
    url = endpoint or os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(url)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=HUB_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def _offline_requested() -> bool:
    return any(
        os.environ.get(v, "").lower() in ("1", "true", "yes")
        for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def _force_offline() -> None:
    """Switch ``datasets`` / ``huggingface_hub`` to cache-only mode for this process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    try:
        import datasets.config
        import huggingface_hub.constants

        datasets.config.HF_HUB_OFFLINE = True  # type: ignore[attr-defined]
        huggingface_hub.constants.HF_HUB_OFFLINE = True
    except (ImportError, AttributeError):
        pass


def _is_saved_dataset(path: str) -> bool:
    return os.path.isdir(path) and (
        os.path.exists(os.path.join(path, "dataset_dict.json"))
        or os.path.exists(os.path.join(path, "state.json"))
    )


def _as_split_dict(loaded: Any, what: str) -> dict[str, Any]:
    if hasattr(loaded, "keys") and not hasattr(loaded, "column_names"):
        return dict(loaded)
    if isinstance(loaded, dict):
        return loaded
    return {"train": loaded}


def load_dataset_splits(
    dataset_path: str | None,
    dataset_name: str | None,
    dataset_kwargs: dict[str, Any],
    base_dir: str,
    task_name: str,
) -> dict[str, Any]:
    """Load every split of a task's dataset as ``{split: rows}``."""
    if not dataset_path:
        raise DatasetError(f"task '{task_name}' has no dataset_path")
    kwargs = {k: v for k, v in dataset_kwargs.items() if k not in OWN_DATASET_KWARGS}
    if dataset_kwargs.get("video"):
        kwargs.pop("cache_dir", None)  # a video cache folder name, not a datasets cache
    if "data_files" in kwargs:
        kwargs["data_files"] = _absolute_data_files(kwargs["data_files"], base_dir)

    local_dir = dataset_path if os.path.isabs(dataset_path) else os.path.join(base_dir, dataset_path)
    if dataset_kwargs.get("load_from_disk") or _is_saved_dataset(local_dir):
        return _load_from_disk(local_dir if os.path.exists(local_dir) else dataset_path, task_name)

    if (
        dataset_path in ("json", "jsonl")
        and "data_files" in kwargs
        and set(kwargs) <= {"data_files", "split"}
    ):
        native = _native_json(kwargs["data_files"], ())
        if native is not None:
            return native

    import_name = "json" if dataset_path == "jsonl" else dataset_path
    is_hub = dataset_path not in LOCAL_BUILDERS and not os.path.exists(local_dir)
    if is_hub and not _offline_requested() and not hub_reachable():
        logger.info("the Hugging Face Hub is unreachable; looking for '%s' in the local cache", dataset_path)
        _force_offline()
        return _load_hub(
            import_name, dataset_name, kwargs, task_name, offline_reason="the Hugging Face Hub is unreachable"
        )
    target = local_dir if not is_hub and os.path.isdir(local_dir) else import_name
    return _load_hub(target, dataset_name, kwargs, task_name, offline_reason=None)


def _load_from_disk(path: str, task_name: str) -> dict[str, Any]:
    import datasets

    try:
        loaded = datasets.load_from_disk(path)
    except (FileNotFoundError, ValueError) as exc:
        raise DatasetError(
            f"task '{task_name}': could not load the saved dataset at '{path}': {exc}"
        ) from None
    return _as_split_dict(loaded, path)


def _load_hub(
    path: str, name: str | None, kwargs: dict[str, Any], task_name: str, offline_reason: str | None
) -> dict[str, Any]:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a core dependency
        raise DatasetError(f"task '{task_name}' needs the 'datasets' package: {exc}") from None
    try:
        loaded = datasets.load_dataset(path, name, **kwargs)
    except FileNotFoundError as exc:
        raise DatasetError(f"task '{task_name}': dataset '{path}' not found: {_short(exc)}") from None
    except Exception as exc:
        text = _short(exc)
        if offline_reason or _offline_requested() or "offline" in text.lower() or "connect" in text.lower():
            reason = offline_reason or "offline mode is on (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)"
            raise DatasetError(
                f"task '{task_name}': dataset '{path}'"
                + (f" (config '{name}')" if name else "")
                + f" is not in the local cache and {reason}. Download it where the Hub is reachable "
                "(it is then cached under HF_HOME), or point the task at a local copy with --dataset_root "
                "or dataset_path. "
                f"[{text}]"
            ) from None
        raise DatasetError(f"task '{task_name}': loading dataset '{path}' failed: {text}") from None
    return _as_split_dict(loaded, path)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def media_columns(dataset: Any) -> list[str]:
    """Names of Image / Audio / Video (and sequence-of) columns of a ``datasets`` dataset."""
    features = getattr(dataset, "features", None)
    if not features:
        return []
    names = []
    for column, feature in features.items():
        kind = type(feature).__name__
        inner = getattr(feature, "feature", None)
        inner_kind = type(inner).__name__ if inner is not None else ""
        if (
            kind in ("Image", "Audio", "Video")
            or inner_kind in ("Image", "Audio", "Video")
            or (
                kind == "List"
                and type(getattr(feature, "feature", None)).__name__
                in (
                    "Image",
                    "Audio",
                    "Video",
                )
            )
        ):
            names.append(column)
    return names


def without_media(dataset: Any) -> Any:
    """A view of ``dataset`` without media columns (cheap to index), or the dataset itself."""
    columns = media_columns(dataset)
    if columns and hasattr(dataset, "remove_columns"):
        return dataset.remove_columns(columns)
    return dataset
