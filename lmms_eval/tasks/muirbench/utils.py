"""MUIRBench: multi-image understanding, 2,600 questions over 2 to 9+ images each, lettered options.

Prompt (as published): ``pre_prompt`` + the question (its ``<image>`` tags kept) + the options as
``A. ...`` lines + ``post_prompt``; the images are ``image_list`` in order (chat models get them all
first, then the text).

``muirbench_score_overall`` is the published number: a letter and full stop starting the output
(``"B. the second"``) is the answer, else the whole output is, and it must equal the gold letter
apart from case and surrounding whitespace (``"(B)"`` and ``"The answer is B"`` are wrong).
``muirbench_score_overall_strict`` is ours (the shared letter reader).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import format_options, option_letters, rgb, user_message, with_prompts
from lmms_eval.scoring.choice import extract_mcq_answer

_LEADING_LETTER = re.compile(r"\s*([A-Z])\.")


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    return with_prompts(f"{doc['question']}\n{format_options(doc['options'])}", lmms_eval_specific_kwargs)


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    return [rgb(image) for image in doc.get("image_list") or [] if image is not None]


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def published_answer(response: str) -> str:
    """The published reading: the letter of a leading ``"B."``, else the whole output."""
    match = _LEADING_LETTER.match(response)
    return match.group(1) if match else response


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    response = str(results[0]) if results else ""
    gold = str(doc["answer"]).strip()
    pred = published_answer(response)
    strict = extract_mcq_answer(response, "".join(option_letters(len(doc["options"])))) or ""
    item = {
        "idx": doc.get("idx"),
        "task": doc.get("task"),
        "image_relation": doc.get("image_relation"),
        "image_type": doc.get("image_type"),
        "answer": gold,
    }
    return {
        "muirbench_score_overall": {**item, "pred": pred, "score": pred.strip().lower() == gold.lower()},
        "muirbench_score_overall_strict": {**item, "pred": strict, "score": strict == gold.upper()},
    }


def aggregate(items: list[Mapping[str, Any]]) -> float:
    """The share of questions answered right (0-1, as published)."""
    return sum(bool(item["score"]) for item in items) / len(items) if items else float("nan")
