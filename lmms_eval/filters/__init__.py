"""Built-in filters, registered by name for ``filter_list``."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from lmms_eval.api.filter import Filter
from lmms_eval.api.reasoning import strip_reasoning_tags
from lmms_eval.api.registry import register_filter
from lmms_eval.errors import ConfigError


def _map_nested(values: Sequence[Any], fn: Callable[[Any], Any]) -> list[Any]:
    """Apply ``fn`` to every response, whether an instance holds a list of responses or one value."""
    return [[fn(v) for v in item] if isinstance(item, list) else fn(item) for item in values]


@register_filter("take_first")
class TakeFirstFilter(Filter):
    """The first response of each instance."""

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return [r[0] if isinstance(r, list) and r else r for r in resps]


@register_filter("take_first_k")
class TakeKFilter(Filter):
    """The first ``k`` responses of each instance."""

    def __init__(self, k: int) -> None:
        if int(k) < 1:
            raise ConfigError(f"take_first_k: k must be at least 1, got {k}")
        self.k = int(k)

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return [list(r)[: self.k] for r in resps]


@register_filter("majority_vote")
class MajorityVoteFilter(Filter):
    """The most frequent response (ties go to the earliest); returns a one-element list."""

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        out = []
        for item in resps:
            values = item if isinstance(item, list) else [item]
            counts = Counter(values)
            best = max(counts.values())
            out.append([next(v for v in values if counts[v] == best)])
        return out


@register_filter("regex")
class RegexFilter(Filter):
    """Extract ``regex_pattern`` matches; ``group_select`` picks the match (negative from the end)."""

    def __init__(
        self, regex_pattern: str = r"#### (\-?[0-9\.\,]+)", group_select: int = 0, fallback: str = "[invalid]"
    ) -> None:
        try:
            self.regex = re.compile(regex_pattern)
        except re.error as exc:
            raise ConfigError(f"regex filter: invalid pattern {regex_pattern!r}: {exc}") from None
        self.group_select = int(group_select)
        self.fallback = fallback

    def extract(self, text: Any) -> Any:
        matches = self.regex.findall(str(text))
        if not matches:
            return self.fallback
        try:
            match = matches[self.group_select]
        except IndexError:
            return self.fallback
        if isinstance(match, tuple):
            match = next((m for m in match if m), self.fallback)
        return match.strip()

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return _map_nested(resps, self.extract)


@register_filter("lowercase")
class LowercaseFilter(Filter):
    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return _map_nested(resps, lambda v: str(v).lower())


@register_filter("uppercase")
class UppercaseFilter(Filter):
    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return _map_nested(resps, lambda v: str(v).upper())


@register_filter("remove_whitespace")
class WhitespaceFilter(Filter):
    """Strip leading and trailing whitespace."""

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return _map_nested(resps, lambda v: str(v).strip())


@register_filter("map")
class MapFilter(Filter):
    """Map responses through ``mapping_dict``; unknown responses become ``default_value``."""

    def __init__(self, mapping_dict: dict[Any, Any] | None = None, default_value: Any = None) -> None:
        if not isinstance(mapping_dict, dict):
            raise ConfigError("map filter: mapping_dict must be a mapping")
        self.mapping = mapping_dict
        self.default = default_value

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return _map_nested(resps, lambda v: self.mapping.get(v, self.default))


@register_filter("strip_thinking")
class StripThinkingFilter(Filter):
    """Remove ``<think>...</think>`` (or other ``tags``) blocks."""

    def __init__(self, tags: list[list[str]] | None = None) -> None:
        self.tags = [(a, b) for a, b in tags] if tags else None

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return _map_nested(resps, lambda v: strip_reasoning_tags(v, self.tags))


_LETTER_PATTERNS = [
    re.compile(r"(?:answer|option|choice)\s*(?:is|:)?\s*\(?([A-Z])\)?(?![A-Za-z])", re.IGNORECASE),
    re.compile(r"^\s*\(?([A-Z])\)?(?:[.:)\s]|$)"),
    re.compile(r"\(([A-Z])\)"),
]


@register_filter("multi_choice_regex")
class MultiChoiceRegexFilter(Filter):
    """Extract a choice letter (``A``, ``(B)``, ``Answer: C``) or match the text of a choice.

    Choice texts come from the doc's ``choices`` (or ``options``) field when present, so the filter
    sees the doc that belongs to each instance.
    """

    def __init__(
        self,
        ignore_case: bool = True,
        ignore_punctuation: bool = False,
        regex_pattern: str | None = None,
        group_select: int = 0,
        fallback: str = "[invalid]",
    ) -> None:
        self.ignore_case = ignore_case
        self.ignore_punctuation = ignore_punctuation
        self.custom = re.compile(regex_pattern) if regex_pattern else None
        self.group_select = group_select
        self.fallback = fallback

    def _norm(self, text: str) -> str:
        text = text.strip()
        if self.ignore_case:
            text = text.lower()
        if self.ignore_punctuation:
            text = re.sub(r"[^\w\s]", "", text)
        return " ".join(text.split())

    def extract(self, text: Any, doc: Any) -> str:
        text = str(text)
        if self.custom is not None:
            found = self.custom.findall(text)
            if found:
                match = found[self.group_select]
                return (
                    next((m for m in match if m), self.fallback) if isinstance(match, tuple) else match
                ).strip()
        for pattern in _LETTER_PATTERNS:
            match = pattern.search(text)
            if match:
                return match.group(1).upper()
        choices = None
        if isinstance(doc, dict):
            choices = doc.get("choices") or doc.get("options")
        if isinstance(choices, list):
            normalised = self._norm(text)
            for i, choice in enumerate(choices):
                if self._norm(str(choice)) and self._norm(str(choice)) in normalised:
                    return chr(ord("A") + i)
        return self.fallback

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        out = []
        for item, doc in zip(resps, docs):
            if isinstance(item, list):
                out.append([self.extract(v, doc) for v in item])
            else:
                out.append(self.extract(item, doc))
        return out
