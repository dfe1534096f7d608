"""HR-Bench 4K / 8K: questions on 4K and 8K images, four options in columns ``A``-``D``; the
published ``single`` (single-instance) and ``cross`` (cross-instance) scores and their ``average``.

Prompt (as published): the question, the options as ``A. ...`` lines, and
``"Answer the option letter directly."`` (the task kwargs are not used). The image is the base64
``image`` column. The answer is read by :func:`lmms_eval.scoring.circular.extract_choice` without
the article rule (a letter as a whole word, else the one option text the output holds); an output
it cannot resolve counts as wrong (the published task asks a GPT judge for those). Each score is the
mean over ``cycle_category`` of the accuracy in it (:func:`lmms_eval.scoring.choice.macro_mean`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import format_options, rgb, user_message
from lmms_eval.scoring.choice import macro_mean
from lmms_eval.scoring.circular import available_options, extract_choice

INSTRUCTION = "Answer the option letter directly."


def doc_to_options(doc: Mapping[str, Any]) -> dict[str, str]:
    return available_options(doc, "ABCD")


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> str:
    options = format_options(list(doc_to_options(doc).values()))
    return f"{doc['question']}\n{options}\n{INSTRUCTION}"


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_messages(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc))


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """``single`` or ``cross`` (by the doc's ``category``) and ``average``: the published items."""
    response = str(results[0]).strip() if results else ""
    letter = extract_choice(response, doc_to_options(doc), article_rule=False)
    item = {
        "index": doc["index"],
        "cycle_category": doc["cycle_category"],
        "gpt_score": int(letter == str(doc["answer"]).strip()),
        "prediction": letter,
    }
    return {str(doc["category"]): item, "average": item}


def aggregate(items: list[Mapping[str, Any]]) -> float:
    """The mean over ``cycle_category`` of the share answered right (0-1, as published)."""
    return macro_mean(items, "cycle_category", "gpt_score")


# The published package's names for these helpers: task YAMLs written for it reference them.
hrbench_doc_to_text = doc_to_text
hrbench_doc_to_visual = doc_to_visual
hrbench_process_results = process_results
