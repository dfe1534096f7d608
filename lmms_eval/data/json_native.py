"""Native reading of local JSON / JSON Lines data files, giving the rows ``datasets`` would give.

Importing ``datasets`` costs about half a second; for plain local JSON this reader is exact and
much faster. Data that ``datasets`` would type in a less obvious way (mixed types, varying nested
keys, date-like strings, very large integers) is handed to ``datasets`` itself.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from lmms_eval.data.files import GLOB_CHARS as _GLOB_CHARS
from lmms_eval.errors import DatasetError

logger = logging.getLogger(__name__)

# keys the native JSON reader may ignore: they do not change the rows of local JSON files
_NATIVE_JSON_INERT_KWARGS = frozenset(
    [
        "token",
        "trust_remote_code",
        "num_proc",
        "cache_dir",
        "download_mode",
        "verification_mode",
        "keep_in_memory",
        "revision",
    ]
)
_NATIVE_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson", ".json.lines")


class ListDataset(Sequence[dict[str, Any]]):
    """A list of row dicts with the small part of the ``datasets.Dataset`` API tasks rely on."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return ListDataset(self._rows[index])
        if isinstance(index, str):  # a column, as ``Dataset["answer"]``
            if self._rows and index not in self._rows[0]:
                raise KeyError(f"column '{index}' is not in the dataset (columns: {self.column_names})")
            return [row[index] for row in self._rows]
        return self._rows[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)

    def __repr__(self) -> str:
        return f"ListDataset(num_rows={len(self._rows)}, columns={self.column_names})"

    @property
    def column_names(self) -> list[str]:
        return list(self._rows[0]) if self._rows else []

    @property
    def num_rows(self) -> int:
        return len(self._rows)

    def select(self, indices: Sequence[int]) -> ListDataset:
        return ListDataset([self._rows[i] for i in indices])

    def to_list(self) -> list[dict[str, Any]]:
        return list(self._rows)

    def to_hf(self) -> Any:
        """The rows as a real ``datasets.Dataset`` (what ``process_docs`` functions expect)."""
        import datasets

        return datasets.Dataset.from_list(self._rows)


# -- native JSON ----------------------------------------------------------------------------------


class _NeedsDatasets(Exception):
    """The data is typed by ``datasets`` in a way the native reader does not reproduce."""


# A value's type as Arrow infers it: ("null",), ("bool",), ("int",), ("float",), ("str",),
# ("list", item_type) or ("struct", keys, field_types).
_Type = tuple[Any, ...]
_NULL: _Type = ("null",)
_SCALAR_TYPES: dict[type, _Type] = {bool: ("bool",), int: ("int",), float: ("float",), str: ("str",)}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# strings Arrow may read as timestamps; deliberately broad (a false hit only costs a fallback)
_TIMESTAMP_LIKE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ].*)?\Z", re.DOTALL)


def _value_type(value: Any) -> _Type:
    if value is None:
        return _NULL
    kind = _SCALAR_TYPES.get(type(value))
    if kind is not None:
        if kind[0] == "int" and not _INT64_MIN <= value <= _INT64_MAX:
            raise _NeedsDatasets("integer outside int64")
        if kind[0] == "str" and len(value) >= 10 and value[4:5] == "-" and _TIMESTAMP_LIKE.match(value):
            raise _NeedsDatasets("date-like string")
        return kind
    if isinstance(value, list):
        item: _Type = _NULL
        for element in value:
            item = _merge_types(item, _value_type(element))
        return ("list", item)
    if isinstance(value, dict) and value:
        return ("struct", tuple(value), tuple(_value_type(v) for v in value.values()))
    raise _NeedsDatasets(f"value of type {type(value).__name__}")


def _merge_types(a: _Type, b: _Type) -> _Type:
    if a == b or b is _NULL:
        return a
    if a is _NULL:
        return b
    tags = {a[0], b[0]}
    if tags == {"int", "float"}:
        return ("float",)
    if tags == {"list"}:
        return ("list", _merge_types(a[1], b[1]))
    if tags == {"struct"} and set(a[1]) == set(b[1]):
        fields_b = dict(zip(b[1], b[2]))
        return ("struct", a[1], tuple(_merge_types(t, fields_b[k]) for k, t in zip(a[1], a[2])))
    raise _NeedsDatasets(f"mixed {a[0]} and {b[0]} values")


def _needs_conversion(kind: _Type) -> bool:
    """Whether values of this type can differ from their Arrow round trip (int in float, key order)."""
    tag = kind[0]
    if tag == "float" or tag == "struct":
        return True
    return tag == "list" and _needs_conversion(kind[1])


def _conform(value: Any, kind: _Type) -> Any:
    if value is None:
        return None
    tag = kind[0]
    if tag == "float":
        return float(value)
    if tag == "list":
        item = kind[1]
        return [_conform(v, item) for v in value] if _needs_conversion(item) else value
    if tag == "struct":
        return {key: _conform(value[key], field) for key, field in zip(kind[1], kind[2])}
    return value


