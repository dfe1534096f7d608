"""Small helpers shared across the package: logging, argument strings, hashing, names."""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import hashlib
import ipaddress
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any

from lmms_eval.errors import ModelArgsError
from lmms_eval.secrets import REDACTED, looks_like_secret, redact  # noqa: F401 - redact is re-exported


class _BraceLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """Logger that accepts both ``%s`` and loguru-style ``{}`` placeholders.

    Task ``utils.py`` files written for the published package call
    ``eval_logger.info("processed {} docs", n)``; this keeps them working on stdlib logging.
    """

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        if args and isinstance(msg, str) and "{}" in msg and "%" not in msg:
            with contextlib.suppress(IndexError, KeyError):
                msg, args = msg.format(*args), ()
        kwargs.setdefault("stacklevel", 2)
        self.logger.log(level, msg, *args, **kwargs)

    def success(self, msg: object, *args: Any, **kwargs: Any) -> None:
        self.log(logging.INFO, msg, *args, **kwargs)


eval_logger = _BraceLogger(logging.getLogger("lmms_eval"), {})


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def file_timestamp(moment: datetime | None = None, zone: str = "UTC") -> str:
    """Timestamp used in output file names, in time zone ``zone`` (IANA name): ``20261122_071530``."""
    tz = timezone.utc if zone == "UTC" else _zone(zone)
    return (moment or utc_now()).astimezone(tz).strftime("%Y%m%d_%H%M%S")


def _zone(name: str) -> tzinfo:
    import zoneinfo

    return zoneinfo.ZoneInfo(name)


def iso_timestamp(moment: datetime | None = None) -> str:
    return (moment or utc_now()).astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------
