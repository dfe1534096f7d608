"""Prompt building blocks shared by task folders: option lists, pre/post prompts, chat messages.

Tasks build one prompt text and one list of visuals per doc; ``doc_to_text`` / ``doc_to_visual``
hand them to simple models and ``doc_to_messages`` to chat models, so both kinds of model see the
same prompt::

    def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
        return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.media.image import load_image

LETTERS = string.ascii_uppercase


def option_letters(n: int) -> list[str]:
    """``["A", "B", ...]`` for ``n`` options."""
    if not 0 <= n <= len(LETTERS):
        raise ValueError(f"cannot letter {n} options (at most {len(LETTERS)})")
    return list(LETTERS[:n])


def format_options(options: Sequence[Any], separator: str = ". ", joiner: str = "\n") -> str:
    """``"A. first\\nB. second"``: options lettered in order."""
    return joiner.join(f"{letter}{separator}{option}" for letter, option in zip(LETTERS, options))


def with_prompts(text: str, kwargs: Mapping[str, Any] | None, default_post: str = "") -> str:
    """``pre_prompt + text + post_prompt`` from a task's ``lmms_eval_specific_kwargs``."""
    kwargs = kwargs or {}
    pre = kwargs.get("pre_prompt") or ""
    post = kwargs.get("post_prompt", default_post)
    return f"{pre}{text}{post or ''}"


def is_missing(value: Any) -> bool:
    """Empty cells of Hub tables: None, NaN, and the strings "", "nan", "none"."""
    if value is None:
        return True
    if isinstance(value, float):
        return value != value  # NaN
    return isinstance(value, str) and value.strip().lower() in ("", "nan", "none")


def rgb(image: Any) -> Any:
    """An image in RGB (palette, RGBA and grey images are converted): :func:`lmms_eval.media.load_image`,
    so paths, bytes and ``{"bytes", "path"}`` dicts are read too."""
    return load_image(image)


def user_message(visuals: Sequence[Any], text: str) -> list[dict[str, Any]]:
    """One user turn: the visuals first, then the text."""
    content: list[dict[str, Any]] = [{"type": "image", "url": v} for v in visuals]
    content.append({"type": "text", "text": text})
    return [{"role": "user", "content": content}]


def interleaved_message(
    text: str, images: Mapping[str, Any], tag: str = r"<image (\d+)>"
) -> list[dict[str, Any]]:
    """One user turn with each image placed where ``text`` refers to it (``<image 1>`` ...).

    ``images`` maps the number in the tag to the image. Tags without an image stay in the text;
    a tag used twice shows its image once, at the first mention.
    """
    content: list[dict[str, Any]] = []
    shown: set[str] = set()
    position = 0
    for match in re.finditer(tag, text):
        key = match.group(1)
        if key not in images or key in shown:
            continue
        before = text[position : match.start()]
        if before.strip():
            content.append({"type": "text", "text": before})
        content.append({"type": "image", "url": images[key]})
        shown.add(key)
        position = match.end()
    rest = text[position:]
    if rest.strip() or not content:
        content.append({"type": "text", "text": rest})
    return [{"role": "user", "content": content}]


# -- ready-made doc_to_* functions for the common "one image and a question" layout ---------------
# Reference them from a task YAML, e.g. ``doc_to_text: !function lmms_eval.api.prompts.doc_question``.


def doc_image(doc: Mapping[str, Any]) -> list[Any]:
    """``doc_to_visual``: the doc's ``image`` in RGB (none when the field is empty or missing)."""
    image = doc.get("image")
    return [] if image is None else [rgb(image)]


def doc_question(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """``doc_to_text``: ``pre_prompt + question + post_prompt`` (the question stripped)."""
    return with_prompts(str(doc["question"]).strip(), lmms_eval_specific_kwargs)


def doc_image_question(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """``doc_to_messages``: one user turn with :func:`doc_image` then :func:`doc_question`."""
    return user_message(doc_image(doc), doc_question(doc, lmms_eval_specific_kwargs))
