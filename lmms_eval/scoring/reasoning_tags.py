"""The ``<think>`` / ``<answer>`` scoring of the published ``*_reasoning`` tasks, as the published
package 0.7.3 scores them (measured against it on hand-written outputs).

* ``format_score`` is 1.0 when the stripped output is a ``<think>...</think>`` block followed, after
  anything, by an ``<answer>...</answer>`` block that ends it, or when it holds a non-empty
  ``\\boxed{...}`` anywhere; else 0.0 (text before ``<think>`` or after ``</answer>`` fails).
* The answer is the first ``<answer>`` block (even an empty one), else the last ``\\boxed{}``, else
  the unsigned number that ends the output (a final full stop allowed: ``"The answer is 3.5."`` gives
  3.5, ``"x -1"`` gives 1, ``"3.5 cm"`` and ``"(3.5)"`` give nothing).
* ``acc_score`` is 1.0 when that answer equals the gold (after stripping and a final full stop), is
  the same number or expression (math-verify), or, for a one-letter gold, names that option letter
  in upper case (``"(B)"``, ``"B. square"``, ``"The answer is B"``; ``"b"`` and ``"Answer: b"`` do not).

These differ from :mod:`lmms_eval.tasks._task_utils.reasoning_utils` (which follows an earlier
published helper: the last ``<answer>`` block, ``<think>`` required for the format, letters in any
case); the bundled ``*_reasoning`` tasks use this module.
"""

from __future__ import annotations

import re
from typing import Any

from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.tasks._task_utils.math_verify_utils import MathVerifyFn
from lmms_eval.tasks._task_utils.reasoning_utils import extract_boxed_answer, simple_parse

_TAGGED = re.compile(r"<think>.*</think>.*<answer>.*</answer>", re.DOTALL)
_BOXED = re.compile(r"\\boxed\{.+\}", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_MATH = MathVerifyFn()
_TRAILING_NUMBER = re.compile(r"(\d+(?:\.\d+)?)\.?$")


def format_score(response: Any) -> float:
    text = str(response).strip()
    return 1.0 if _TAGGED.fullmatch(text) or _BOXED.search(text) else 0.0


def answer_part(response: Any) -> str:
    text = str(response)
    found = _ANSWER.search(text)
    if found:
        return found.group(1).strip()
    boxed = extract_boxed_answer(text)
    if boxed:
        return boxed
    number = _TRAILING_NUMBER.search(text.strip())
    return number.group(1) if number else ""


def _names_letter(answer: str, gold: str) -> bool:
    letter = extract_mcq_answer(answer, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return letter == gold and re.search(rf"(?<![A-Za-z]){gold}(?![A-Za-z])", answer) is not None


def acc_score(response: Any, gold: Any) -> float:
    pred, target = simple_parse(answer_part(response)), simple_parse(str(gold))
    if not pred:
        return 0.0
    if pred == target:
        return 1.0
    if len(target) == 1 and target.isupper():
        return 1.0 if _names_letter(pred, target) else 0.0
    return 1.0 if _MATH(pred, target)[0] == 1.0 else 0.0


# the published system prompt of the ``*_reasoning`` tasks (0.7.3), verbatim, so prompts match
SYSTEM_PROMPT = (
    "You are a helpful assistant. When the user asks a question, your response must include two parts: "
    "first, the reasoning process enclosed in <think>...</think> tags, then the final answer enclosed in "
    "<answer>...</answer> tags.Please provide a clear, concise response within <answer> </answer> tags "
    "that directly addresses the question."
)

__all__ = ["SYSTEM_PROMPT", "acc_score", "answer_part", "format_score"]
