"""Helpers every model backend shares: stop strings and the ``batch_size`` argument."""

from __future__ import annotations

from typing import Any

from lmms_eval.errors import ModelArgsError


def apply_stop_strings(text: str, until: Any) -> str:
    """Cut ``text`` at the first occurrence of any stop string."""
    stops = [until] if isinstance(until, str) else list(until or [])
    cut = len(text)
    for stop in stops:
        if stop:
            pos = text.find(stop)
            if pos != -1:
                cut = min(cut, pos)
    return text[:cut]


def parse_batch_size(value: Any, model: str, auto: int = 1) -> int:
    """``batch_size`` as a positive integer; ``auto`` and ``auto:N`` (no search is made) give ``auto``."""
    if value is None:
        return auto
    text = str(value).strip().lower()
    if text.startswith("auto"):
        return auto
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise ModelArgsError(
            f"model '{model}': batch_size must be a positive integer or 'auto', got {value!r}"
        )
    return number
