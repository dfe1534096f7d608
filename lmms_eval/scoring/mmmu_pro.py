"""MMMU-Pro scoring: the published letter rule of its standard setting, the vision setting's
whole-output comparison and the composite setting's letter lists.

Published rules (measured against the published package on generated answers):

* **Standard (10 options)** - :func:`published_choice`. Edge characters ``, . ! ? ; : '`` are
  stripped from the response (one after the other, in that order) and the response is padded with
  a space on each side. Then, the first rule that finds something wins:

  1. ``(B)`` anywhere;
  2. ``B`` followed by a space (so ``"DNA is"`` names option A: a letter need not start a word);
  3. ``B.`` anywhere;
  4. only in responses of more than five words: an option's text, ignoring case.

  When a rule finds several letters, the one whose mention starts last wins (``(X)`` for rule 1,
  the text for rule 4, `` X `` for rules 2 and 3; letters without such a mention lose, and ties go to
  the earlier letter). When nothing is found a letter is drawn with :func:`random.choice` from the
  global generator (seeded by ``--seed``), as published. :func:`strict_choice` is our rule beside it
  (the shared reader :func:`lmms_eval.scoring.choice.extract_mcq_answer`: ``Answer: B``, a bare
  or leading letter, ...; a letter must stand alone; no draw).
* **Vision** - the whole output is the prediction: only the exact gold letter (``"B"``, no space,
  no full stop) is correct.
* **Composite** - :func:`composite_letters`: the standalone capital letters of the output (``A``
  in ``"A, C"``, ``"A.C"`` or ``"**A**"``; not in ``"AC"``), the first as many as there are gold
  answers, padded with ``""``; a document scores the share of positions that equal the gold list.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Sequence

from lmms_eval.api.prompts import option_letters
from lmms_eval.scoring.choice import extract_mcq_answer

_EDGE_CHARACTERS = (",", ".", "!", "?", ";", ":", "'")
_STANDALONE_CAPITAL = re.compile(r"\b([A-Z])\b")


def _last_mentioned(found: list[str], position: dict[str, int]) -> str:
    """The letter of ``found`` with the largest position; the earlier letter on ties."""
    return max(found, key=lambda letter: position[letter])


def published_choice(response: str, options: Sequence[str]) -> tuple[str, bool]:
    """``(letter, drawn)``: the letter the published MMMU-Pro rule reads in ``response`` (see the
    module docstring), and whether it was drawn at random because no rule found one."""
    letters = option_letters(len(options))
    text = str(response)
    for character in _EDGE_CHARACTERS:
        text = text.strip(character)
    padded = f" {text} "
    bracketed = [letter for letter in letters if f"({letter})" in padded]
    if bracketed:
        return _last_mentioned(bracketed, {x: padded.rfind(f"({x})") for x in bracketed}), False
    for form in ("{} ", "{}."):
        found = [letter for letter in letters if form.format(letter) in padded]
        if found:
            return _last_mentioned(found, {x: padded.rfind(f" {x} ") for x in found}), False
    if len(padded.split()) > 5:
        lowered = padded.lower()
        named = [letter for letter, option in zip(letters, options) if str(option).lower() in lowered]
        if named:
            texts = dict(zip(letters, options))
            return _last_mentioned(named, {x: lowered.rfind(str(texts[x]).lower()) for x in named}), False
    return random.choice(letters), True


def strict_choice(response: str, n_options: int) -> str | None:
    """Our rule: :func:`lmms_eval.scoring.choice.extract_mcq_answer` over the ``n_options`` letters
    (None when the response commits to no letter; never a draw)."""
    return extract_mcq_answer(response, "".join(option_letters(n_options)))


def composite_gold(answer: str | Sequence[str]) -> list[str]:
    """A composite document's gold letters, given as a Python list literal (``"['A', 'C']"``).

    A plain letter (``"B"``, as in the standard configuration that ``mmmu_pro_composite_cot`` reads
    as published) is a one-element list; the published code raises on it."""
    if not isinstance(answer, str):
        return [str(a) for a in answer]
    text = answer.strip()
    if not text.startswith("["):
        return [text]
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"MMMU-Pro composite answer {answer!r} is not a Python list literal") from None
    if not isinstance(parsed, (list, tuple)):
        raise ValueError(f"MMMU-Pro composite answer {answer!r} is not a list")
    return [str(a) for a in parsed]


def composite_letters(response: str, count: int) -> list[str]:
    """The first ``count`` standalone capital letters of ``response``, padded with ``""``."""
    found = _STANDALONE_CAPITAL.findall(str(response))[:count]
    return found + [""] * (count - len(found))


def composite_score(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """The share of positions where the predicted letter equals the gold letter (0.0 for no gold)."""
    if not gold:
        return 0.0
    return sum(p == g for p, g in zip(predicted, gold)) / len(gold)


__all__ = [
    "composite_gold",
    "composite_letters",
    "composite_score",
    "published_choice",
    "strict_choice",
]
