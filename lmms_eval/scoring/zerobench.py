"""ZeroBench answer matching (the published rule, measured against the published package).

Both the prediction and the gold are normalised: surrounding whitespace, then surrounding quotes
(``'``, ``"``, a backtick) are removed, one trailing full stop is dropped, the text is lower-cased
and runs of whitespace become one space. Two normalised texts that are both plain decimal numbers
(digits, an optional leading ``-``, an optional fraction; thousands commas ignored) are compared
as numbers (``"1,000"`` = ``"1000"``, ``"12.50"`` = ``"12.5"``, ``"0012"`` = ``"12"``); anything
else must be equal as text. So ``"Blue car."`` matches ``blue car`` while ``"12%"``, ``"$12$"``,
``"\\boxed{12}"``, ``"The answer is 12"``, ``"+12"`` and ``"1e3"`` do not match ``12`` / ``1000``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

_PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)")
_QUOTES = "'\"`"


def normalise(text: Any) -> str:
    """The comparable form of an answer (see the module docstring)."""
    value = str(text).strip().strip(_QUOTES).strip()
    if value.endswith("."):
        value = value[:-1]
    return " ".join(value.lower().split())


def _number(text: str) -> Decimal | None:
    plain = text.replace(",", "")
    if not _PLAIN_NUMBER.fullmatch(plain):
        return None
    try:
        return Decimal(plain)
    except InvalidOperation:
        return None


def exact_match(prediction: Any, gold: Any) -> bool:
    """Whether ``prediction`` is ZeroBench's ``gold`` after normalisation (numbers by value)."""
    pred, target = normalise(prediction), normalise(gold)
    pred_number, gold_number = _number(pred), _number(target)
    if pred_number is not None and gold_number is not None:
        return pred_number == gold_number
    return pred == target


__all__ = ["exact_match", "normalise"]
