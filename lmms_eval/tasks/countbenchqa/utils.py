"""CountBenchQA: counting objects (2 to 10) in images whose caption states the count.

The prompt is the image's caption, a blank line, then the question. ``acc`` (published) is 1.0 when
the stripped answer is exactly the number; ``acc_number`` (ours, beside it) reads the first number
in the answer, written in digits or as an English word ("There are 3 dogs.", "Three.").
"""

from __future__ import annotations

import re
from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts

POST_PROMPT = "\nAnswer with a single number."
NUMBER_WORDS = {
    word: index
    for index, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
_COUNT = re.compile(r"\b(\d+|" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(f"{doc['text']}\n\n{doc['question']}", lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def first_count(text: str) -> int | None:
    """The first number in ``text``, in digits or as an English word up to twelve."""
    match = _COUNT.search(text)
    if match is None:
        return None
    token = match.group(1).lower()
    return int(token) if token.isdigit() else NUMBER_WORDS[token]


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    answer = str(results[0] or "")
    gold = int(doc["number"])
    return {
        "acc": float(answer.strip() == str(gold)),
        "acc_number": float(first_count(answer) == gold),
    }


# The published package's names for these helpers: task YAMLs written for it reference them.
countbenchqa_doc_to_text = doc_to_text
countbenchqa_doc_to_visual = doc_to_visual
countbenchqa_process_results = process_results
