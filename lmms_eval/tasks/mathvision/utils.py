"""MathVision tasks: the published step-by-step prompt, scoring by :mod:`lmms_eval.scoring.mathvision`.

Prompt: ``Please solve the problem step by step and put your answer in one "\\boxed{}".`` followed
directly by the question; a question with options adds ``\\nChoices: `` and the options as
``A. ...`` lines, then a line with ``mc_prompt``. The image is ``decoded_image``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import format_options, rgb, user_message
from lmms_eval.scoring import mathvision

SOLUTION_PROMPT = 'Please solve the problem step by step and put your answer in one "\\boxed{}".'
SCORE_DECIMALS = 2


def _options(doc: Mapping[str, Any]) -> list[str]:
    return [str(option) for option in doc.get("options") or []]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    text = f"{SOLUTION_PROMPT}{doc['question']}"
    options = _options(doc)
    if options:
        text += f"\nChoices: {format_options(options)}"
        instruction = (lmms_eval_specific_kwargs or {}).get("mc_prompt")
        if instruction:
            text += f"\n{instruction}"
    return text


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    image = doc.get("decoded_image")
    return [] if image is None else [rgb(image)]


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """``mathvision_standard_eval``: 1.0 when the answer is right (see the scoring module)."""
    response = str(results[0]) if results else ""
    correct = mathvision.is_correct(response, _options(doc), str(doc["answer"]))
    return {"mathvision_standard_eval": 1.0 if correct else 0.0}


def aggregate_percent(items: list[float]) -> float:
    """The accuracy as a percentage rounded to 2 decimals, as the published aggregation reports it."""
    return round(100 * sum(items) / len(items), SCORE_DECIMALS) if items else float("nan")


# The published package's names for these helpers: task YAMLs written for it reference them.
mathvision_doc_to_text = doc_to_text
mathvision_doc_to_visual = doc_to_visual
mathvision_process_results = process_results
