"""Sizes of task splits from metadata and row counts, without loading the data or its media.

JSON rows are counted, Parquet files give their row count from the footer, CSV rows are counted with
the ``csv`` module, Arrow files (also those of ``save_to_disk`` folders) from their record batches,
memory-mapped, and Hub datasets from the split sizes in their metadata (``load_dataset_builder``,
which answers from the local cache when offline). Used by ``lmms-eval power``.
"""

from __future__ import annotations

import csv
import glob
import json
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmms_eval.errors import DatasetError, LmmsEvalError

if TYPE_CHECKING:
    from lmms_eval.api.task import ConfigurableTask

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SizeInfo:
    """The size of a task's evaluated split, read without loading the data.

    ``n`` is None when the size could not be read; ``reason`` then says why. ``source`` says how it
    was read. ``has_process_docs``: the task filters or expands its docs in ``process_docs``, so the
    evaluated number of docs may differ from the raw split size reported here.
    """

    task: str
    split: str | None
    n: int | None
    source: str | None = None
    has_process_docs: bool = False
    via: str | None = None  # the group or tag the task was selected through
    reason: str | None = None

    def notes(self) -> list[str]:
        notes = []
        if self.n is None:
            notes.append(f"size unknown: {self.reason}" if self.reason else "size unknown")
        elif self.n == 0:
            notes.append("the split is empty")
        if self.has_process_docs:
            notes.append("process_docs may change n")
        if self.via:
            notes.append(f"via {self.via}")
        return notes


class _SizeUnknown(Exception):
    """The size of a split cannot be read without loading the data."""


def task_sizes(
    task_names: Sequence[str], include_path: str | Sequence[str] | None = None
) -> dict[str, SizeInfo]:
    """``{task: SizeInfo}`` for the leaf tasks of ``task_names`` (groups and tags expanded, in order).

    Only task configs are loaded (unknown names raise :class:`~lmms_eval.errors.TaskNotFoundError`);
    datasets are not: sizes come from row counts and metadata (see the module docstring). A task
    selected twice is listed once.
    """
    from lmms_eval.api.group import ConfigurableGroup
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=include_path)
    out: dict[str, SizeInfo] = {}
    for name in manager.match_tasks(task_names):
        for key, node in manager.load_task_or_group([name]).items():
            leaves = list(node.leaves()) if isinstance(node, ConfigurableGroup) else [node]
            for leaf in leaves:
                if leaf.task_name not in out:
                    via = key if key != leaf.task_name else (name if name != leaf.task_name else None)
                    out[leaf.task_name] = split_size(leaf, via=via)
    return out


def split_size(task: ConfigurableTask, via: str | None = None) -> SizeInfo:
    """The :class:`SizeInfo` of one task's evaluated split (test_split, else validation_split)."""
    config = task.config
    has_process_docs = config.process_docs is not None
    try:
        split = task.eval_split
    except LmmsEvalError as exc:
        return SizeInfo(task.task_name, None, None, None, has_process_docs, via, str(exc))
    try:
        n, source = count_split(
            config.dataset_path,
            config.dataset_name,
            dict(config.dataset_kwargs),
            task.base_dir,
            split,
            task.task_name,
        )
    except (_SizeUnknown, LmmsEvalError) as exc:
        reason = str(exc).removeprefix(f"task '{task.task_name}': ")
        published = _published_size(task)
        if published is not None:  # e.g. a Hub dataset that is not cached while offline
            logger.info("task %s: using the published size %d (%s)", task.task_name, published, reason)
            return SizeInfo(
                task.task_name, split, published, "metadata.benchmark.size", has_process_docs, via
            )
        logger.info("task %s: size of split '%s' unknown: %s", task.task_name, split, reason)
        return SizeInfo(task.task_name, split, None, None, has_process_docs, via, reason)
    except (OSError, ValueError, KeyError, TypeError, csv.Error) as exc:  # unreadable or malformed files
        from lmms_eval.data.files import short_error

        reason = f"could not read the data files ({short_error(exc)})"
        logger.info("task %s: %s", task.task_name, reason)
        return SizeInfo(task.task_name, split, None, None, has_process_docs, via, reason)
    logger.debug("task %s: split '%s' has %d docs (%s)", task.task_name, split, n, source)
    return SizeInfo(task.task_name, split, n, source, has_process_docs, via)


