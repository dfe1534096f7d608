"""Filters that choose among an instance's responses: ``take_first``, ``take_first_k``, ``majority_vote``."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from lmms_eval.api.filter import Filter
from lmms_eval.errors import ConfigError
from lmms_eval.filters._common import as_list


class TakeFirstFilter(Filter):
    """The first response of each instance (``None`` for an instance without responses)."""

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return [_first(item) for item in resps]


def _first(item: Any) -> Any:
    if isinstance(item, list):
        return item[0] if item else None
    return item


class TakeKFilter(Filter):
    """The first ``k`` responses of each instance, as a list."""

    def __init__(self, k: int) -> None:
        try:
            value = int(k)
        except (TypeError, ValueError):
            raise ConfigError(f"take_first_k: k must be an integer, got {k!r}") from None
        if value < 1:
            raise ConfigError(f"take_first_k: k must be at least 1, got {k!r}")
        self.k = value

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return [as_list(item)[: self.k] for item in resps]


def _vote_key(value: Any) -> Hashable:
    if isinstance(value, (list, tuple)):
        return tuple(_vote_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _vote_key(v)) for k, v in value.items()))
    return value if isinstance(value, Hashable) else repr(value)


class MajorityVoteFilter(Filter):
    """The most frequent response of each instance, as a one-element list.

    Ties go to the response that appears first; an instance without responses gives ``[]``.
    """

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return [_majority(as_list(item)) for item in resps]


def _majority(values: list[Any]) -> list[Any]:
    counts: dict[Hashable, int] = {}
    first: dict[Hashable, Any] = {}
    for value in values:
        key = _vote_key(value)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, value)
    if not counts:
        return []
    best = max(counts.values())
    # dicts keep insertion order, so the first key with the top count appeared first
    winner = next(key for key, count in counts.items() if count == best)
    return [first[winner]]
