"""Filters that extract an answer from free text: ``regex`` and ``multi_choice_regex``."""

from __future__ import annotations

import ast
import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lmms_eval.api.filter import Filter
from lmms_eval.errors import ConfigError
from lmms_eval.filters._common import map_responses


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: invalid regex_pattern {pattern!r}: {exc}") from None


def _select(regex: re.Pattern[str], text: str, group_select: int) -> str | None:
    """The ``group_select``-th match (negative counts from the end), or ``None``.

    A pattern with several groups yields its first non-empty group.
    """
    matches = regex.findall(text)
    if not -len(matches) <= group_select < len(matches):
        return None
    match = matches[group_select]
    if isinstance(match, tuple):
        match = next((m for m in match if m), None)
        if match is None:
            return None
    return match.strip()


class RegexFilter(Filter):
    """Extract a ``regex_pattern`` match; ``group_select`` picks the match (negative from the end).

    Responses without a match (or without the selected one) become ``fallback``.
    """

    def __init__(
        self, regex_pattern: str = r"#### (\-?[0-9\.\,]+)", group_select: int = 0, fallback: str = "[invalid]"
    ) -> None:
        self.regex = _compile(regex_pattern, "regex filter")
        self.group_select = int(group_select)
        self.fallback = fallback

    def extract(self, text: Any) -> Any:
        if text is None:
            return self.fallback
        found = _select(self.regex, str(text), self.group_select)
        return self.fallback if found is None else found

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return map_responses(resps, self.extract)


class ExtendedRegexFilter(RegexFilter):
    """:class:`RegexFilter` plus the published helpers for multiple-choice filters built on it:
    :meth:`filter_ignores` normalises a text (``regexes_to_ignore`` removed, then optional case and
    punctuation folding) and :meth:`find_match` returns a match mapped through ``convert_dict``."""

    _PUNCTUATION = str.maketrans("", "", string.punctuation)

    def __init__(
        self,
        regex_pattern: str = r"#### (\-?[0-9\.\,]+)",
        group_select: int = 0,
        fallback: str = "[invalid]",
        ignore_case: bool = False,
        ignore_punctuation: bool = False,
        regexes_to_ignore: Sequence[str] | None = None,
    ) -> None:
        super().__init__(regex_pattern, group_select, fallback)
        self.ignore_case = ignore_case
        self.ignore_punctuation = ignore_punctuation
        self.regexes_to_ignore = list(regexes_to_ignore or [])

    def filter_ignores(self, st: str) -> str:
        for pattern in self.regexes_to_ignore:
            st = re.sub(pattern, "", st)
        if self.ignore_case:
            st = st.lower()
        if self.ignore_punctuation:
            st = st.translate(self._PUNCTUATION)
        return st

    def find_match(
        self, regex: re.Pattern[str], resp: str, convert_dict: Mapping[str, str] | None = None
    ) -> str:
        """The ``group_select``-th match of ``regex`` in ``resp`` (``""`` when there is none), mapped
        through ``convert_dict`` when the match is one of its keys."""
        found = _select(regex, resp, self.group_select) or ""
        return (convert_dict or {}).get(found, found)


# ------------------------------------------------------------------------------------------------
# multi_choice_regex
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Choices:
    """The options of one doc: their letters and texts, in order."""

    letters: tuple[str, ...]
    texts: tuple[str, ...]


def _decode(raw: str) -> Any:
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _letters_for(keys: Sequence[Any]) -> tuple[str, ...]:
    labels = [str(k).strip().upper() for k in keys]
    if all(len(x) == 1 and x in string.ascii_uppercase for x in labels) and len(set(labels)) == len(labels):
        return tuple(labels)
    return tuple(string.ascii_uppercase[: len(labels)])


def doc_choices(doc: Any, field: str | None = None) -> Choices | None:
    """The choices of ``doc`` from ``field`` (default: ``choices``, else ``options``).

    Accepts a list of texts, a ``{letter: text}`` mapping, a ``{"label": [...], "text": [...]}``
    mapping, or any of those encoded as a JSON or Python-literal string.
    """
    if not isinstance(doc, Mapping):
        return None
    names = [field] if field else ["choices", "options"]
    raw = next((doc[n] for n in names if doc.get(n) is not None), None)
    if isinstance(raw, str):
        raw = _decode(raw)
    if isinstance(raw, Mapping) and isinstance(raw.get("text"), list):
        labels = raw.get("label")
        texts = [str(t) for t in raw["text"]]
        keys = labels if isinstance(labels, list) and len(labels) == len(texts) else range(len(texts))
        return Choices(_letters_for(list(keys)), tuple(texts))
    if isinstance(raw, Mapping):
        return Choices(_letters_for(list(raw)), tuple(str(v) for v in raw.values()))
    if isinstance(raw, (list, tuple)) and 0 < len(raw) <= len(string.ascii_uppercase):
        return Choices(tuple(string.ascii_uppercase[: len(raw)]), tuple(str(c) for c in raw))
    return None


