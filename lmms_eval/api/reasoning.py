"""Stripping of reasoning blocks (``<think>...</think>``) from responses before scoring.

The tags come from ``--reasoning_tags`` or a task's ``reasoning_tags``: ``none`` / ``false``
disables stripping, a JSON list of ``[start, end]`` pairs sets the tags.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar, overload

from lmms_eval.errors import ConfigError

T = TypeVar("T")

DEFAULT_REASONING_TAGS: list[tuple[str, str]] = [("<think>", "</think>"), ("<analysis>", "</analysis>")]

_DISABLED = frozenset({"none", "false", "off", "null", ""})
_EXPECTED = "expected 'none', 'false' or a JSON list of [start, end] string pairs"


def parse_reasoning_tags_config(value: Any) -> list[tuple[str, str]] | None:
    """The tag pairs a ``reasoning_tags`` value asks for; ``None`` when stripping is disabled.

    Accepted: ``None``, ``False``, ``"none"``, ``"false"`` (disabled); ``True`` or ``"default"``
    (the default pairs); a list of ``[start, end]`` string pairs, or the same as a JSON string; a
    single ``[start, end]`` pair. An empty list disables stripping. Anything else is a
    :class:`ConfigError`.
    """
    if value is None or value is False:
        return None
    if value is True:
        return list(DEFAULT_REASONING_TAGS)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _DISABLED:
            return None
        if lowered in ("default", "true"):
            return list(DEFAULT_REASONING_TAGS)
        value = _load_json(value)
    return _tag_pairs(value)


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ConfigError(f"reasoning_tags: {_EXPECTED}, got {text!r}") from None


def _is_tag(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _tag_pairs(value: Any) -> list[tuple[str, str]] | None:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"reasoning_tags: {_EXPECTED}, got {value!r}")
    if not value:
        return None
    if len(value) == 2 and all(_is_tag(t) for t in value):
        return [(value[0], value[1])]  # one pair written without the outer list
    pairs: list[tuple[str, str]] = []
    for pair in value:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(_is_tag(t) for t in pair)):
            raise ConfigError(f"reasoning_tags: {_EXPECTED}; {pair!r} is not a pair of non-empty strings")
        pairs.append((pair[0], pair[1]))
    return pairs


@lru_cache(maxsize=32)
def _block_pattern(start: str, end: str) -> re.Pattern[str]:
    return re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)


@overload
def strip_reasoning_tags(text: str, tags: Sequence[tuple[str, str]] | None = None) -> str: ...
@overload
def strip_reasoning_tags(text: T, tags: Sequence[tuple[str, str]] | None = None) -> T: ...


def strip_reasoning_tags(text: object, tags: Sequence[tuple[str, str]] | None = None) -> object:
    """Remove reasoning blocks from ``text`` and strip surrounding whitespace.

    For each ``(start, end)`` pair (default: :data:`DEFAULT_REASONING_TAGS`), every
    ``start...end`` block is removed; an end tag that is left over (its start tag was part of the
    prompt) means everything up to it is reasoning, so only the text after the last one is kept.
    Values that are not strings are returned unchanged.
    """
    if not isinstance(text, str):
        return text
    result = text
    for start, end in DEFAULT_REASONING_TAGS if tags is None else tags:
        result = _block_pattern(start, end).sub("", result)
        if end in result:
            result = result.rsplit(end, 1)[1]
    return result.strip()
