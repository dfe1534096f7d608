"""Helpers for benchmark tests (imported by the tests and by conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms

Answer = Callable[[str, dict[str, Any]], str]


class ScriptedModel(lmms):
    """Answers every request with ``answer(task, doc)`` and records what it was shown.

    ``chat=True`` makes it a chat model (requests carry ``doc_to_messages``); otherwise a simple
    model (requests carry the prompt text and ``doc_to_visual``). ``seen[task][doc_id]`` holds the
    messages (chat) or ``(text, visuals)`` (simple) of each request.
    """

    def __init__(self, answer: Answer, chat: bool = True) -> None:
        super().__init__()
        self.answer = answer
        self.is_simple = not chat
        self.seen: dict[str, dict[int, Any]] = {}

    def generate_until(self, requests: list[Instance]) -> list[str]:
        out = []
        for request in requests:
            if self.is_simple:
                text, _gen_kwargs, doc_to_visual, doc_id, task, split = request.args
                doc = self.task_dict[task][split][doc_id]
                shown: Any = (text, doc_to_visual(doc))
            else:
                doc_to_messages, _gen_kwargs, doc_id, task, split = request.args
                doc = self.task_dict[task][split][doc_id]
                shown = doc_to_messages(doc)
            self.seen.setdefault(task, {})[doc_id] = shown
            out.append(self.answer(task, doc))
        return out

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("the scripted model only generates")


def solid_image(colour: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (16, 16)) -> Any:
    """A small PIL image of one colour (distinct colours tell images apart in prompt checks)."""
    from PIL import Image

    return Image.new("RGB", size, colour)
