"""Filters that rewrite each response: case, whitespace, value mapping, reasoning blocks."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from lmms_eval.api.filter import Filter
from lmms_eval.api.reasoning import DEFAULT_REASONING_TAGS, parse_reasoning_tags_config, strip_reasoning_tags
from lmms_eval.errors import ConfigError
from lmms_eval.filters._common import map_responses, on_strings


class LowercaseFilter(Filter):
    """Lower-case every string response."""

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return map_responses(resps, on_strings(str.lower))


class UppercaseFilter(Filter):
    """Upper-case every string response."""

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return map_responses(resps, on_strings(str.upper))


class WhitespaceFilter(Filter):
    """Strip leading and trailing whitespace from every string response."""

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return map_responses(resps, on_strings(str.strip))


class MapFilter(Filter):
    """Replace every response by ``mapping_dict[response]``; unknown ones become ``default_value``."""

    def __init__(self, mapping_dict: Mapping[Any, Any] | None = None, default_value: Any = None) -> None:
        if not isinstance(mapping_dict, Mapping):
            raise ConfigError(f"map filter: mapping_dict must be a mapping, got {mapping_dict!r}")
        self.mapping = dict(mapping_dict)
        self.default = default_value

    def lookup(self, value: Any) -> Any:
        if not isinstance(value, Hashable):
            return self.default
        return self.mapping.get(value, self.default)

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return map_responses(resps, self.lookup)


class StripThinkingFilter(Filter):
    """Remove reasoning blocks (see :func:`~lmms_eval.api.reasoning.strip_reasoning_tags`).

    ``tags`` takes any ``reasoning_tags`` value; the default is ``<think>`` and ``<analysis>``.
    """

    def __init__(self, tags: Any = None) -> None:
        self.tags = list(DEFAULT_REASONING_TAGS) if tags is None else parse_reasoning_tags_config(tags)

    def strip(self, value: Any) -> Any:
        return value if self.tags is None else strip_reasoning_tags(value, self.tags)

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return map_responses(resps, self.strip)
