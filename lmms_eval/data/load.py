"""Dataset loading for tasks: hub datasets through ``datasets``, local files, saved datasets.

``load_dataset_splits`` turns a task's ``dataset_path`` / ``dataset_name`` / ``dataset_kwargs`` into
``{split: rows}``:

- a folder written by ``Dataset.save_to_disk`` (``dataset_kwargs.load_from_disk: true``, or detected
  from its ``state.json`` / ``dataset_dict.json``) loads through ``datasets.load_from_disk``;
- a packaged builder name (``json``, ``parquet``, ``csv``, ``arrow``, ...) loads local
  ``data_files``, resolved against the task YAML's folder first, then the working directory;
- local JSON / JSON Lines files load natively, without importing ``datasets`` (about half a second),
  giving the rows ``datasets`` would give; data ``datasets`` would type in a less obvious way
  (mixed types, varying nested keys, date strings) goes through ``datasets`` itself;
- anything else is a Hub dataset id. When the Hub is unreachable, loading switches this process to
  offline mode, so ``datasets`` answers from its cache at once, or fails with an error saying what
  to do instead of retrying for minutes.

``dataset_kwargs`` keys that lmms_eval consumes itself (``OWN_DATASET_KWARGS``, and ``cache_dir``
when ``video`` is set) never reach ``datasets.load_dataset``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.data.dataset_root import (
    config_folder,
    data_files_by_split,
    find_local_copy,
    resolve_root,
    searched,
)
from lmms_eval.data.files import local_path as _local_path
from lmms_eval.data.files import resolve_data_files
from lmms_eval.data.files import short_error as _short
from lmms_eval.data.hub import _offline_reason
from lmms_eval.data.json_native import _load_json_natively, first_non_utf8
from lmms_eval.data.media_paths import data_file_folders, resolve_splits
from lmms_eval.errors import DatasetError

logger = logging.getLogger(__name__)

# packaged ``datasets`` builders that read local data files (``dataset_path: json`` etc.);
# ``jsonl`` is our alias of ``json``
LOCAL_BUILDERS = frozenset(
    [
        "json",
        "jsonl",
        "csv",
        "parquet",
        "arrow",
        "text",
        "pandas",
        "xml",
        "hdf5",
        "webdataset",
        "imagefolder",
        "audiofolder",
        "videofolder",
    ]
)
# dataset_kwargs consumed by lmms_eval itself and never passed to datasets.load_dataset
OWN_DATASET_KWARGS = frozenset(
    [
        "video",
        "force_download",
        "force_unzip",
        "create_link",
        "From_YouTube",
        "load_from_disk",
        "max_retries",
        "builder_script",
        "local_files_only",
    ]
)


def _is_saved_dataset(path: str) -> bool:
    """Whether ``path`` is a folder written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``."""
    return os.path.isdir(path) and (
        os.path.isfile(os.path.join(path, "dataset_dict.json"))
        or os.path.isfile(os.path.join(path, "state.json"))
    )


_FILE_BUILDERS = {
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".parquet": "parquet",
    ".csv": "csv",
    ".arrow": "arrow",
    ".txt": "text",
}


def datasets_kwargs(dataset_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``dataset_kwargs`` that go to ``datasets.load_dataset`` (lmms_eval's own keys removed)."""
    kwargs = {k: v for k, v in dataset_kwargs.items() if k not in OWN_DATASET_KWARGS}
    if dataset_kwargs.get("video"):
        kwargs.pop("cache_dir", None)  # the video folder under HF_HOME, not a datasets cache
    ignored = sorted(
        k for k in OWN_DATASET_KWARGS if k in dataset_kwargs and k not in ("video", "load_from_disk")
    )
    if ignored:
        logger.debug("dataset_kwargs handled by lmms_eval, not passed to datasets: %s", ", ".join(ignored))
    return kwargs


def local_copy_hint(task_name: str) -> str:
    """Where to point lmms_eval at a local copy of a Hub dataset, and how to learn what it needs."""
    return (
        "pass --dataset_root DIR (or set LMMS_EVAL_DATASET_ROOT) to a folder with a local copy of it "
        f"('lmms-eval tasks info {task_name}' lists the files and columns the copy needs)"
    )


