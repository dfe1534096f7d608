"""AI2D: prompt building; scoring is the ``leading_letter`` filter plus built-in ``exact_match``."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import format_options, rgb, user_message, with_prompts
from lmms_eval.scoring.choice import index_to_letter

POST_PROMPT = "\nAnswer with the option's letter from the given choices directly."


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """``{question}\\nA. ...\\nB. ...`` between the pre- and post-prompt."""
    text = f"{doc['question']}\n{format_options(doc['options'])}"
    return with_prompts(text, lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def doc_to_target(doc: dict[str, Any]) -> str:
    """The gold letter: ``answer`` is the option's 0-based index as a string ("0"-"3")."""
    return index_to_letter(doc["answer"], len(doc["options"]))


# The published package's names for these helpers: task YAMLs written for it reference them.
ai2d_doc_to_target = doc_to_target
ai2d_doc_to_text = doc_to_text
ai2d_doc_to_visual = doc_to_visual
