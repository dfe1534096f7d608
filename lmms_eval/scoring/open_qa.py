"""Open-ended video QA (ActivityNet-QA): a judge's yes/no and 0-5 score, or a rule when offline.

The published task asks a GPT judge, with :data:`JUDGE_SYSTEM_PROMPT` and :data:`JUDGE_USER_PROMPT`,
for a Python-dict reply ``{'pred': 'yes'|'no', 'score': 0-5}``; :func:`parse_judge_reply` reads it.

:func:`rule_verdict` decides without a judge. Answer and prediction are normalised as VQA answers
(lower case, punctuation and articles removed, number words as digits; :mod:`lmms_eval.scoring.vqa`):

* the same text: ``("yes", 5)``;
* a yes/no gold and a prediction whose first word is yes or no: ``yes``/5 when they agree, else ``no``/0;
* the gold's words appear, in order and as whole words, in the prediction (``"the man is dancing"``
  for ``dancing``): ``("yes", 4)``;
* anything else: ``("no", 0)``.

``resolved`` tells whether the rule is sure: only the first two cases (the judge variant sends the
rest to the judge).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lmms_eval.scoring.vqa import normalize_answer

JUDGE_SYSTEM_PROMPT = (
    "You are an intelligent chatbot designed for evaluating the correctness of generative outputs for "
    "question-answer pairs. Your task is to compare the predicted answer with the correct answer and "
    "determine if they match meaningfully. Here's how you can accomplish the task:------##INSTRUCTIONS: "
    "- Focus on the meaningful match between the predicted answer and the correct answer.\n"
    "- Consider synonyms or paraphrases as valid matches.\n"
    "- Evaluate the correctness of the prediction compared to the answer."
)
JUDGE_USER_PROMPT = (
    "Please evaluate the following video-based question-answer pair:\n\n"
    "Question: {question}\nCorrect Answer: {answer}\nPredicted Answer: {prediction}\n\n"
    "Provide your evaluation only as a yes/no and score where the score is an integer value between 0 "
    "and 5, with 5 indicating the highest meaningful match. Please generate the response in the form of "
    "a Python dictionary string with keys 'pred' and 'score', where value of 'pred' is  a string of "
    "'yes' or 'no' and value of 'score' is in INTEGER, not STRING.DO NOT PROVIDE ANY OTHER OUTPUT TEXT "
    "OR EXPLANATION. Only provide the Python dictionary string. For example, your response should look "
    "like this: {{'pred': 'yes', 'score': 4.8}}."
)
JUDGE_MAX_TOKENS = 64
MAX_SCORE = 5.0

_PRED = re.compile(r"""['"]pred['"]\s*:\s*['"]\s*(yes|no)\b""", re.IGNORECASE)
_SCORE = re.compile(r"""['"]score['"]\s*:\s*['"]?\s*(-?\d+(?:\.\d+)?)""", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """``correct`` is the judge's (or the rule's) yes; ``score`` is on 0-5."""

    correct: bool
    score: float
    resolved: bool = True
    source: str = "rule"


def judge_messages(question: Any, answer: Any, prediction: Any) -> list[dict[str, str]]:
    """The published judge conversation for one question."""
    user = JUDGE_USER_PROMPT.format(question=question, answer=answer, prediction=prediction)
    return [{"role": "system", "content": JUDGE_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_judge_reply(text: Any) -> Verdict | None:
    """The verdict in a reply like ``{'pred': 'yes', 'score': 4}`` (score clamped to 0-5); None when
    the reply has no ``pred`` or no ``score``."""
    if not isinstance(text, str):
        return None
    pred, score = _PRED.search(text), _SCORE.search(text)
    if pred is None or score is None:
        return None
    value = min(MAX_SCORE, max(0.0, float(score.group(1))))
    return Verdict(pred.group(1).lower() == "yes", value, True, "judge")


def _contains_words(words: list[str], within: list[str]) -> bool:
    n = len(words)
    return n > 0 and any(within[i : i + n] == words for i in range(len(within) - n + 1))


def rule_verdict(answer: Any, prediction: Any) -> Verdict:
    """The rule's verdict (module doc)."""
    gold = normalize_answer(str(answer)).split()
    pred = normalize_answer(str(prediction) if prediction is not None else "").split()
    if gold and gold == pred:
        return Verdict(True, MAX_SCORE)
    if len(gold) == 1 and gold[0] in ("yes", "no") and pred and pred[0] in ("yes", "no"):
        agree = pred[0] == gold[0]
        return Verdict(agree, MAX_SCORE if agree else 0.0)
    if _contains_words(gold, pred):
        return Verdict(True, 4.0, resolved=False)
    return Verdict(False, 0.0, resolved=False)


__all__ = [
    "JUDGE_MAX_TOKENS",
    "JUDGE_SYSTEM_PROMPT",
    "JUDGE_USER_PROMPT",
    "Verdict",
    "judge_messages",
    "parse_judge_reply",
    "rule_verdict",
]