def rows_like_datasets(rows: list[Any]) -> list[dict[str, Any]]:
    """Rows as ``datasets`` returns them from JSON: every key in every row (missing ones None),
    columns and nested keys in first-seen order, ints promoted to float where a field mixes both.

    Raises ``_NeedsDatasets`` for data that ``datasets`` types differently (mixed types, nested
    objects whose keys vary, date-like strings, non-object rows).
    """
    columns: dict[str, _Type] = {}
    for row in rows:
        if not isinstance(row, dict):
            raise _NeedsDatasets("a record that is not an object")
        for key, value in row.items():
            columns[key] = _merge_types(columns.get(key, _NULL), _value_type(value))
    names = list(columns)
    convert = {name: kind for name, kind in columns.items() if _needs_conversion(kind)}
    if not convert and all(len(row) == len(names) and list(row) == names for row in rows):
        return rows
    out = []
    for row in rows:
        fixed = {name: row.get(name) for name in names}
        for name, kind in convert.items():
            fixed[name] = _conform(fixed[name], kind)
        out.append(fixed)
    return out


def _parse_json_lines(text: str, path: str) -> list[Any]:
    """The records of a JSON Lines text. Lines end at ``\n`` only: ``str.splitlines`` would also
    split at U+2028 / U+2029 and other characters that JSON strings may hold unescaped."""
    rows = []
    for line_no, line in enumerate(text.split("\n"), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    f"{path}:{line_no}: invalid JSON line ({exc.msg} at column {exc.colno}); "
                    "fix the file or regenerate it"
                ) from None
    return rows


def read_utf8(path: str) -> str:
    """The text of a data file, which must be UTF-8 (a leading byte-order mark is dropped).

    A byte that is not UTF-8 (a Latin-1 ``é`` ...) is a :class:`DatasetError` naming the file, the
    line and the byte.
    """
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(utf8_error(path, data, exc.start)) from None


def utf8_error(path: str, data: bytes, position: int) -> str:
    """``file:line: byte 0xe9 (column 12) is not UTF-8 ...`` for the bad byte at ``position``."""
    line = data.count(b"\n", 0, position) + 1
    column = position - (data.rfind(b"\n", 0, position) + 1) + 1
    return (
        f"{path}:{line}: byte 0x{data[position]:02x} (column {column}) is not valid UTF-8; data files "
        "must be UTF-8 (convert it, e.g. iconv -f latin1 -t utf-8)"
    )


def first_non_utf8(path: str) -> str | None:
    """:func:`utf8_error` for the first non-UTF-8 byte of ``path``, or None (also when unreadable)."""
    try:
        read_utf8(path)
    except DatasetError as exc:
        return str(exc)
    except OSError:
        return None
    return None


def _parse_json_file(path: str, field: str | None) -> list[Any]:
    """The records of a JSON document (a list, one object, or ``field`` of an object) or of JSON
    Lines, whatever the suffix says, as ``datasets`` reads them."""
    text = read_utf8(path)
    if not text.strip():
        return []
    if field is not None:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise _NeedsDatasets(f"'field' with a file that is not one JSON document: {path}") from None
        if not isinstance(data, dict) or not isinstance(data.get(field), list):
            raise _NeedsDatasets(f"no list under field '{field}' in {path}")
        return data[field]
    document_first = not path.endswith((".jsonl", ".ndjson", ".json.lines"))
    if document_first:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            pass
        else:
            return data if isinstance(data, list) else [data]
    try:
        return _parse_json_lines(text, path)
    except DatasetError as line_error:
        if document_first:
            raise
        try:  # one (pretty-printed) JSON document in a .jsonl file
            data = json.loads(text)
        except json.JSONDecodeError:
            raise line_error from None
        return data if isinstance(data, list) else [data]


def _load_json_natively(kwargs: dict[str, Any], task_name: str) -> dict[str, Any] | None:
    """Load local JSON / JSON Lines data files without ``datasets``; None when ``datasets`` must."""
    extra = set(kwargs) - {"data_files", "split", "field"} - _NATIVE_JSON_INERT_KWARGS
    data_files = kwargs.get("data_files")
    split = kwargs.get("split")
    field = kwargs.get("field")
    if extra or data_files is None or (split is not None and not isinstance(split, str)):
        return None
    if field is not None and not isinstance(field, str):
        return None
    mapping = data_files if isinstance(data_files, Mapping) else {"train": data_files}
    if split is not None:
        if split not in mapping:
            return None  # a slice like "test[:10]", or an unknown split: let datasets decide
        mapping = {split: mapping[split]}
    wanted: dict[str, list[str]] = {}
    for name, files in mapping.items():
        paths = [files] if isinstance(files, str) else list(files)
        if not all(isinstance(p, str) and p.endswith(_NATIVE_JSON_SUFFIXES) for p in paths):
            return None
        if any(ch in p for p in paths for ch in _GLOB_CHARS) or any("://" in p for p in paths):
            return None
        wanted[str(name)] = paths
    out: dict[str, Any] = {}
    for name, paths in wanted.items():
        try:
            records: list[Any] = []
            for path in paths:
                records.extend(_parse_json_file(path, field))
            rows = rows_like_datasets(records)
        except _NeedsDatasets as why:
            logger.debug("task %s: reading JSON through datasets (%s)", task_name, why)
            return None
        except DatasetError as exc:
            raise DatasetError(f"task '{task_name}': {exc}") from None
        if not rows:
            raise DatasetError(
                f"task '{task_name}': data files of split '{name}' hold no records: {', '.join(paths)}"
            )
        out[name] = ListDataset(rows)
    return out


# -- paths ----------------------------------------------------------------------------------------
