"""MMMU tasks: prompts with the ``<image k>`` images in place, scoring by :mod:`lmms_eval.scoring.mmmu`.

Prompt: the question, then (multiple choice) the options as ``A. ...`` lines, a blank line and
"Answer with the option's letter from the given choices directly." (open questions: "Answer the
question using a single word or phrase."). Simple models get the text with its ``<image k>`` tags
and the referenced images in order of first mention; chat models get the images in place of the tags.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.api.prompts import format_options, interleaved_message, rgb, with_prompts
from lmms_eval.scoring import mmmu

logger = logging.getLogger(__name__)

MULTIPLE_CHOICE_PROMPT = "Answer with the option's letter from the given choices directly."
OPEN_ENDED_PROMPT = "Answer the question using a single word or phrase."
_IMAGE_TAG = re.compile(r"<image (\d+)>")


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    if doc["question_type"] == "multiple-choice":
        options = format_options(mmmu.parse_options(doc["options"]))
        instruction = kwargs.get("multiple_choice_prompt", MULTIPLE_CHOICE_PROMPT)
        body = f"{doc['question']}\n{options}\n\n{instruction}"
    else:
        body = f"{doc['question']}\n\n{kwargs.get('open_ended_prompt', OPEN_ENDED_PROMPT)}"
    return with_prompts(body, kwargs)


def _images(doc: Mapping[str, Any], text: str) -> dict[str, Any]:
    """``{"k": image_k}`` for each ``<image k>`` the text mentions, in order of first mention."""
    images: dict[str, Any] = {}
    for number in _IMAGE_TAG.findall(text):
        image = doc.get(f"image_{number}")
        if number in images:
            continue
        if image is None:
            logger.warning("MMMU %s mentions <image %s> but has no image_%s", doc.get("id"), number, number)
            continue
        images[number] = rgb(image)
    return images


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    return list(_images(doc, doc_to_text(doc)).values())


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    text = doc_to_text(doc, lmms_eval_specific_kwargs)
    return interleaved_message(text, _images(doc, text))


ACC_DECIMALS = 5  # the published aggregation rounds mmmu_acc to 5 decimals


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """``mmmu_acc`` (1.0/0.0, the published rule: a random letter when no option is found) and
    ``mmmu_acc_<discipline>`` of the doc's discipline, ``mmmu_acc_strict`` (our rule: no random
    letter, such an answer is wrong), plus what the published task logs with each sample (not
    aggregated): ``mmmu_acc_pass_at_k`` (with one answer per question, the same 1.0/0.0),
    ``submission`` (``{id: answer}``, the answer as :func:`process_test_results` writes it) and
    the parsed prediction."""
    options = mmmu.parse_options(doc["options"])
    response = str(results[0])
    correct, parsed = mmmu.score(doc["question_type"], doc["answer"], response, options, published=True)
    strict, _ = mmmu.score(doc["question_type"], doc["answer"], response, options)
    domain = mmmu.domain_of(mmmu.subject_of(doc["id"]))
    value = 1.0 if correct else 0.0
    return {
        "mmmu_acc": value,
        "mmmu_acc_strict": 1.0 if strict else 0.0,
        f"mmmu_acc_{mmmu.domain_key(domain)}": value,
        "mmmu_acc_pass_at_k": value,
        "submission": {str(doc["id"]): _submitted_answer(doc, str(results[0]))},
        "parsed_pred": parsed,
    }


def aggregate_accuracy(items: list[float]) -> float:
    """``mmmu_acc``: the accuracy rounded to 5 decimals, as the published package reports it."""
    return round(sum(items) / len(items), ACC_DECIMALS) if items else float("nan")


def _submitted_answer(doc: Mapping[str, Any], response: str) -> str:
    """The option letter for multiple choice ("" when none parses), the stripped response for
    open questions."""
    if doc["question_type"] == "multiple-choice":
        return mmmu.parse_choice(response, mmmu.parse_options(doc["options"])) or ""
    return response.strip()


def process_test_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """The submission entry ``{"id", "answer"}`` (the answer as :func:`_submitted_answer` reads it)."""
    return {"submission": {"id": doc["id"], "answer": _submitted_answer(doc, str(results[0]))}}


def write_submission(items: list[dict[str, Any]], context: AggregationContext) -> None:
    """Write ``mmmu_test_for_submission.json`` (``{id: answer}``); no score (answers are hidden)."""
    context.write_json("mmmu_test_for_submission.json", {item["id"]: item["answer"] for item in items})
    return None


# The published package's names for these helpers: task YAMLs written for it reference them.
mmmu_doc_to_messages = doc_to_messages
mmmu_doc_to_text = doc_to_text
mmmu_doc_to_visual = doc_to_visual
mmmu_process_results = process_results
