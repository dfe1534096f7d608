"""MMBench scoring: rule-based option extraction and CircularEval.

**Extraction** (:func:`extract_choice`) reads the option a free-text answer picks, given the
options present (``{"A": "cat", "B": "dog", ...}``; MMBench rows may have four or five):

1. *By letter.* The punctuation ``. ( ) [ ] , : ; ! * # { }`` is turned into spaces and the answer
   split into words; the option letters that appear as whole upper-case words are collected
   (``"B"``, ``"(B)"``, ``"B."``, ``"The answer is B"``, ``"Option B: dog"``). One letter: that
   option. A leading ``"A"`` followed by a lower-case word (other than "is", "was", "seems",
   "appears") in an answer of more than three words (``"A dog on a bench"``) is read as the
   article, not as option A, unless ``A`` appears again later.
2. *By option text*, when no single letter was found: the options whose (lower-cased) text appears
   in the lower-cased answer. Exactly one: that option.
3. Otherwise the answer is **unresolved** (several letters or texts, or none): wrong under the
   rule-based scoring; the judge variant asks an LLM judge about these answers only.

**CircularEval.** MMBench asks each question several times with its options rotated; the
variants share ``index % 1_000_000``. A question counts as correct only when every one of its
variants is answered correctly. Scores are percentages of questions (not of variants), overall and
per ``category`` / ``L2-category``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lmms_eval.api.prompts import is_missing

CIRCULAR_MODULUS = 1_000_000
OPTION_LETTERS = "ABCDE"
_LETTER_PUNCTUATION = re.compile(r"[.()\[\],:;!*#{}]")
_LETTER_VERBS = frozenset({"is", "was", "seems", "appears"})  # "A is correct": the letter, not the article


def available_options(row: Mapping[str, Any], letters: str = OPTION_LETTERS) -> dict[str, str]:
    """The options a row has, in letter order: ``{"A": "cat", ...}`` (empty / "nan" cells are absent)."""
    return {letter: str(row[letter]) for letter in letters if not is_missing(row.get(letter))}


def _letters_named(answer: str, letters: Iterable[str], article_rule: bool = True) -> set[str]:
    words = _LETTER_PUNCTUATION.sub(" ", answer).split()
    found = {word for word in words if word in set(letters)}
    article = (
        article_rule
        and len(words) > 3
        and words[0] == "A"
        and words[1][:1].islower()
        and words[1] not in _LETTER_VERBS
    )
    if article and "A" not in words[1:]:
        found.discard("A")
    return found


def extract_choice(answer: str, options: Mapping[str, str], article_rule: bool = True) -> str | None:
    """The option letter ``answer`` picks by the rules of the module docstring; None if unresolved.

    ``article_rule=False`` reads a leading ``"A"`` as option A always (HR-Bench's published rule)."""
    letters = _letters_named(str(answer), options, article_rule)
    if len(letters) == 1:
        return next(iter(letters))
    lowered = str(answer).lower()
    by_text = [letter for letter, text in options.items() if text.strip() and text.strip().lower() in lowered]
    if len(by_text) == 1:
        return by_text[0]
    return None


def question_id(index: int) -> int:
    """The question a circular variant belongs to: ``index % 1_000_000``."""
    return int(index) % CIRCULAR_MODULUS


@dataclass(frozen=True)
class CircularScores:
    """CircularEval percentages: ``overall``, and ``by_category`` / ``by_l2`` keyed by the names."""

    overall: float
    by_category: dict[str, float]
    by_l2: dict[str, float]
    questions: int


def circular_scores(items: Iterable[Mapping[str, Any]]) -> CircularScores:
    """Score variants (dicts with ``index``, ``correct`` and optionally ``category`` / ``l2_category``).

    A question (``index % 1_000_000``) is correct when all its variants are; its category is that of
    its first variant. Percentages are ``100 * correct questions / questions``; NaN with no items.
    """
    correct: dict[int, bool] = {}
    labels: dict[int, tuple[str | None, str | None]] = {}
    for item in items:
        qid = question_id(item["index"])
        correct[qid] = correct.get(qid, True) and bool(item["correct"])
        labels.setdefault(qid, (item.get("category"), item.get("l2_category")))

    def percent(ids: list[int]) -> float:
        return 100.0 * sum(correct[i] for i in ids) / len(ids) if ids else math.nan

    def breakdown(position: int) -> dict[str, float]:
        names = sorted({str(lab[position]) for lab in labels.values() if not is_missing(lab[position])})
        return {name: percent([q for q, lab in labels.items() if lab[position] == name]) for name in names}

    return CircularScores(percent(list(correct)), breakdown(0), breakdown(1), len(correct))


def slug(name: str) -> str:
    """A result-key fragment: ``"Fine-grained Perception (single-instance)"`` ->
    ``"fine_grained_perception_single_instance"``."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_") or "unnamed"


class ScoreTable(dict[str, float]):
    """Named scores returned by an aggregation; a name missing from this table reads as NaN.

    Error-bar resampling recomputes the table on resampled documents, where a small category may
    be absent; it then contributes NaN (skipped) instead of failing.
    """

    def __missing__(self, key: str) -> float:
        return math.nan


def score_table(scores: CircularScores, overall_key: str, prefix: str = "mmbench") -> ScoreTable:
    """``{overall_key: overall, "<prefix>_category_<slug>": ..., "<prefix>_l2_<slug>": ...}``."""
    table = ScoreTable({overall_key: scores.overall})
    table.update({f"{prefix}_category_{slug(name)}": value for name, value in scores.by_category.items()})
    table.update({f"{prefix}_l2_{slug(name)}": value for name, value in scores.by_l2.items()})
    return table


__all__ = [
    "CIRCULAR_MODULUS",
    "OPTION_LETTERS",
    "CircularScores",
    "ScoreTable",
    "available_options",
    "circular_scores",
    "extract_choice",
    "question_id",
    "score_table",
    "slug",
]
