"""The one JSON encoder of the output files: :func:`dumps`.

Numpy scalars and arrays become numbers and lists, sets and tuples lists, functions
``module.qualname``; NaN and infinity are written as ``null`` (they are not JSON). Text stays
UTF-8 (``ensure_ascii=False``).
"""

from __future__ import annotations

import json
import math
from typing import Any


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item") and callable(obj.item):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if callable(obj):
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
    if hasattr(obj, "size") and hasattr(obj, "mode"):
        return f"<image {getattr(obj, 'size', '')}>"
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    return repr(obj)


def _finite(obj: Any) -> Any:
    """NaN and infinity are not JSON: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def dumps(obj: Any, indent: int | None = None) -> str:
    """``obj`` as JSON text, the way every results and samples file is written."""
    if indent is None:
        return _LINE.encode(obj)
    return json.dumps(_finite(obj), indent=indent, ensure_ascii=False, default=_json_default)


class LineEncoder:
    """:func:`dumps` without indent, with one reusable encoder: the streaming encoder of the samples
    files (one call per record). Values are walked for NaN and infinity only when the record holds
    one (the fast encoder refuses it), so a record is encoded in a single pass."""

    def __init__(self) -> None:
        self._strict = json.JSONEncoder(ensure_ascii=False, default=_json_default, allow_nan=False)
        self._lenient = json.JSONEncoder(ensure_ascii=False, default=_json_default)

    def encode(self, obj: Any) -> str:
        try:
            return self._strict.encode(obj)
        except ValueError:  # NaN or infinity somewhere (or a default() result holding one)
            return self._lenient.encode(_finite(obj))


_LINE = LineEncoder()


def validation_problem(exc: Any) -> str:
    """The first problem of a pydantic ``ValidationError`` in one line: key, value and what is allowed."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(top level)"
    value = repr(error.get("input"))
    if len(value) > 80:
        value = value[:77] + "..."
    return f"key '{where}' = {value}: {error['msg']}"
