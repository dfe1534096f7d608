"""SEED-Bench: four lettered choices; the first character of the output is the answer."""

from __future__ import annotations

import logging
from typing import Any

from lmms_eval.api.prompts import format_options, rgb, user_message, with_prompts
from lmms_eval.scoring.choice import first_char_match

logger = logging.getLogger(__name__)

POST_PROMPT = "\nAnswer with the option's letter from the given choices directly."
CHOICE_FIELDS = ("choice_a", "choice_b", "choice_c", "choice_d")
DATA_TYPES = ("image", "video")


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The images of ``image`` (a list: one image, or a video's frames)."""
    images = doc["image"]
    if not isinstance(images, list):
        images = [] if images is None else [images]
    return [rgb(image) for image in images]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """``{question}\\nA. ...\\nB. ...\\nC. ...\\nD. ...`` between the pre- and post-prompt."""
    options = format_options([doc[field] for field in CHOICE_FIELDS])
    return with_prompts(f"{doc['question']}\n{options}", lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``seed_<data_type>`` and ``seed_all``: 1.0 when the output's first character is the answer.

    A doc of another data type counts in ``seed_all`` only (with a warning).
    """
    score = float(first_char_match(results[0], doc["answer"]))
    data_type = doc.get("data_type")
    if data_type not in DATA_TYPES:
        logger.warning(
            "seedbench: question %s has data_type %r (expected image or video); counted in seed_all only",
            doc.get("question_id"),
            data_type,
        )
        return {"seed_all": score}
    return {f"seed_{data_type}": score, "seed_all": score}


# The published package's names for these helpers: task YAMLs written for it reference them.
seed_doc_to_text = doc_to_text
seed_doc_to_visual = doc_to_visual
seed_process_result = process_results
