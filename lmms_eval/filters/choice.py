"""Filters for multiple-choice answers: ``leading_letter`` and ``mcq_letter``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lmms_eval.api.filter import Filter
from lmms_eval.errors import ConfigError
from lmms_eval.filters._common import map_responses
from lmms_eval.scoring.choice import extract_mcq_answer, leading_letter


class LeadingLetterFilter(Filter):
    """A response that starts with an uppercase letter and a full stop (``"B. a cat"``) becomes
    that letter; any other response is kept as it is (AI2D's ``flexible-extract``).

    Keeping the raw text lets a later ``exact_match`` still accept a bare ``"B"`` or ``"(b)"``
    (with ``ignore_case`` / ``ignore_punctuation``).
    """

    def extract(self, response: Any) -> Any:
        letter = leading_letter(response)
        return response if letter is None else letter

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return map_responses(resps, self.extract)


class MCQLetterFilter(Filter):
    """The option letter :func:`~lmms_eval.scoring.choice.extract_mcq_answer` finds among
    ``letters`` (default ``ABCD``), or ``fallback`` (default ``"[invalid]"``) when it finds none.
    """

    def __init__(self, letters: str = "ABCD", fallback: str = "[invalid]") -> None:
        try:
            extract_mcq_answer("", letters)
        except ValueError as exc:
            raise ConfigError(f"mcq_letter filter: {exc}") from None
        self.letters = letters
        self.fallback = fallback

    def extract(self, response: Any) -> Any:
        letter = extract_mcq_answer(response, self.letters)
        return self.fallback if letter is None else letter

    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        return map_responses(resps, self.extract)