def _published_size(task: ConfigurableTask) -> int | None:
    """``metadata.benchmark.size`` of a bundled benchmark (see :mod:`lmms_eval.tasks.catalog`)."""
    info = task.config.metadata.get("benchmark")
    size = info.get("size") if isinstance(info, dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None


# -- split specs ("test", "test[:100]", "train+test[10%:]") ------------------------------------------

_SPLIT_PART = re.compile(r"\s*([\w.-]+)\s*(?:\[\s*(-?\d+%?)?\s*:\s*(-?\d+%?)?\s*\])?\s*\Z")


def _parse_split_spec(spec: str) -> list[tuple[str, str | None, str | None]]:
    """``"train[:10]+test"`` -> ``[("train", None, "10"), ("test", None, None)]``."""
    parts = []
    for piece in spec.split("+"):
        match = _SPLIT_PART.match(piece)
        if not match:
            raise _SizeUnknown(f"cannot read the split spec '{spec}'")
        parts.append((match.group(1), match.group(2), match.group(3)))
    return parts


def _bound(text: str | None, n: int) -> int | None:
    if text is None:
        return None
    if text.endswith("%"):  # datasets' default rounding of percent slices: to the closest row
        return round(int(text[:-1]) * n / 100.0)
    return int(text)


def _sliced(n: int, start: str | None, stop: str | None) -> int:
    return len(range(n)[_bound(start, n) : _bound(stop, n)])


def _plain_name(spec: str) -> str | None:
    """The split a spec without ``+`` also answers to (``test[:10]`` -> ``test``), as the loader keys it."""
    match = re.match(r"[\w.-]+", spec)
    return match.group() if match and "+" not in spec else None


# -- counting -----------------------------------------------------------------------------------------

_SUFFIX_BUILDERS = (
    (".jsonl", "json"),
    (".ndjson", "json"),
    (".json.lines", "json"),
    (".json", "json"),
    (".parquet", "parquet"),
    (".csv", "csv"),
    (".tsv", "csv"),
    (".arrow", "arrow"),
    (".txt", "text"),
)
_JSON_LINES_SUFFIXES = (".jsonl", ".ndjson", ".json.lines")
# csv options of pandas.read_csv that change the row count and are not reproduced here
_CSV_ROW_OPTIONS = ("skiprows", "nrows", "skipfooter", "comment", "skip_blank_lines", "lineterminator")


def _builder_for(path: str) -> str | None:
    lowered = path.lower()
    return next((b for suffix, b in _SUFFIX_BUILDERS if lowered.endswith(suffix)), None)


def _expand(files: Any) -> list[str]:
    """Resolved data-file entries (absolute paths or glob patterns) as a sorted list of files."""
    entries = [files] if isinstance(files, str) else list(files)
    out: list[str] = []
    for entry in entries:
        if "://" in entry:
            raise _SizeUnknown(f"data file '{entry}' is remote")
        if any(ch in entry for ch in "*?["):
            out.extend(sorted(p for p in glob.glob(entry, recursive=True) if os.path.isfile(p)))
        else:
            out.append(entry)
    return out


def _count_json_file(path: str, field: str | None) -> int:
    from lmms_eval.data.json_native import _NeedsDatasets, _parse_json_file

    if field is None and path.lower().endswith(_JSON_LINES_SUFFIXES):
        # JSON Lines: one record per non-blank line; only the first is parsed (a pretty-printed
        # document in a .jsonl file, which the loader also accepts, goes to the full parser)
        count = 0
        first_ok = True
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    if count == 0:
                        try:
                            json.loads(line)
                        except ValueError:
                            first_ok = False
                            break
                    count += 1
        if first_ok:
            return count
    try:
        return len(_parse_json_file(path, field))
    except _NeedsDatasets as why:
        raise _SizeUnknown(str(why)) from None


def _count_csv_file(path: str, options: Mapping[str, Any]) -> int:
    unsupported = [key for key in _CSV_ROW_OPTIONS if options.get(key) is not None]
    if unsupported:
        raise _SizeUnknown(f"csv option(s) {', '.join(unsupported)} change the row count")
    delimiter = options.get("sep") or options.get("delimiter") or ("\t" if path.endswith(".tsv") else ",")
    header = options.get("header", "infer")
    header_rows = 0 if header is None else (int(header) + 1 if isinstance(header, int) else 1)
    encoding = options.get("encoding") or "utf-8-sig"
    with open(path, newline="", encoding=encoding) as handle:
        rows = sum(1 for row in csv.reader(handle, delimiter=str(delimiter)) if row)  # blank lines skipped
    return max(0, rows - header_rows)


def _count_arrow_file(path: str) -> int:
    """Rows of an Arrow IPC file or stream (``save_to_disk`` shards), memory-mapped: no data is copied."""
    import pyarrow as pa
    import pyarrow.ipc

    with pa.memory_map(path) as source:
        try:
            return pyarrow.ipc.open_file(source).count_rows()
        except pa.ArrowInvalid:
            source.seek(0)
            return sum(batch.num_rows for batch in pyarrow.ipc.open_stream(source))


def _count_text_file(path: str) -> int:
    with open(path, encoding="utf-8") as handle:
        return len(handle.read().splitlines())


def count_file_rows(path: str, builder: str | None = None, options: Mapping[str, Any] | None = None) -> int:
    """The number of rows ``datasets`` (or the native JSON reader) would give for one data file."""
    options = options or {}
    kind = builder or _builder_for(path)
    if kind in ("json", "jsonl"):
        field = options.get("field")
        return _count_json_file(path, field if isinstance(field, str) else None)
    if kind == "parquet":
        import pyarrow.parquet as pq

        return pq.read_metadata(path).num_rows  # the footer only
    if kind == "csv":
        return _count_csv_file(path, options)
    if kind == "arrow":
        return _count_arrow_file(path)
    if kind == "text":
        return _count_text_file(path)
    raise _SizeUnknown(f"cannot count the rows of '{kind or os.path.basename(path)}' data without loading it")


def _count_spec(split_spec: str, sizes: Callable[[str], int | None], what: str) -> int:
    """Rows of ``split_spec`` (``test``, ``test[:10]``, ``a+b``); ``sizes(name)`` gives a split's size."""
    total = 0
    for name, start, stop in _parse_split_spec(split_spec):
        n = sizes(name)
        if n is None:
            raise _SizeUnknown(f"split '{name}' is not in {what}")
        total += _sliced(n, start, stop)
    return total


def count_split(
    dataset_path: str | None,
    dataset_name: str | None,
    dataset_kwargs: Mapping[str, Any],
    base_dir: str,
    split: str,
    task_name: str = "",
) -> tuple[int, str]:
    """``(rows, how they were counted)`` for ``split`` of a task's dataset, read as the task loader
    would read it but without loading the rows: the same ``dataset_kwargs`` (``data_files`` resolved
    against the YAML folder, ``split`` selections and slices), the same local-or-Hub decision.

    Raises ``_SizeUnknown`` (or a :class:`DatasetError` for missing files) when it cannot tell.
    """
    from lmms_eval.data.files import local_path
    from lmms_eval.data.load import LOCAL_BUILDERS, _is_saved_dataset, datasets_kwargs

    if not dataset_path:
        raise _SizeUnknown("the task has no dataset_path")
    kwargs = datasets_kwargs(dataset_kwargs)
    selection = kwargs.get("split")
    if selection is not None and not isinstance(selection, str):
        raise _SizeUnknown(f"dataset_kwargs.split {selection!r} is not one split")
    if selection is not None and split not in (selection, _plain_name(selection)):
        raise _SizeUnknown(f"dataset_kwargs.split '{selection}' loads no split '{split}'")
    spec = selection or split
    label = f"{dataset_path}" + (f" ({dataset_name})" if dataset_name else "")

    builder = "json" if dataset_path == "jsonl" else dataset_path
    if dataset_path in LOCAL_BUILDERS and not dataset_kwargs.get("load_from_disk"):
        return _count_local_builder(builder, kwargs, base_dir, spec, task_name), f"{builder} rows"
    local = local_path(dataset_path, base_dir)
    if dataset_kwargs.get("load_from_disk") or (local is not None and _is_saved_dataset(local)):
        if local is None:
            raise DatasetError(
                f"saved dataset folder '{dataset_path}' not found under '{base_dir}' or the cwd"
            )
        return _saved_dataset_size(local, selection, split), "saved dataset (arrow metadata)"
    if local is not None and os.path.isfile(local):
        file_builder = _builder_for(local)
        if file_builder is None:
            raise _SizeUnknown(f"cannot tell the format of dataset file '{local}'")
        files = {str(selection or "train"): [local]}
        return _count_spec(
            spec, _file_sizes(files, file_builder, kwargs), f"'{local}'"
        ), f"{file_builder} rows"
    if local is not None:
        return _local_folder_size(local, dataset_name, kwargs, spec), "local folder"
    return _hub_size(dataset_path, dataset_name, kwargs, spec), f"Hub metadata: {label}"


def _file_sizes(
    mapping: Mapping[str, list[str]], builder: str | None, options: Mapping[str, Any]
) -> Callable[[str], int | None]:
    def size(name: str) -> int | None:
        if name not in mapping:
            return None
        return sum(count_file_rows(path, builder, options) for path in mapping[name])

    return size


def _count_local_builder(
    builder: str, kwargs: Mapping[str, Any], base_dir: str, spec: str, task_name: str
) -> int:
    from lmms_eval.data.files import resolve_data_files

    if "data_files" not in kwargs:
        raise _SizeUnknown(
            f"dataset_path '{builder}' without dataset_kwargs.data_files (a data_dir is not counted)"
        )
    resolved = resolve_data_files(kwargs["data_files"], base_dir, task_name)
    mapping = resolved if isinstance(resolved, Mapping) else {"train": resolved}
    files = {str(name): _expand(entries) for name, entries in mapping.items()}
    where = "dataset_kwargs.data_files (splits: " + ", ".join(files) + ")"
    return _count_spec(spec, _file_sizes(files, builder, kwargs), where)


def _arrow_rows(folder: str) -> int:
    """Rows of one ``Dataset.save_to_disk`` folder, from its ``state.json`` and Arrow shards."""
    with open(os.path.join(folder, "state.json"), encoding="utf-8") as handle:
        state = json.load(handle)
    indices = state.get("_indices_data_files") or []
    shards = indices or state.get("_data_files") or []
    if not shards:
        raise _SizeUnknown(f"'{folder}/state.json' lists no data files")
    return sum(_count_arrow_file(os.path.join(folder, shard["filename"])) for shard in shards)


def _saved_dataset_size(path: str, selection: str | None, split: str) -> int:
    """The loader's view of a ``save_to_disk`` folder: a DatasetDict's split, or the one Dataset
    (under ``dataset_kwargs.split``, its own split name, or ``train``). No slicing applies."""
    dict_file = os.path.join(path, "dataset_dict.json")
    if os.path.isfile(dict_file):
        with open(dict_file, encoding="utf-8") as handle:
            names = [str(s) for s in json.load(handle).get("splits", [])]
        wanted = selection or split
        if wanted not in names:
            raise _SizeUnknown(
                f"split '{wanted}' is not in the saved dataset '{path}' (splits: {', '.join(names)})"
            )
        return _arrow_rows(os.path.join(path, wanted))
    with open(os.path.join(path, "state.json"), encoding="utf-8") as handle:
        own = json.load(handle).get("_split")
    name = selection or (str(own) if own else "train")
    if split not in (name, _plain_name(name)):
        raise _SizeUnknown(f"the saved dataset '{path}' is one split, '{name}', not '{split}'")
    return _arrow_rows(path)


def _builder_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: kwargs[k] for k in ("data_dir", "data_files", "revision", "token", "cache_dir") if k in kwargs}
    cache = os.environ.get("LMMS_EVAL_DATASETS_CACHE")
    if cache and "cache_dir" not in out:
        out["cache_dir"] = cache
    return out


