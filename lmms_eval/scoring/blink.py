"""BLINK letter reading (the published rule, measured against the published package).

Over the document's option letters (A, B, ... one per choice), in any case; the first rule that
finds a letter wins:

1. the first line of the output, stripped, is one letter, optionally in parentheses and followed by
   a full stop (``"B"``, ``"(b)"``, ``"C."``);
2. the last ``answer`` statement: ``answer``, an optional `` is``, optional spaces, an optional ``:``
   or ``-``, an optional ``(``, then a letter not followed by a letter (``"The answer is (C)"``,
   ``"Answer: B"``; ``"answer is Cat"`` states nothing);
3. the first letter in parentheses (``"x (B) y"``);
4. the first character after leading spaces and ``(`` (``"Because"`` reads B; ``"I think B"``,
   ``"**B**"`` and ``"[B]"`` read nothing).
"""

from __future__ import annotations

import re
from typing import Any

from lmms_eval.api.prompts import option_letters


def published_letter(response: Any, n_options: int) -> str:
    """The option letter (upper case) the published rule reads, ``""`` for none."""
    text = str(response)
    x = "[" + "".join(option_letters(n_options)) + "]"
    first_line = text.strip().split("\n")[0].strip()
    alone = re.fullmatch(rf"\(?({x})\)?\.?", first_line, re.IGNORECASE)
    if alone:
        return alone.group(1).upper()
    stated = re.findall(rf"answer(?:\s+is)?\s*[:\-]?\s*\(?({x})\)?(?![a-z])", text, re.IGNORECASE)
    if stated:
        return stated[-1].upper()
    bracketed = re.search(rf"\(({x})\)", text, re.IGNORECASE)
    if bracketed:
        return bracketed.group(1).upper()
    first = re.sub(r"^[\s(]+", "", text)[:1].upper()
    return first if first and re.fullmatch(x, first) else ""


__all__ = ["published_letter"]
