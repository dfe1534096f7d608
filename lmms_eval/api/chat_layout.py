"""The two layouts of chat ``generate_until`` requests, and which one a model takes.

* ``"guide"``: ``(doc_to_messages, gen_kwargs, doc_id, task, split)``, the model guide's layout
  and the one requests are built with;
* ``"published"``: ``(ctx, doc_to_messages, gen_kwargs, doc_id, task, split)``, the layout the
  published package sends. ``ctx`` is ``""`` here: the prompt is in ``doc_to_messages``
  (published chat models only sort by it).

A model class says which it takes with ``chat_request_layout``. When it does not, the layout is
read from the source of its ``generate_until``: a 6-name unpack with ``doc_to_messages`` second, or
with the generation kwargs third and ``doc_id, task, split`` last (``ctx, doc_to_messages,
gen_kwargs, doc_id, task, split = ...``), means published; anything else (the simple layout
``contexts, gen_kwargs, doc_to_visual, doc_id, task, split`` included) the guide's layout. A model that then fails to unpack its requests gets a
:class:`ChatLayoutError` naming both layouts and the attribute to set.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import logging
import re
import textwrap
import tokenize
from typing import Any, Literal

from lmms_eval.api.instance import Instance
from lmms_eval.errors import LmmsEvalError

logger = logging.getLogger(__name__)

ChatLayout = Literal["guide", "published"]
LAYOUT_FIELDS: dict[str, str] = {
    "guide": "(doc_to_messages, gen_kwargs, doc_id, task, split)",
    "published": "(ctx, doc_to_messages, gen_kwargs, doc_id, task, split)",
}
# request types whose chat requests have the 5-element layout (agentic ones have 7 for every model)
CHAT_LAYOUT_TYPES = ("generate_until", "generate_until_multi_round", "generate_visual_cot")
_UNPACK_ERROR = re.compile(r"(not enough|too many) values to unpack")


class ChatLayoutError(LmmsEvalError):
    """A chat model unpacks its requests with another layout than the one it was given."""


def chat_layout(model_cls: type[Any]) -> ChatLayout:
    """The layout ``model_cls`` takes: its ``chat_request_layout``, else read from its source."""
    declared = getattr(model_cls, "chat_request_layout", None)
    if declared is None:
        return _inferred(model_cls)
    if declared not in LAYOUT_FIELDS:
        raise ChatLayoutError(
            f"{model_cls.__name__}.chat_request_layout is {declared!r}; allowed: 'guide' "
            f"{LAYOUT_FIELDS['guide']} or 'published' {LAYOUT_FIELDS['published']}"
        )
    return declared


@functools.cache
def _inferred(model_cls: type[Any]) -> ChatLayout:
    method = getattr(model_cls, "generate_until", None)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):  # no source, or not parseable alone
        return "guide"
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Tuple) and len(target.elts) == 6:
                names = [e.id if isinstance(e, ast.Name) else "" for e in target.elts]
                if _published_names(names):
                    return "published"
    return "guide"


def _published_names(names: list[str]) -> bool:
    """A 6-name unpack of the published chat layout, not of the simple one
    ``(contexts, gen_kwargs, doc_to_visual, doc_id, task, split)``: generation kwargs third."""
    if names[1] == "doc_to_messages":
        return True
    return names[3:] == ["doc_id", "task", "split"] and "gen" in names[2] and "gen" not in names[1]


def as_layout(requests: list[Instance], layout: ChatLayout) -> list[Instance]:
    """``requests`` (built in the guide's layout) as the model of ``layout`` expects them."""
    if layout == "guide":
        return requests
    return [dataclasses.replace(r, arguments=("", *r.arguments)) for r in requests]


def layout_error(model_cls: type[Any], layout: ChatLayout, exc: ValueError) -> ChatLayoutError | None:
    """A :class:`ChatLayoutError` when ``exc`` is a failed unpack, else ``None``."""
    if not _UNPACK_ERROR.search(str(exc)):
        return None
    other = "published" if layout == "guide" else "guide"
    return ChatLayoutError(
        f"chat model {model_cls.__name__} could not unpack its requests ({exc}): it was given the "
        f"{layout} layout {LAYOUT_FIELDS[layout]}; if it expects {LAYOUT_FIELDS[other]}, set "
        f"`chat_request_layout = {other!r}` on the class (docs/model_guide.md, 'Instance.args layouts')"
    )