@dataclass(frozen=True)
class _LetterPatterns:
    answer: re.Pattern[str]
    alone: re.Pattern[str]
    leading: re.Pattern[str]
    option: re.Pattern[str]
    bracketed: re.Pattern[str]
    token: re.Pattern[str]


@lru_cache(maxsize=64)
def _letter_patterns(letters: str) -> _LetterPatterns:
    x = f"[{re.escape(letters)}]"
    end = r"(?![A-Za-z0-9])"
    return _LetterPatterns(
        answer=re.compile(
            rf"\b(?i:answer)(?:\s+(?i:is))?[\s:：*]*(?:(?i:option|choice)\s*)?[\(\[]?({x})[\)\]]?{end}"
        ),
        alone=re.compile(rf"^\s*[\(\[]?({x})[\)\]]?[.:]?\s*$"),
        leading=re.compile(rf"^\s*[\(\[]?({x})(?:[\)\]]|[.:](?!\d))"),
        option=re.compile(rf"\b(?i:option|choice)\s*[:：]?\s*[\(\[]?({x})[\)\]]?{end}"),
        bracketed=re.compile(rf"[\(\[]({x})[\)\]]"),
        token=re.compile(rf"(?<![A-Za-z0-9'’])({x}){end}"),
    )


class MultiChoiceRegexFilter(Filter):
    """Turn a free-text answer to a multiple-choice question into the letter of a choice.

    Tried in order, the first hit wins:

    1. ``regex_pattern`` (optional; ``group_select`` picks the match), returned as found;
    2. an explicit letter: ``Answer: B`` / ``the answer is (B)`` (the last such statement),
       a response that is only a letter (``B``, ``(B)``, ``B.``), a leading ``B.`` / ``(B)`` /
       ``B)``, ``option B``, then any ``(B)``;
    3. the text of one of the doc's choices (the earliest in the response; the longest choice
       when two start at the same place), compared after ``ignore_case`` / ``ignore_punctuation``;
    4. a single stand-alone capital letter that names a choice (only when the doc has choices).

    Choices come from the instance's own doc (``choices_field``, default ``choices`` or
    ``options``); they limit the valid letters. Without choices, any letter A-Z is valid and
    steps 3-4 are skipped. Anything else becomes ``fallback``.
    """

    def __init__(
        self,
        ignore_case: bool = True,
        ignore_punctuation: bool = False,
        regex_pattern: str | None = None,
        group_select: int = 0,
        fallback: str = "[invalid]",
        choices_field: str | None = None,
    ) -> None:
        self.ignore_case = ignore_case
        self.ignore_punctuation = ignore_punctuation
        self.custom = _compile(regex_pattern, "multi_choice_regex filter") if regex_pattern else None
        self.group_select = int(group_select)
        self.fallback = fallback
        self.choices_field = choices_field

    def _norm(self, text: str) -> str:
        if self.ignore_case:
            text = text.lower()
        if self.ignore_punctuation:
            text = re.sub(r"[^\w\s]", " ", text)
        return " ".join(text.split())

    def _explicit_letter(self, text: str, letters: str) -> str | None:
        p = _letter_patterns(letters)
        answers = p.answer.findall(text)
        if answers:
            return answers[-1]
        for pattern in (p.alone, p.leading, p.option, p.bracketed):
            match = pattern.search(text)
            if match:
                return match.group(1)
        return None

    def _choice_text(self, text: str, choices: Choices) -> str | None:
        haystack = self._norm(text)
        best: tuple[int, int, str] | None = None  # (position, -length, letter)
        for letter, choice in zip(choices.letters, choices.texts):
            needle = self._norm(choice)
            if not needle:
                continue
            match = re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack)
            if match and (best is None or (match.start(), -len(needle)) < best[:2]):
                best = (match.start(), -len(needle), letter)
        return best[2] if best else None

    def _lone_letter(self, text: str, letters: str) -> str | None:
        found = set(_letter_patterns(letters).token.findall(text))
        return found.pop() if len(found) == 1 else None

    def extract(self, response: Any, doc: Any) -> str:
        if response is None:
            return self.fallback
        text = str(response)
        if self.custom is not None:
            found = _select(self.custom, text, self.group_select)
            if found is not None:
                return found
        choices = doc_choices(doc, self.choices_field)
        letters = "".join(choices.letters) if choices else string.ascii_uppercase
        letter = self._explicit_letter(text, letters)
        if letter is None and choices is not None:
            letter = self._choice_text(text, choices) or self._lone_letter(text, letters)
        return self.fallback if letter is None else letter

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        if docs and len(docs) != len(resps):
            raise ValueError(f"multi_choice_regex: {len(resps)} instances but {len(docs)} docs")
        out: list[Any] = []
        for i, item in enumerate(resps):
            doc = docs[i] if docs else None
            if isinstance(item, list):
                out.append([self.extract(v, doc) for v in item])
            else:
                out.append(self.extract(item, doc))
        return out
