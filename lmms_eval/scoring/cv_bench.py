"""CV-Bench letter reading (the published rule, measured against the published package).

The output is stripped of surrounding whitespace and of leading ``(``; its first character, upper-cased,
is the answer when it is an ASCII letter, else there is none. So ``"B"``, ``"(b)"``, ``"B. 2"`` and
``"Because"`` read B, ``"The answer is B"`` reads T and ``"**B**"``, ``"[B]"`` and ``"2"`` read nothing.
Our stricter number beside it uses :func:`lmms_eval.scoring.choice.extract_mcq_answer`.
"""

from __future__ import annotations

import string
from typing import Any


def published_letter(response: Any) -> str:
    """The letter the published rule reads (``""`` for none); see the module docstring."""
    text = str(response).strip().lstrip("(")
    first = text[:1].upper()
    return first if first and first in string.ascii_uppercase else ""


def gold_letter(answer: Any) -> str:
    """``"(B)"`` -> ``"B"``."""
    return str(answer).strip().strip("()").strip().upper()


__all__ = ["gold_letter", "published_letter"]