# -- entry point ----------------------------------------------------------------------------------


def load_dataset_splits(
    dataset_path: str | None,
    dataset_name: str | None,
    dataset_kwargs: Mapping[str, Any],
    base_dir: str,
    task_name: str,
    dataset_root: str | None = None,
) -> dict[str, Any]:
    """Load every split of a task's dataset as ``{split: rows}`` (``datasets`` objects or ListDataset).

    With ``dataset_root`` (or ``$LMMS_EVAL_DATASET_ROOT``) a Hub id is first looked up there as a
    local copy (see :mod:`lmms_eval.data.dataset_root`).
    """
    if not dataset_path:
        raise DatasetError(f"task '{task_name}' has no dataset_path; set it in the task YAML")
    kwargs = datasets_kwargs(dataset_kwargs)
    if dataset_kwargs.get("From_YouTube"):
        logger.warning(
            "task %s: dataset_kwargs.From_YouTube is not supported; videos must already be on disk",
            task_name,
        )
    if dataset_kwargs.get("builder_script"):
        logger.warning(
            "task %s: dataset_kwargs.builder_script is ignored (datasets no longer runs loading scripts)",
            task_name,
        )
    root = resolve_root(dataset_root)
    copy = find_local_copy(root, dataset_path) if root is not None else None
    if dataset_kwargs.get("video") and copy is None:  # a local copy keeps its videos beside its files
        from lmms_eval.data.video_files import prepare_video_files

        prepare_video_files(dataset_path, dataset_kwargs, base_dir, task_name)

    builder = "json" if dataset_path == "jsonl" else dataset_path
    if dataset_path in LOCAL_BUILDERS and not dataset_kwargs.get("load_from_disk"):
        return _load_local_builder(builder, dataset_name, kwargs, base_dir, task_name)

    local = _local_path(dataset_path, base_dir)
    if dataset_kwargs.get("load_from_disk") or (local is not None and _is_saved_dataset(local)):
        if local is None:
            raise DatasetError(
                f"task '{task_name}': saved dataset folder '{dataset_path}' not found (looked under "
                f"'{base_dir}' and '{os.getcwd()}'); write it with Dataset.save_to_disk or fix dataset_path"
            )
        return resolve_splits(_load_from_disk(local, kwargs.get("split"), task_name), [local])
    if local is not None and os.path.isfile(local):
        file_builder = next((b for s, b in _FILE_BUILDERS.items() if local.endswith(s)), None)
        if file_builder is None:
            raise DatasetError(
                f"task '{task_name}': cannot tell the format of dataset file '{local}'; use "
                f"dataset_path: json|csv|parquet|arrow with dataset_kwargs.data_files"
            )
        kwargs.setdefault("data_files", {str(kwargs.get("split") or "train"): local})
        return _load_local_builder(file_builder, dataset_name, kwargs, base_dir, task_name)
    if local is not None:
        loaded = _load_with_datasets(local, dataset_name, kwargs, task_name, offline_reason=None)
        return resolve_splits(loaded, [local])
    if root is not None:
        if copy is not None:
            return _load_local_copy(copy, dataset_name, kwargs, base_dir, task_name)
        logger.warning(
            "task %s: no local copy of '%s' under the dataset root (looked for %s); trying the Hub",
            task_name,
            dataset_path,
            ", ".join(searched(root, dataset_path)),
        )
    return _load_with_datasets(
        dataset_path, dataset_name, kwargs, task_name, offline_reason=_offline_reason()
    )


def _load_local_copy(
    folder: str, config: str | None, kwargs: dict[str, Any], base_dir: str, task_name: str
) -> dict[str, Any]:
    """A Hub dataset from its copy under the dataset root (a save_to_disk folder or data files)."""
    where = config_folder(folder, config, task_name)
    logger.info("task %s: loading the local copy %s", task_name, where)
    if _is_saved_dataset(where):
        return resolve_splits(_load_from_disk(where, kwargs.get("split"), task_name), [where, folder])
    try:
        builder, files = data_files_by_split(where)
    except DatasetError as exc:
        raise DatasetError(f"task '{task_name}': {exc}") from None
    local_kwargs = {k: v for k, v in kwargs.items() if k not in ("data_files", "data_dir", "token")}
    local_kwargs["data_files"] = files
    return _load_local_builder(builder, None, local_kwargs, base_dir, task_name, media_roots=(where, folder))


