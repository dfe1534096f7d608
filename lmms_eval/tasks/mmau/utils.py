"""MMAU test-mini: multiple-choice questions about sound, music and speech clips.

``choices`` is a JSON list of option texts and ``answer`` the text of the right one. The prompt
lists the options lettered ``A.``, ``B.``, ...; ``accuracy`` is the percentage of right answers
over all questions by the published rule, ``accuracy_strict`` by ours (see :func:`process_results`).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from lmms_eval.api.prompts import format_options, option_letters, with_prompts
from lmms_eval.scoring import mmmu
from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs  # noqa: F401 - used by the YAML

logger = logging.getLogger(__name__)


def choices(doc: dict[str, Any]) -> list[str]:
    """The option texts of a doc (``choices`` is a JSON list, or already a list)."""
    raw = doc["choices"]
    return [str(c) for c in (json.loads(raw) if isinstance(raw, str) else raw)]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(f"{doc['question']}\n{format_options(choices(doc))}", lmms_eval_specific_kwargs)


ACCURACY_DECIMALS = 5  # the published aggregation rounds accuracy to 5 decimals


def _gold_letter(doc: dict[str, Any], options: list[str], letters: str) -> str | None:
    """The letter of the option equal to the gold after ``strip().lower()`` on both sides (as
    published: a gold with upper case or a trailing space still matches its option)."""
    gold = str(doc["answer"]).strip().lower()
    for letter, option in zip(letters, options):
        if option.strip().lower() == gold:
            return letter
    logger.warning("mmau: the answer of question %s is none of its choices", doc.get("id"))
    return None


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    """``accuracy`` and ``accuracy_strict`` items ``{id, task, score}``.

    ``accuracy`` (published rule): the MMMU letter parser (:func:`lmms_eval.scoring.mmmu.parse_choice`)
    picks an option, a random one from the seeded published-fallback stream when it finds none,
    and the option's text is compared with the gold after ``strip().lower()``.
    ``accuracy_strict`` (ours): the letter :func:`lmms_eval.scoring.choice.extract_mcq_answer`
    finds ("b" is B, "A cat ..." is no answer), no random letter: no letter scores 0.
    """
    options = choices(doc)
    letters = "".join(option_letters(len(options)))
    gold = _gold_letter(doc, options, letters)
    response = str(results[0]) if results and results[0] is not None else ""
    published = mmmu.published_choice(response, options)
    strict = extract_mcq_answer(response, letters)
    item = {"id": doc.get("id"), "task": doc.get("task")}
    return {
        "accuracy": {**item, "score": float(gold is not None and published == gold)},
        "accuracy_strict": {**item, "score": float(gold is not None and strict == gold)},
    }


def mmau_accuracy(items: list[dict[str, Any]]) -> float:
    """The percentage of right answers over all questions, rounded to 5 decimals (as published)."""
    if not items:
        return 0.0
    return round(100.0 * sum(item["score"] for item in items) / len(items), ACCURACY_DECIMALS)


# The published package's names for these helpers: task YAMLs written for it reference them.
doc_to_audio = doc_to_visual
mmau_process_results = process_results
