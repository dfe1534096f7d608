"""Helpers shared by the built-in filters.

A filter step receives one value per instance. Before a selecting step (``take_first``,
``majority_vote``) that value is the list of the instance's responses; after it, a single
response. The helpers here accept both shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def map_responses(values: Sequence[Any], fn: Callable[[Any], Any]) -> list[Any]:
    """Apply ``fn`` to every response, whether an instance holds a list of responses or one value."""
    return [[fn(v) for v in item] if isinstance(item, list) else fn(item) for item in values]


def as_list(item: Any) -> list[Any]:
    """An instance's responses as a list (a single value becomes a one-element list)."""
    return item if isinstance(item, list) else [item]


def on_strings(fn: Callable[[str], Any]) -> Callable[[Any], Any]:
    """Wrap a text transform so that non-string responses (``None``, loglikelihood tuples) pass."""

    def apply(value: Any) -> Any:
        return fn(value) if isinstance(value, str) else value

    return apply
