"""ScienceQA: prompts (with the hint as context) and the letter-or-leading-letter rule."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import format_options, is_missing, rgb, user_message, with_prompts
from lmms_eval.scoring.choice import index_to_letter, letter_or_leading_letter_match

POST_PROMPT = "\nAnswer with the option's letter from the given choices directly."


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The image, or nothing for the text-only questions (``image`` is None)."""
    image = doc.get("image")
    return [] if image is None else [rgb(image)]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """``Context: {hint}\\n`` (only when there is a hint), the question, then ``A. ...`` lines."""
    hint = doc.get("hint")
    context = "" if is_missing(hint) else f"Context: {hint}\n"
    text = f"{context}{doc['question']}\n{format_options(doc['choices'])}"
    return with_prompts(text, lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def doc_to_target(doc: dict[str, Any]) -> str:
    """The gold letter (``answer`` is the 0-based index of the right choice)."""
    return index_to_letter(doc["answer"], len(doc["choices"]))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """1.0 when the output is the letter, or starts with ``"<letter>."``; otherwise 0.0."""
    return {"exact_match": float(letter_or_leading_letter_match(results[0], doc_to_target(doc)))}


# The published package's names for these helpers: task YAMLs written for it reference them.
sqa_doc_to_target = doc_to_target
sqa_doc_to_text = doc_to_text
sqa_doc_to_visual = doc_to_visual
sqa_process_results = process_results
