"""MMVP: options parsed from ``"(a) Left (b) Right"``, the published letter rule, pair accuracy.

The published letter rule (measured against the published package), on the lower-cased, stripped
output, over the document's option letters; the first rule that finds a letter wins:

1. ``answer`` then optional non-letters, an optional ``is``, optional non-letters and ``(``, then a
   letter (``"The answer is (b)"``, ``"answer: b"``; ``"the answer is bad"`` reads b);
2. the first letter standing as a token: after the start, a space or ``(``, and before a space,
   ``)`` or the end (``"x (a) y"``, ``"the option a is wrong"``, ``"I think b"``);
3. a letter, optionally followed by ``)``, that ends the output (``"cab"`` reads b);
4. a letter, optionally after ``(``, that starts the output (``"Because"`` and ``"bad"`` read b,
   ``"A. Left"`` reads a).

``"it is b."``, ``"[b]"`` and ``"**B**"`` name no letter. Our rule beside it is the shared reader
:func:`lmms_eval.scoring.choice.extract_mcq_answer` ("Because" and "bad" name nothing there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from lmms_eval.api.prompts import option_letters

_OPTION_MARK = re.compile(r"\(([a-z])\)")


def parse_options(options: str) -> list[str]:
    """``"(a) Left (b) Right"`` -> ``["Left", "Right"]``."""
    parts = _OPTION_MARK.split(str(options))
    return [parts[k].strip() for k in range(2, len(parts), 2)]


def gold_letter(answer: str) -> str:
    """``"(b)"`` -> ``"B"``."""
    return str(answer).strip().strip("()").strip().upper()


def published_letter(response: Any, n_options: int) -> str:
    """The option letter (upper case) the published rule reads in ``response``; ``""`` for none."""
    text = str(response).strip().lower()
    x = "[" + "".join(option_letters(n_options)).lower() + "]"
    patterns = (
        rf"answer[^a-z]*(?:is)?[^a-z(]*\(?({x})",
        rf"(?:^|\s|\()({x})(?:\s|\)|$)",
        rf"({x})\)?$",
        rf"^\(?({x})",
    )
    for pattern in patterns:
        match = re.search(pattern, text)
        if match:
            return match.group(1).upper()
    return ""


def pair_accuracy(items: Iterable[Mapping[str, Any]], key: str = "is_correct") -> float:
    """The share of image pairs (``pair_index``) whose questions are all answered right."""
    pairs: dict[Any, bool] = {}
    for item in items:
        pairs[item["pair_index"]] = pairs.get(item["pair_index"], True) and bool(item[key])
    return sum(pairs.values()) / len(pairs) if pairs else float("nan")


__all__ = ["gold_letter", "pair_accuracy", "parse_options", "published_letter"]