def _load_local_builder(
    builder: str,
    name: str | None,
    kwargs: dict[str, Any],
    base_dir: str,
    task_name: str,
    media_roots: Sequence[str] = (),
) -> dict[str, Any]:
    """Local data files; relative media paths in them are resolved against ``media_roots``, then
    the data files' folders (:mod:`lmms_eval.data.media_paths`)."""
    folders = [*media_roots]
    if "data_files" in kwargs:
        kwargs["data_files"] = resolve_data_files(kwargs["data_files"], base_dir, task_name)
    elif "data_dir" not in kwargs:
        raise DatasetError(
            f"task '{task_name}': dataset_path '{builder}' reads local files; "
            "list them in dataset_kwargs.data_files (paths relative to the task YAML)"
        )
    if isinstance(kwargs.get("data_dir"), str):
        data_dir = _local_path(kwargs["data_dir"], base_dir)
        if data_dir is None or not os.path.isdir(data_dir):
            raise DatasetError(
                f"task '{task_name}': dataset_kwargs.data_dir '{kwargs['data_dir']}' is not a folder "
                f"under '{base_dir}' or '{os.getcwd()}'"
            )
        kwargs["data_dir"] = data_dir
        folders.append(data_dir)
    folders.extend(data_file_folders(kwargs.get("data_files")))
    if builder == "json":
        native = _load_json_natively(kwargs, task_name)
        if native is not None:
            return resolve_splits(native, folders)
    return resolve_splits(_load_with_datasets(builder, name, kwargs, task_name, offline_reason=None), folders)


def _load_from_disk(path: str, split: Any, task_name: str) -> dict[str, Any]:
    import datasets

    try:
        loaded = datasets.load_from_disk(path)
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise DatasetError(
            f"task '{task_name}': '{path}' is not a dataset saved with save_to_disk ({_short(exc)}); "
            "fix dataset_path, or drop dataset_kwargs.load_from_disk for data files or a Hub id"
        ) from None
    if isinstance(split, str) and isinstance(loaded, Mapping):
        if split not in loaded:
            raise DatasetError(
                f"task '{task_name}': split '{split}' is not in the saved dataset '{path}' "
                f"(splits: {', '.join(sorted(map(str, loaded)))})"
            )
        return {split: loaded[split]}
    return _by_split(loaded, split)


def _by_split(loaded: Any, split: Any) -> dict[str, Any]:
    """``{split: dataset}`` from what ``load_dataset`` / ``load_from_disk`` returned."""
    if isinstance(loaded, Mapping):
        return {str(k): v for k, v in loaded.items()}
    if isinstance(loaded, list):
        names = list(split) if isinstance(split, (list, tuple)) else [str(i) for i in range(len(loaded))]
        out: dict[str, Any] = {}
        for name, part in zip(names, loaded):
            out.update(_keyed(str(name), part))
        return out
    if isinstance(split, str):
        return _keyed(split, loaded)
    own = getattr(loaded, "split", None)
    return _keyed(str(own) if own else "train", loaded)


def _keyed(split: str, dataset: Any) -> dict[str, Any]:
    """A split under its full spec (``test[:10]``) and, when it differs, its plain name (``test``)."""
    out = {split: dataset}
    plain = re.match(r"[\w.-]+", split)
    if plain and plain.group() != split and "+" not in split:
        out.setdefault(plain.group(), dataset)
    return out


# -- datasets.load_dataset and the Hub ----------------------------------------------------------


