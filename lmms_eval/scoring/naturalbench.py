"""NaturalBench: answer reading and the group scores (the published rules, measured against the
published package).

Each group of four documents (ids ``4g`` to ``4g+3``) asks two questions about two images:
documents ``4g``, ``4g+1`` are question 0 on images 0 and 1, ``4g+2``, ``4g+3`` question 1 on
images 0 and 1, and the answers are, in that order, Yes/A, No/B, No/B, Yes/A. An output is read as
1 (Yes, or option A), 0 (No, or option B) or -1 (neither): the first whole word ``yes`` / ``no``
(yes-no questions) or ``a`` / ``b`` (multiple choice), in any case, decides (``"no, yes"`` is 0,
``"Yesterday"`` and ``"Answer: X"`` name nothing).

``ACC`` is the share of documents right, ``Q_ACC`` the share of questions right on both images,
``I_ACC`` the share of images with both questions right, ``G_ACC`` the share of groups all right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

GROUP_ANSWERS = (1, 0, 0, 1)
_WORDS = {"yes_no": ("yes", "no"), "multiple_choice": ("a", "b")}
# the documents (by position in the group) that must all be right for each unit
_UNITS = {
    "ACC": ((0,), (1,), (2,), (3,)),
    "Q_ACC": ((0, 1), (2, 3)),
    "I_ACC": ((0, 2), (1, 3)),
    "G_ACC": ((0, 1, 2, 3),),
}


def read_answer(response: Any, question_type: str) -> int:
    """1 (Yes / A), 0 (No / B) or -1 (neither) by the first of the two words in ``response``."""
    first, second = _WORDS.get(question_type, _WORDS["yes_no"])
    match = re.search(rf"\b({first}|{second})\b", str(response).lower())
    if match is None:
        return -1
    return 1 if match.group(1) == first else 0


def score(items: Iterable[Mapping[str, Any]], unit: str) -> float:
    """The share of ``unit`` (``ACC``, ``Q_ACC``, ``I_ACC``, ``G_ACC``) answered right over the
    complete groups of four among ``items`` (``{"id", "score"}``, ``score`` as :func:`read_answer`)."""
    groups: dict[int, dict[int, int]] = {}
    for item in items:
        group, position = divmod(int(item["id"]), 4)
        groups.setdefault(group, {})[position] = int(item["score"])
    complete = [g for g in groups.values() if len(g) == 4]
    if not complete:
        return float("nan")
    right = [
        all(group[k] == GROUP_ANSWERS[k] for k in members) for group in complete for members in _UNITS[unit]
    ]
    return sum(right) / len(right)


__all__ = ["GROUP_ANSWERS", "read_answer", "score"]
