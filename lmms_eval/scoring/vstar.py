"""V* Bench letter reading (the published rule, measured against the published package).

Options are A-D, read in either case; the first rule that finds a letter wins, on the stripped output:

1. a letter that starts the output (``"B"``, ``"bad"`` and ``"Answer: C"`` read B, B and A);
2. ``answer``, an optional ``is``, then spaces or colons and a letter (``"the answer is c"``);
3. a letter in parentheses (``"(c)"``);
4. a letter followed, after optional spaces, by ``)``, ``]`` or ``.`` (``"red."`` reads D);
5. a letter between whitespace (``"x b y"``);
6. a letter after whitespace ending the output (``"I am sure: B"``);
7. otherwise the one letter a-d the output holds, if it holds exactly one (``"red"`` reads D,
   ``"dodo"`` starts with d, ``"xddx"`` and ``"green"`` read nothing).

Our stricter number beside it uses :func:`lmms_eval.scoring.choice.extract_mcq_answer`, which reads
no letter from inside a word.
"""

from __future__ import annotations

import re
from typing import Any

_X = "([A-Da-d])"
_RULES = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"^{_X}",
        rf"answer(?:\s+is)?[\s:]+{_X}",
        rf"\({_X}\)",
        rf"{_X}\s*[)\].]",
        rf"\s{_X}\s",
        rf"\s{_X}$",
    )
)


def published_letter(response: Any) -> str | None:
    """The letter (upper case) the published rule reads, or None; see the module docstring."""
    text = str(response).strip()
    for rule in _RULES:
        match = rule.search(text)
        if match:
            return match.group(1).upper()
    found = re.findall(_X, text)
    return found[0].upper() if len(found) == 1 else None


def option_lines(text: str) -> str:
    """The published prompt form of a question: ``"Q (A) x (B) y"`` -> ``"Q\\nA. x\\nB. y"``.

    The question is the text before ``(A)``; each ``(L) option`` mark after it becomes a line, lettered
    again in order. A text without ``(A)`` or without option text stays as it is."""
    text = str(text)
    if "(A)" not in text:
        return text
    options = [o.strip() for o in re.findall(r"\([A-Z]\)\s*([^\n(]*)", text) if o.strip()]
    if not options:
        return text
    question = text[: text.index("(A)")].rstrip()
    return "\n".join([question, *(f"{chr(65 + k)}. {o}" for k, o in enumerate(options))])


__all__ = ["option_lines", "published_letter"]