def _load_with_datasets(
    path: str, name: str | None, kwargs: dict[str, Any], task_name: str, offline_reason: str | None
) -> dict[str, Any]:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a core dependency
        raise DatasetError(f"task '{task_name}' needs the 'datasets' package: {exc}") from None
    kwargs = dict(kwargs)
    if "trust_remote_code" in kwargs and int(datasets.__version__.split(".")[0]) >= 4:
        kwargs.pop("trust_remote_code")  # datasets 4+ runs no loading scripts and only warns about it
    cache = os.environ.get("LMMS_EVAL_DATASETS_CACHE")
    if cache and "cache_dir" not in kwargs:
        kwargs["cache_dir"] = cache
    try:
        loaded = datasets.load_dataset(path, name, **kwargs)
    except Exception as exc:
        raise _load_error(exc, path, name, kwargs, task_name, offline_reason) from None
    return _by_split(loaded, kwargs.get("split"))


def _load_error(
    exc: Exception,
    path: str,
    name: str | None,
    kwargs: Mapping[str, Any],
    task_name: str,
    offline_reason: str | None,
) -> DatasetError:
    what = f"dataset '{path}'" + (f" (config '{name}')" if name else "")
    detail = _short(exc)
    if path in LOCAL_BUILDERS:
        files = kwargs.get("data_files", kwargs.get("data_dir"))
        encoding = _encoding_problem(exc, files)
        if encoding is not None:
            return DatasetError(f"task '{task_name}': {encoding}")
        return DatasetError(
            f"task '{task_name}': could not read the {path} data files {files}: {detail}; "
            "check that the files exist and are valid"
        )
    if os.path.isabs(path):
        return DatasetError(f"task '{task_name}': could not load the local dataset folder '{path}': {detail}")
    unreachable = isinstance(exc, ConnectionError) or "offline" in detail.lower()
    if offline_reason is not None and (unreachable or isinstance(exc, FileNotFoundError)):
        hint = local_copy_hint(task_name)
        return DatasetError(
            f"task '{task_name}': {what} is not in the local datasets cache and {offline_reason}. "
            f"{hint[0].upper()}{hint[1:]}, point dataset_path at a local copy (a save_to_disk folder or data "
            f"files), or load it once where the Hub is reachable (it is cached under HF_HOME). [{detail}]"
        )
    if unreachable:
        return DatasetError(
            f"task '{task_name}': could not reach the Hugging Face Hub for {what}: {detail}. "
            f"Check the network, {local_copy_hint(task_name)}, or set "
            "HF_HUB_OFFLINE=1 to use cached datasets only"
        )
    if isinstance(exc, FileNotFoundError):
        return DatasetError(
            f"task '{task_name}': {what} was not found on the Hugging Face Hub ({detail}); check dataset_path "
            "and dataset_name, and for a gated dataset accept its terms and log in (HF_TOKEN)"
        )
    return DatasetError(f"task '{task_name}': loading {what} failed: {detail}")


def _encoding_problem(exc: BaseException, files: Any) -> str | None:
    """Which data file is not UTF-8, when ``exc`` (or what caused it) is a UnicodeDecodeError."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, UnicodeDecodeError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    paths: list[str] = []
    pending: list[Any] = [files]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            paths.append(item)
        elif isinstance(item, Mapping):
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
    for path in sorted(paths):
        if os.path.isfile(path):
            problem = first_non_utf8(path)
            if problem is not None:
                return problem
    return f"a data file is not UTF-8 ({_short(cause)}); data files must be UTF-8"


_MEDIA_FEATURES = ("Image", "Audio", "Video")


def _is_media_feature(feature: Any) -> bool:
    """Image / Audio / Video, or a (nested) list of them."""
    while True:
        if type(feature).__name__ in _MEDIA_FEATURES:
            return True
        if isinstance(feature, (list, tuple)) and len(feature) == 1:
            feature = feature[0]
        elif type(feature).__name__ in ("List", "LargeList", "Sequence"):
            feature = getattr(feature, "feature", None)
        else:
            return False


def media_columns(dataset: Any) -> list[str]:
    """Names of the Image / Audio / Video (and list-of) columns of a ``datasets`` dataset."""
    features = getattr(dataset, "features", None)
    if not features:
        return []
    return [column for column, feature in features.items() if _is_media_feature(feature)]


def without_media(dataset: Any) -> Any:
    """``dataset`` without its media columns (cheap to index), or the dataset itself."""
    columns = media_columns(dataset)
    if columns and hasattr(dataset, "remove_columns"):
        return dataset.remove_columns(columns)
    return dataset
