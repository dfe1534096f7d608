"""ChartQAPro relaxed accuracy: numbers within 5%, other text by ANLS, some answers exactly.

One answer against its gold (both stripped, lower-cased, trailing full stops removed):

- **exactly** for multiple-choice and fact-checking questions and for answers flagged as years;
- **numbers** (``float`` after dropping a trailing ``%``, without rescaling: ``42%`` is 42) within
  5% of a non-zero gold; a zero gold must be met exactly;
- **other text** by ANLS (:func:`lmms_eval.scoring.text.anls_score`, threshold 0.5).

A gold written as a Python list (``[1, 2]``, ``['a', 'b']``) is compared element by element with the
answer read the same way: the score is the sum of the pair scores over the gold's length (an answer
that is not a list, or a gold that does not read as one, scores 0). An answer that reads as a
one-element list against a single gold is compared through its element.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from lmms_eval.scoring.text import anls_score

TOLERANCE = 0.05
EXACT_TYPES = frozenset({"multi choice", "fact checking"})


def _clean(text: Any) -> str:
    return str(text).strip().lower().rstrip(".").strip()


def _number(text: str) -> float | None:
    try:
        return float(text.rstrip("%"))
    except ValueError:
        return None


def _as_list(text: str) -> list[Any] | None:
    if not text.startswith("["):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def score_one(prediction: Any, gold: Any, exact: bool = False) -> float:
    """The score of one scalar answer (see the module docstring)."""
    pred, target = _clean(prediction), _clean(gold)
    if exact:
        return float(pred == target)
    pred_number, target_number = _number(pred), _number(target)
    if pred_number is not None and target_number is not None:
        if target_number == 0:
            return float(pred_number == 0)
        return float(abs(pred_number - target_number) / abs(target_number) <= TOLERANCE)
    return anls_score(pred, [target])


def score_answer(prediction: Any, gold: Any, exact: bool = False) -> float:
    """The score of an answer against a gold that may be a list (see the module docstring)."""
    pred_text, gold_text = str(prediction).strip(), str(gold).strip()
    if gold_text.startswith("["):
        golds, preds = _as_list(gold_text), _as_list(pred_text)
        if not golds or preds is None:
            return 0.0
        return sum(score_one(p, g, exact) for p, g in zip(preds, golds)) / len(golds)
    preds = _as_list(pred_text)
    if preds is not None and len(preds) == 1:
        pred_text = str(preds[0])
    return score_one(pred_text, gold_text, exact)


def relaxed_score(prediction: Any, answers: Sequence[Any], question_type: str, years: Sequence[Any]) -> float:
    """The score of the answer to the last question of a ChartQAPro item (conversations ask several)."""
    is_year = str(years[-1]).strip().upper() == "YES" if years else False
    exact = is_year or question_type.strip().lower() in EXACT_TYPES
    return score_answer(prediction, answers[-1], exact)