# k=v,k=v argument strings
# --------------------------------------------------------------------------------------------


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets, braces and quoted values.

    At the top level a quote only opens a quoted value right after ``=`` or ``sep``, so apostrophes
    inside plain values (``prompt=Don't stop``) need no quoting; inside brackets (JSON) quotes
    always delimit strings. Errors say where (key and character), never the value.
    """
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    current: list[str] = []
    value_start = True
    opened = 0  # where the innermost open quote or the outermost bracket began
    for i, ch in enumerate(text):
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'" and (depth > 0 or value_start):
            quote, opened = ch, i
        elif ch in "[{(":
            opened = i if depth == 0 else opened
            depth += 1
        elif ch in "]})":
            depth -= 1
            if depth < 0:
                raise ModelArgsError(
                    _unbalanced(current, len(parts), f"'{ch}' at character {i + 1} closes nothing")
                )
        elif ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
            value_start = True
            continue
        current.append(ch)
        if depth == 0 and not ch.isspace():
            value_start = ch == "="
    if quote or depth != 0:
        what = f"the quote {quote}" if quote else f"'{text[opened]}'"
        raise ModelArgsError(
            _unbalanced(current, len(parts), f"{what} at character {opened + 1} is never closed")
        )
    parts.append("".join(current))
    return parts


def _where(part: list[str] | str, index: int) -> str:
    """``the value of 'key'`` for an item ``key=...`` of an argument string, else ``item N``: how
    errors point at an item without quoting a value (which may be a secret)."""
    key, sep, _ = "".join(part).partition("=")
    key = key.strip()
    if sep and re.fullmatch(r"[\w.\-]{1,80}", key):
        return f"the value of '{key}'"
    return f"item {index + 1}"


def _unbalanced(part: list[str], index: int, detail: str) -> str:
    return f"unbalanced quotes or brackets in argument string: in {_where(part, index)}, {detail}"


# leading zeros (``revision=0123``) stay strings
_INT_RE = re.compile(r"^[+-]?(0|[1-9]\d*)$")
_FLOAT_RE = re.compile(r"^[+-]?((0|[1-9]\d*)(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_value(raw: str) -> Any:
    """Type a CLI value: bool, None, int, float, JSON object/array, quoted or plain string."""
    text = raw.strip()
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered in ("none", "null"):
        return None
    if _INT_RE.match(text):
        return int(text)
    if _FLOAT_RE.match(text):
        return float(text)
    if text and text[0] in "[{" and text[-1] in "]}":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:  # the message names no value: it may be a secret
            raise ModelArgsError(
                f"value looks like JSON but does not parse: {exc.msg} (character {exc.pos + 1})"
            ) from None
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def parse_arg_string(arg_string: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Parse ``"k=v,k2={\\"a\\": 1}"`` into a typed dict (a mapping is returned as a copy)."""
    if arg_string is None:
        return {}
    if isinstance(arg_string, Mapping):
        return dict(arg_string)
    text = arg_string.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ModelArgsError(
                f"argument string is not valid JSON: {exc.msg} (character {exc.pos + 1})"
            ) from None
        if not isinstance(loaded, dict):
            raise ModelArgsError("a JSON argument string must be an object")
        return loaded
    result: dict[str, Any] = {}
    for index, part in enumerate(_split_top_level(text)):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ModelArgsError(_not_key_value(index, list(result)))
        if key in result:
            raise ModelArgsError(f"key {key!r} is given twice in argument string")
        try:
            result[key] = parse_value(value)
        except ModelArgsError as exc:
            raise ModelArgsError(f"{key}: {exc}") from None
    return result


def _not_key_value(index: int, keys: list[str]) -> str:
    """The error of an item without ``=`` (never quoted: ``api_key=a,b`` makes ``b`` one)."""
    message = f"expected key=value in argument string, but item {index + 1} has no key"
    if keys:
        message += f" (if it belongs to the value of '{keys[-1]}', quote that value: {keys[-1]}=\"a,b\")"
    return message


simple_parse_args_string = parse_arg_string  # name used by the published package


# --------------------------------------------------------------------------------------------
# Hashing and names
# --------------------------------------------------------------------------------------------


def _json_default(obj: Any) -> Any:
    if callable(obj):
        return getattr(obj, "__qualname__", repr(obj))
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    if isinstance(obj, bytes):
        return hashlib.sha256(obj).hexdigest()
    if hasattr(obj, "size") and hasattr(obj, "mode") and hasattr(obj, "tobytes"):  # PIL image
        return "image-sha256:" + hashlib.sha256(obj.tobytes()).hexdigest()[:16]
    return repr(obj)


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def hash_string(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_object(obj: Any) -> str:
    return hash_string(canonical_json(obj))


_NAME_KEYS = (
    "peft",
    "delta",
    "pretrained",
    "model",
    "model_version",
    "model_name",
    "model_id",
    "model_path",
    "path",
    "engine",
)


def sanitize_model_name(
    model: str, model_args: Mapping[str, Any] | bool | None = None, full_path: bool = False
) -> str:
    """Directory name for a run's outputs, e.g. ``Qwen__Qwen2.5-VL-7B-Instruct``.

    Taken from the first name-like model argument (last two path parts); falls back to the model id.
    The published one-name form, ``sanitize_model_name(name, full_path=False)`` (what published task
    files call), names the folder after ``name`` itself: its last two path parts, or all of them
    with ``full_path``. The result is one plain folder name: no separators, and no leading dot (so
    never ``..``), so outputs stay inside ``--output_path``. A name that holds a secret (an API key
    given as ``model=...`` by mistake: see :func:`~lmms_eval.secrets.looks_like_secret`) is never
    used: the folder is named after the model id instead, or ``model``.
    """
    if isinstance(model_args, bool):  # the published positional form (name, full_path)
        model_args, full_path = None, model_args
    name = model
    if model_args is None:
        name = _path_name(model, full_path) or model
    else:
        for key in _NAME_KEYS:
            value = model_args.get(key)
            if isinstance(value, str) and value:
                name = _path_name(value, full_path) or value
                break
    if looks_like_secret(name):
        name = model if not looks_like_secret(model) and model != name else "model"
        name = _path_name(name, full_path) or "model"
    safe = re.sub(r"[\"<>:/|\\?*\[\]\x00-\x1f]+", "__", name)
    return re.sub(r"^\.+", lambda m: "_" * len(m.group(0)), safe) or "model"


def _path_name(value: str, full_path: bool) -> str:
    """``value`` whole with ``full_path``, else its last two path parts joined by ``/``."""
    if full_path:
        return value
    parts = [p for p in re.split(r"[\\/]+", value.rstrip("/\\")) if p]
    return "/".join(parts[-2:])


def pattern_match(patterns: Iterable[str], names: Iterable[str]) -> list[str]:
    """Names matching any fnmatch pattern, in sorted order."""
    pool = sorted(set(names))
    matched: set[str] = set()
    for pattern in patterns:
        matched.update(fnmatch.filter(pool, pattern))
    return sorted(matched)


def resolve_cache_dir(cache_dir: str, base_dir: str | None = None) -> str:
    """``cache_dir`` with ``$VARS`` and ``~`` expanded; a relative result is joined to ``base_dir``
    when one is given (the published task helper of the same name)."""
    import os

    path = os.path.expanduser(os.path.expandvars(cache_dir))
    if base_dir and not os.path.isabs(path):
        return os.path.join(base_dir, path)
    return path


def get_default_cache_dir() -> str:
    import os

    home = os.environ.get("LMMS_EVAL_HOME")
    if home:
        return os.path.expanduser(home)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lmms-eval")


@functools.lru_cache(maxsize=1)
def git_info() -> dict[str, str | None]:
    """Commit and branch of the source checkout, when lmms_eval runs from one."""
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.exists(os.path.join(root, ".git")):
        return {"commit": None, "branch": None}

    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=2, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() or None if out.returncode == 0 else None

    return {
        "commit": run("rev-parse", "--short=8", "HEAD"),
        "branch": run("rev-parse", "--abbrev-ref", "HEAD"),
    }


def is_loopback_host(host: str) -> bool:
    """Whether binding ``host`` keeps a server on this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def path_within(root: Path, candidate: str | os.PathLike[str]) -> Path | None:
    """``candidate`` (relative to ``root`` unless absolute, ``~`` expanded, links followed) resolved,
    or ``None`` when it lies outside ``root``: the one containment rule of the server and the UI.

    A path no file can have (a NUL byte, a name the system refuses) is within nothing: ``None``,
    never an exception."""
    text = os.fspath(candidate)
    if "\x00" in text:
        return None
    try:
        path = Path(text).expanduser()
        resolved = (path if path.is_absolute() else root / path).resolve()
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a user of ``~user`` that is unknown
        return None
    return resolved if resolved.is_relative_to(root.resolve()) else None


class Collator:
    """Batches of ``arr`` in a model-friendly order, and the answers put back in input order.

    The published helper model files use: ``Collator(arr, sort_fn, group_fn, grouping)``. With
    ``grouping`` the items are split into groups of equal ``group_fn(item)`` (first-seen order;
    dicts such as gen_kwargs compare by value); inside each group (or over all items) they are
    sorted by ``sort_fn(item)``. :meth:`get_batched` yields lists of ``n`` items (``n=0``: one
    batch per group); :meth:`get_original` takes the answers in that batch order and returns them
    in the order of ``arr``.
    """

    def __init__(
        self,
        arr: list[Any],
        sort_fn: Callable[[Any], Any],
        group_fn: Callable[[Any], Any] = lambda x: x[1],
        grouping: bool = False,
    ) -> None:
        self._size = len(arr)
        indexed = list(enumerate(arr))
        groups: dict[str, list[tuple[int, Any]]] = {}
        for pair in indexed if grouping else []:
            groups.setdefault(canonical_json(group_fn(pair[1])), []).append(pair)
        ordered = list(groups.values()) if grouping else [indexed]
        self._groups = [sorted(group, key=lambda pair: sort_fn(pair[1])) for group in ordered]
        self._order = [index for group in self._groups for index, _ in group]

    def __len__(self) -> int:
        return self._size

    def get_batched(
        self, n: int = 1, batch_fn: Callable[[int, Any], int] | None = None
    ) -> Iterator[list[Any]]:
        """Lists of at most ``n`` items (``batch_fn(position, item)`` may pick the size; 0 = all)."""
        for group in self._groups:
            items = [item for _, item in group]
            start = 0
            while start < len(items):
                size = batch_fn(start, items[start]) if batch_fn is not None else n
                stop = len(items) if size <= 0 else start + size
                yield items[start:stop]
                start = stop

    def get_original(self, newarr: list[Any]) -> list[Any]:
        """``newarr`` (answers in :meth:`get_batched` order) rearranged into the order of ``arr``."""
        if len(newarr) != self._size:
            raise ValueError(f"Collator.get_original: expected {self._size} answers, got {len(newarr)}")
        out: list[Any] = [None] * self._size
        for index, value in zip(self._order, newarr):
            out[index] = value
        return out
