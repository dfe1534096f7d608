"""Stripping of reasoning blocks (``<think>...</think>``) from responses before scoring."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from lmms_eval.errors import ConfigError

DEFAULT_REASONING_TAGS: list[tuple[str, str]] = [("<think>", "</think>"), ("<analysis>", "</analysis>")]


def parse_reasoning_tags_config(value: Any) -> list[tuple[str, str]] | None:
    """``None`` / ``"none"`` / ``false`` disable stripping; a JSON list of ``[start, end]`` pairs sets tags."""
    if value is None or value is False:
        return None
    if value is True or value == "default":
        return list(DEFAULT_REASONING_TAGS)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("none", "false", "off", "", "null"):
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise ConfigError(
                f"--reasoning_tags: expected 'none' or a JSON list of [start, end] pairs, got {value!r}"
            ) from None
    if not isinstance(value, list) or not all(
        isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(t, str) and t for t in p)
        for p in value
    ):
        raise ConfigError(f"--reasoning_tags: expected a list of [start, end] string pairs, got {value!r}")
    return [(str(a), str(b)) for a, b in value]


@lru_cache(maxsize=32)
def _pattern(start: str, end: str) -> re.Pattern[str]:
    return re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)


def strip_reasoning_tags(text: str, tags: list[tuple[str, str]] | None = None) -> str:
    """Remove every ``start...end`` block; when only an end tag is present (the start tag was part of
    the prompt), keep the text after the last end tag."""
    if not isinstance(text, str):
        return text
    for start, end in tags if tags is not None else DEFAULT_REASONING_TAGS:
        text = _pattern(start, end).sub("", text)
        if end in text and start not in text:
            text = text.rsplit(end, 1)[1]
    return text.strip()
