"""``extract_mcq_answer``: the option letter of a free-text answer, as a string ("" for none)."""

from __future__ import annotations

import re
import string

from lmms_eval.scoring.choice import extract_mcq_answer as _extract

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def _answer_part(response: str) -> str:
    """The content of the last ``<answer>`` tag or ``\\boxed{}``, else the whole response."""
    for pattern in (_ANSWER_TAG, _BOXED):
        found = pattern.findall(response)
        if found:
            return found[-1].strip()
    return response


def extract_mcq_answer(response: str, choices: list[str] | None = None) -> str:
    """The letter ``response`` commits to, restricted to ``choices`` (default ``A``-``Z``).

    Reads the last ``<answer>...</answer>`` or ``\\boxed{...}`` when present, then applies
    :func:`lmms_eval.scoring.choice.extract_mcq_answer` (answer statements, a bare or leading
    letter, a final standalone letter, ...). Returns ``""`` when no single letter is named: unlike
    the published helper it never picks one of several letters named with equal standing.
    """
    if not isinstance(response, str):
        return ""
    letters = "".join(c for c in (choices or string.ascii_uppercase) if len(c) == 1 and c.isupper())
    return _extract(_answer_part(response), letters or string.ascii_uppercase) or ""