def _local_folder_size(folder: str, name: str | None, kwargs: Mapping[str, Any], spec: str) -> int:
    """A folder of data files: the split files ``datasets`` would find in it, counted."""
    import datasets

    from lmms_eval.data.files import short_error

    try:
        builder = datasets.load_dataset_builder(folder, name, **_builder_kwargs(kwargs))
    except Exception as exc:
        raise _SizeUnknown(f"cannot list the data files of '{folder}' ({short_error(exc)})") from None
    data_files = builder.config.data_files or {}
    files = {str(split): [str(f) for f in entries] for split, entries in data_files.items()}
    where = f"'{folder}' (splits: {', '.join(files)})"
    return _count_spec(spec, _file_sizes(files, None, kwargs), where)


def _hub_size(path: str, name: str | None, kwargs: Mapping[str, Any], spec: str) -> int:
    """Split sizes from the Hub dataset's metadata (or from the local cache when offline)."""
    from lmms_eval.data.files import short_error
    from lmms_eval.data.hub import _offline_reason

    offline = _offline_reason()  # switches to cache-only mode at once when the Hub is unreachable
    import datasets

    what = f"Hub dataset '{path}'" + (f" (config '{name}')" if name else "")
    try:
        builder = datasets.load_dataset_builder(path, name, **_builder_kwargs(kwargs))
    except Exception as exc:
        where = f" ({offline}, and it is not in the local cache)" if offline else ""
        raise _SizeUnknown(f"no metadata for {what}{where}: {short_error(exc)}") from None
    splits = builder.info.splits or {}
    if not splits:
        raise _SizeUnknown(f"the metadata of {what} has no split sizes")

    def size(split_name: str) -> int | None:
        info = splits.get(split_name)
        count = getattr(info, "num_examples", None) if info is not None else None
        return int(count) if count else None  # 0 means "not recorded" in datasets' SplitInfo

    where = f"the metadata of {what} (splits: {', '.join(map(str, splits))})"
    return _count_spec(spec, size, where)


__all__ = ["SizeInfo", "count_file_rows", "count_split", "task_sizes"]
