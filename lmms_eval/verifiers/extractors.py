"""Extractors: strip reasoning blocks or whitespace, or pull a regex match, number or option letter."""

from __future__ import annotations

import re
from typing import Any

from lmms_eval.api.reasoning import strip_reasoning_tags
from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.verifiers.base import Extractor

DEFAULT_REASONING_TAGS = [["<think>", "</think>"]]
_SPECIAL_TOKENS = re.compile(r"<\|[^|>]*\|>|</?s>|<eos>|<pad>")
_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")


class StripReasoningExtractor(Extractor):
    """Removes ``<think>...</think>`` blocks (or ``tag_pairs``) and surrounding whitespace."""

    def __init__(self, tag_pairs: list[list[str]] | None = None) -> None:
        self.tag_pairs = [(a, b) for a, b in (tag_pairs or DEFAULT_REASONING_TAGS)]

    def extract(self, text: str, **kwargs: Any) -> str:
        return strip_reasoning_tags(str(text), self.tag_pairs).strip()


class StripExtractor(Extractor):
    """Removes whitespace and chat special tokens (``<|im_end|>``, ``</s>``, ...)."""

    def extract(self, text: str, **kwargs: Any) -> str:
        return _SPECIAL_TOKENS.sub("", str(text)).strip()


class RegexExtractor(Extractor):
    """The ``group`` of the first match of ``pattern``; ``fallback`` when there is none."""

    def __init__(self, pattern: str, group: int = 1, fallback: str = "", flags: int = 0) -> None:
        self.pattern = re.compile(pattern, flags)
        self.group = group
        self.fallback = fallback

    def extract(self, text: str, **kwargs: Any) -> str:
        match = self.pattern.search(str(text))
        return match.group(self.group).strip() if match else self.fallback


class NumberExtractor(Extractor):
    """The last number in the text (thousands separators removed); ``fallback`` when there is none."""

    def __init__(self, fallback: str = "") -> None:
        self.fallback = fallback

    def extract(self, text: str, **kwargs: Any) -> str:
        found = _NUMBER.findall(str(text))
        return found[-1].replace(",", "") if found else self.fallback


class MCQExtractor(Extractor):
    """The option letter the text names (see :func:`lmms_eval.scoring.choice.extract_mcq_answer`),
    else the text unchanged."""

    def __init__(self, choices: list[str] | None = None) -> None:
        self.letters = "".join(choices) if choices else "ABCDEFGHIJ"

    def extract(self, text: str, **kwargs: Any) -> str:
        return extract_mcq_answer(str(text), self.letters) or str(text)
