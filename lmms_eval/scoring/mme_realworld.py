"""MME-RealWorld letter reading (the published rule, measured against the published package).

On the stripped output, the phrases ``The best answer is``, ``The correct answer is``,
``The answer is``, ``The answer``, ``The best option is``, ``The correct option is``,
``Best answer:`` and ``Best option:`` are deleted wherever they occur (case-sensitive). Then:

1. an output of more than ten words without any of the capitals A-E reads nothing;
2. the first capital A-E anywhere is the answer (``"Because"`` reads B, ``"Answer: B"`` reads A);
3. with no such capital, the option whose mark ``(a)`` ... ``(e)`` contains the lower-cased output
   is the answer: ``"b"``, ``"(b"`` and ``"c)"`` read B, B and C, and an empty output (or one that
   was only a deleted phrase) reads A, since the empty text is in every mark;
4. otherwise nothing (``"b."``, ``"[b]"``, ``"red"``).
"""

from __future__ import annotations

import re
from typing import Any

_PHRASES = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is",
    "The correct option is",
    "Best answer:",
    "Best option:",
)
_LETTERS = "ABCDE"


def published_letter(response: Any) -> str:
    """The letter the published rule reads, ``""`` for none; see the module docstring."""
    text = str(response).strip()
    for phrase in _PHRASES:
        text = text.replace(phrase, "")
    capital = re.search(f"[{_LETTERS}]", text)
    if len(text.split()) > 10 and capital is None:
        return ""
    if capital is not None:
        return capital.group(0)
    return next((letter for letter in _LETTERS if text.lower() in f"({letter.lower()})"), "")


__all__ = ["published_letter"]
