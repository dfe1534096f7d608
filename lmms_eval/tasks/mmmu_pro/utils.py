"""MMMU-Pro tasks: the standard (10 options), vision and composite settings and their CoT prompts.

Prompts (as published): the standard setting gives the question, the options as ``A. ...`` lines, a
blank line and the ``post_prompt`` (the ``pre_prompt`` is not used); the images are the
``image_k`` that the question or the options mention as ``<image k>``, in the order of ``k``, and the
tags stay in the text. The vision and composite settings give the one screenshot ``image`` and an
instruction only. Chat models get the images first, then the text (the published tasks are not
interleaved).

Scoring: :mod:`lmms_eval.scoring.mmmu_pro`. ``mmmu_acc`` is the published number (rounded to 5
decimals, as published); ``mmmu_acc_strict`` is ours: the shared letter reader, no random letter,
and in the vision setting the letter read from the output rather than the whole output.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from lmms_eval.api.prompts import format_options, rgb, user_message
from lmms_eval.scoring import mmmu, mmmu_pro

ACC_DECIMALS = 5
_IMAGE_TAG = re.compile(r"<image (\d+)>")


def _options(doc: Mapping[str, Any]) -> list[str]:
    return mmmu.parse_options(doc["options"])


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """Standard setting: question, lettered options, a blank line, ``post_prompt``."""
    post = str((lmms_eval_specific_kwargs or {}).get("post_prompt") or "")
    return f"{doc['question']}\n{format_options(_options(doc))}\n\n{post}"


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    """Standard setting: the ``image_k`` mentioned as ``<image k>`` in the question or the options
    (each once, in the order of ``k``)."""
    mentioned = _IMAGE_TAG.findall(f"{doc['question']} {doc['options']}")
    numbers = sorted({int(k) for k in mentioned})
    images = [doc.get(f"image_{k}") for k in numbers]
    return [rgb(image) for image in images if image is not None]


def doc_to_visual_screenshot(doc: Mapping[str, Any]) -> list[Any]:
    """The vision and composite settings' one screenshot ``image``."""
    image = doc.get("image")
    return [] if image is None else [rgb(image)]


def doc_to_text_vision(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    """Vision setting: the ``post_prompt`` alone (the question is in the screenshot)."""
    return str((lmms_eval_specific_kwargs or {}).get("post_prompt") or "")


def doc_to_messages_vision(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual_screenshot(doc), doc_to_text_vision(doc, lmms_eval_specific_kwargs))


def doc_to_messages_vision_cot(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual_screenshot(doc), VISION_COT_PROMPT)


def doc_to_messages_composite(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual_screenshot(doc), COMPOSITE_PROMPT)


def doc_to_messages_composite_cot(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None
) -> list[dict[str, Any]]:
    """``mmmu_pro_composite_cot``: the standard configuration's images, the composite CoT prompt."""
    return user_message(doc_to_visual(doc), COMPOSITE_COT_PROMPT)


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def _fixed_text(text: str) -> Callable[..., str]:
    """A ``doc_to_text`` that gives ``text`` for every document."""

    def doc_to_fixed_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> str:
        return text

    return doc_to_fixed_text


VISION_COT_PROMPT = (
    "Write out the multiple-choice question in the image and then solve it. The last line of your "
    "response should be of the following format: 'Answer: $LETTER' (without quotes) where LETTER is "
    "one of options. Think step by step before answering."
)
COMPOSITE_PROMPT = (
    "Answer with the option letter for each multiple choice question from the given choices directly. "
    "For each question, the last line of your response should be in the following format: "
    "'No: [id]\nAnswer: [LETTER]' (without quotes) where LETTER is one of options."
)
COMPOSITE_COT_PROMPT = (
    "Write out all the multiple-choice questions in the image and then solve it. For each question, "
    "the last line of your response should be in the following format: 'No: [id]\nAnswer: [LETTER]' "
    "(without quotes) where LETTER is one of options. Think step by step before answering each question."
)
doc_to_text_vision_cot = _fixed_text(VISION_COT_PROMPT)
doc_to_text_composite = _fixed_text(COMPOSITE_PROMPT)
doc_to_text_composite_cot = _fixed_text(COMPOSITE_COT_PROMPT)


def _scores(doc: Mapping[str, Any], response: str, parsed: str, drawn: bool) -> dict[str, Any]:
    options = _options(doc)
    strict = mmmu_pro.strict_choice(response, max(len(options), 1))
    return {
        "mmmu_acc": float(parsed == str(doc["answer"])),
        "mmmu_acc_strict": float(strict == str(doc["answer"]).strip()),
        "parsed_pred": parsed,
        "random_letter": drawn,
        "subject": doc.get("subject"),
    }


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """Standard setting: ``mmmu_acc`` (published: the published letter rule, a random letter when it
    finds none) and ``mmmu_acc_strict`` (ours: the shared letter reader)."""
    response = str(results[0]) if results else ""
    parsed, drawn = mmmu_pro.published_choice(response, _options(doc))
    return _scores(doc, response, parsed, drawn)


def process_results_vision(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """Vision setting: ``mmmu_acc`` (published: the whole output must equal the gold letter) and
    ``mmmu_acc_strict`` (ours: the shared letter reader)."""
    response = str(results[0]) if results else ""
    return _scores(doc, response, response, False)


def process_composite(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """``mmmu_acc``: the share of the screenshot's questions whose letter is right (the letters are
    the output's standalone capitals in order). No strict key: the rule has no fallback to differ on."""
    gold = mmmu_pro.composite_gold(doc["answer"])
    parsed = mmmu_pro.composite_letters(str(results[0]) if results else "", len(gold))
    return {"mmmu_acc": mmmu_pro.composite_score(parsed, gold), "parsed_pred": parsed}


def aggregate_accuracy(items: list[float]) -> float:
    """The mean score rounded to 5 decimals, as the published package reports ``mmmu_acc``."""
    return round(sum(items) / len(items), ACC_DECIMALS) if items else float("nan")


# The published package's names for these helpers: task YAMLs written for it reference them.
mmmu_pro_composite_process_results = process_composite
mmmu_pro_doc_to_text = doc_to_text
mmmu_pro_doc_to_visual = doc_to_visual
mmmu_pro_process_results = process_results
