"""LLaVA-Bench (in-the-wild): the GPT-4 review of LLaVA-Bench, and its relative score.

The reviewer sees the image's caption(s) as context, the question, the reference answer (assistant
1, written by GPT-4) and the model's answer (assistant 2), and rates both from 1 to 10 on the first
line of its reply. A category's score is the mean model rating over the mean reference rating, times
100 (rounded to one decimal); unreadable reviews count as ratings of -1 for both, as published.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

JUDGE_MAX_TOKENS = 1024
UNREADABLE = (-1.0, -1.0)
CATEGORIES = ("conv", "detail", "complex")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")

RULE = (
    "We would like to request your feedback on the performance of two AI assistants in "
    "response to the user question displayed above. The user asks the question on observing "
    "an image. For your reference, the visual content in the image is represented with a few "
    "sentences describing the image. \n"
    "Please rate the helpfulness, relevance, accuracy, level of details of their responses. "
    "Each assistant receives an overall score on a scale of 1 to 10, where a higher score "
    "indicates better overall performance.\n"
    "Please first output a single line containing only two values indicating the scores for "
    "Assistant 1 and 2, respectively. The two scores are separated by a space.\n"
    "In the subsequent line, please provide a comprehensive explanation of your evaluation, "
    "avoiding any potential bias and ensuring that the order in which the responses were "
    "presented does not affect your judgment."
)


def context(caption: str | Sequence[str]) -> str:
    """The caption, or the captions one per line."""
    return caption if isinstance(caption, str) else "\n".join(str(c) for c in caption)


def judge_prompt(caption: str | Sequence[str], question: str, reference: str, prediction: str) -> str:
    return (
        f"[Context]\n{context(caption)}\n\n[Question]\n{question}\n\n"
        f"[Assistant 1]\n{reference}\n\n[End of Assistant 1]\n\n"
        f"[Assistant 2]\n{prediction}\n\n[End of Assistant 2]\n\n[System]\n{RULE}\n\n"
    )


def parse_scores(review: str | None) -> tuple[float, float]:
    """The first two numbers on the review's first line (reference, model); :data:`UNREADABLE`
    when it has fewer than two."""
    first_line = (review or "").split("\n")[0]
    numbers = _NUMBER.findall(first_line)
    if len(numbers) < 2:
        return UNREADABLE
    return float(numbers[0]), float(numbers[1])


def relative_score(items: Iterable[Mapping[str, Any]]) -> float:
    """``100 * mean(model ratings) / mean(reference ratings)``, rounded to one decimal (0.0 for none)."""
    pairs = [item["scores"] for item in items]
    if not pairs:
        return 0.0
    reference = sum(float(p[0]) for p in pairs) / len(pairs)
    model = sum(float(p[1]) for p in pairs) / len(pairs)
    return round(100.0 * model / reference, 1) if reference else 0.0
