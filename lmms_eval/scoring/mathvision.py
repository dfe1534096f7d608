"""MathVision answer matching (our rule: the published rule raises on every answer, see below).

The published ``mathvision_testmini`` / ``mathvision_test`` scoring function fails with a
``NameError`` before it scores anything, so there is no published number to reproduce; this rule
follows what the prompt asks for ("put your answer in one \\boxed{}"):

* the answer span is MathVista's (:func:`lmms_eval.scoring.mathvista.answer_span`): the content of
  the last ``\\boxed{...}``, else the text after the last answer marker (``The answer is``), else
  the whole response;
* **multiple choice** (the document has options; the gold is a letter): the letter the shared
  reader :func:`lmms_eval.scoring.choice.extract_mcq_answer` finds in the span, or the letter of the
  option whose text the span is (ignoring case and surrounding ``$`` and spaces);
* **free form**: the shared numeric matcher
  :class:`lmms_eval.tasks._task_utils.math_verify_utils.MathVerifyFn` (``math-verify`` when
  installed, else numbers, fractions and ``\\frac`` compared exactly, other answers as text).
"""

from __future__ import annotations

from collections.abc import Sequence

from lmms_eval.api.prompts import option_letters
from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.scoring.mathvista import answer_span
from lmms_eval.tasks._task_utils.math_verify_utils import MathVerifyFn

_MATCH = MathVerifyFn()


def _span(response: str) -> str:
    span, _boxed = answer_span(str(response))
    return span


def choice_of(response: str, options: Sequence[str]) -> str | None:
    """The option letter of a multiple-choice answer, or None."""
    letters = "".join(option_letters(len(options)))
    span = _span(response)
    letter = extract_mcq_answer(span, letters)
    if letter is not None:
        return letter
    plain = span.strip().strip("$").strip().lower()
    named = [x for x, option in zip(letters, options) if plain and str(option).strip().lower() == plain]
    return named[0] if len(named) == 1 else None


def is_correct(response: str, options: Sequence[str], gold: str) -> bool:
    """Whether a MathVision answer is right (multiple choice when ``options`` is not empty)."""
    if options:
        return choice_of(response, options) == str(gold).strip()
    score, _ = _MATCH(str(response), str(gold))
    return score == 1.0


__all__ = ["choice_of", "is_correct"]
