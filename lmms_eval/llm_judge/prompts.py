"""Default judge prompts; a custom prompt may use the ``{question}``, ``{answer}``, ... placeholders."""

from __future__ import annotations

import re
from collections.abc import Mapping

_PLACEHOLDER = re.compile(r"\{(\w+)\}")

BINARY_PROMPT = (
    "You are grading a model's answer to a question against a reference answer.\n\n"
    "Question: {question}\n"
    "Reference answer: {answer}\n"
    "Model answer: {prediction}\n\n"
    "Decide whether the model answer is correct, that is, whether it agrees in meaning with the "
    "reference answer (wording, formatting and extra explanation do not matter). "
    "{instruction}"
)

BINARY_INSTRUCTIONS: dict[str, str] = {
    "0/1": "Reply with one character: 1 if the model answer is correct, 0 if it is not.",
    "1/0": "Reply with one character: 1 if the model answer is correct, 0 if it is not.",
    "yes/no": "Reply with one word: yes if the model answer is correct, no if it is not.",
    "Yes/No": "Reply with one word: Yes if the model answer is correct, No if it is not.",
    "true/false": "Reply with one word: true if the model answer is correct, false if it is not.",
    "correct/incorrect": "Reply with one word: correct or incorrect.",
}

SCORE_PROMPT = (
    "You are grading a model's answer to a question against a reference answer.\n\n"
    "Question: {question}\n"
    "Reference answer: {answer}\n"
    "Model answer: {prediction}\n\n"
    "Rate how correct and complete the model answer is on a scale from {min_score} (wrong) to "
    "{max_score} (fully correct). Reply with the line 'Score: N' first, optionally followed by a "
    "short justification."
)

COMPARATIVE_PROMPT = (
    "You are comparing two responses to the same question.\n\n"
    "{context_block}"
    "Question: {question}\n\n"
    "[Response 1]\n{response_a}\n[End of Response 1]\n\n"
    "[Response 2]\n{response_b}\n[End of Response 2]\n\n"
    "Rate the helpfulness, relevance, accuracy and level of detail of each response on a scale "
    "from {min_score} to {max_score}. On the first line write only the two scores, for Response 1 "
    "and Response 2, separated by a space. Then explain your rating briefly."
)


def fill(template: str, values: Mapping[str, object]) -> str:
    """Replace ``{name}`` for each name in ``values``; other braces are left as they are."""
    return _PLACEHOLDER.sub(
        lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template
    )


__all__ = ["BINARY_INSTRUCTIONS", "BINARY_PROMPT", "COMPARATIVE_PROMPT", "SCORE_PROMPT", "fill"]
