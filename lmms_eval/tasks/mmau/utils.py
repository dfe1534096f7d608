"""MMAU test-mini: multiple-choice questions about sound, music and speech clips.

``choices`` is a JSON list of option texts and ``answer`` the text of the right one. The prompt
lists the options lettered ``A.``, ``B.``, ...; the letter the output commits to is read by
:func:`lmms_eval.scoring.choice.extract_mcq_answer` and compared with the answer's letter.
``accuracy`` is the percentage of right answers over all questions, as published.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from lmms_eval.api.prompts import format_options, option_letters, with_prompts
from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs  # noqa: F401 - used by the YAML

logger = logging.getLogger(__name__)


def choices(doc: dict[str, Any]) -> list[str]:
    """The option texts of a doc (``choices`` is a JSON list, or already a list)."""
    raw = doc["choices"]
    return [str(c) for c in (json.loads(raw) if isinstance(raw, str) else raw)]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(f"{doc['question']}\n{format_options(choices(doc))}", lmms_eval_specific_kwargs)


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    """One ``accuracy`` item ``{id, task, score}``: 1.0 when the letter found in the output is the
    answer's; an output with no letter it commits to is wrong."""
    options = choices(doc)
    letters = "".join(option_letters(len(options)))
    if doc["answer"] in options:
        gold: str | None = letters[options.index(doc["answer"])]
    else:
        gold = None
        logger.warning("mmau: the answer of question %s is none of its choices", doc.get("id"))
    predicted = extract_mcq_answer(results[0] if results else None, letters)
    score = float(gold is not None and predicted == gold)
    return {"accuracy": {"id": doc.get("id"), "task": doc.get("task"), "score": score}}


def mmau_accuracy(items: list[dict[str, Any]]) -> float:
    """The percentage of right answers over all questions."""
    return 100.0 * sum(item["score"] for item in items) / len(items) if items else 0.0
