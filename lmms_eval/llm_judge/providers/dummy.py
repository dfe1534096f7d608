"""``dummy`` judge: deterministic verdicts without a model or network, for tests and dry runs.

Verdicts come from the request's ``metadata`` (filled by the ``evaluate_*`` methods):

* ``mode="contains"`` (default): correct when the normalised prediction contains the normalised
  reference answer as whole words (lower case, punctuation and articles removed; articles are
  kept when the answer is one, as the option "A" is);
* ``mode="exact"``: correct when both normalise to the same text;
* ``mode="always_correct"`` / ``"always_wrong"``.

Binary requests get ``"1"``/``"0"`` (or the ``output_format``'s words), score requests
``"Score: N"`` with N the maximum or minimum, comparative requests ``"a b"`` where a response
scores the maximum when it contains the other's normalised text or is the first response.
``reply`` replaces all of this with a fixed text (to exercise reply parsing); requests without
metadata get ``reply`` or ``"1"``. ``latency_s`` sleeps per call; ``fail=True`` makes every call
fail. The dummy replies go through the same caching, batching and parsing as real providers.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Literal

from lmms_eval.llm_judge.base import JudgeServer, ProviderReply
from lmms_eval.llm_judge.cache import JudgeCache
from lmms_eval.llm_judge.config import ServerConfig
from lmms_eval.llm_judge.parsing import binary_labels
from lmms_eval.llm_judge.types import Request

DummyMode = Literal["contains", "exact", "always_correct", "always_wrong"]
DUMMY_MODES: tuple[str, ...] = ("contains", "exact", "always_correct", "always_wrong")

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_NON_WORD = re.compile(r"[^\w\s]")


def normalise_text(value: Any, drop_articles: bool = True) -> str:
    """Lower case, punctuation (and English articles, unless ``drop_articles`` is false) removed,
    whitespace collapsed."""
    text = _NON_WORD.sub(" ", str(value).lower())
    if drop_articles:
        text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


class DummyJudge(JudgeServer):
    """Deterministic judge; see the module docstring."""

    name = "dummy"

    def __init__(
        self,
        config: ServerConfig | None = None,
        cache: JudgeCache | None = None,
        mode: DummyMode = "contains",
        reply: str | None = None,
        latency_s: float = 0.0,
        fail: bool = False,
    ) -> None:
        if mode not in DUMMY_MODES:
            raise ValueError(f"dummy judge: unknown mode {mode!r}; use one of {', '.join(DUMMY_MODES)}")
        super().__init__(config, cache)
        self.mode = mode
        self.reply = reply
        self.latency_s = float(latency_s)
        self.fail = bool(fail)
        self.calls = 0
        self._calls_lock = threading.Lock()

    def _correct(self, answer: Any, prediction: Any) -> bool:
        if self.mode == "always_correct":
            return True
        if self.mode == "always_wrong":
            return False
        gold, pred = normalise_text(answer), normalise_text(prediction)
        if not gold:  # the answer is an article itself (e.g. the option "A"): keep articles
            gold, pred = normalise_text(answer, False), normalise_text(prediction, False)
        if self.mode == "exact":
            return gold == pred
        return bool(gold) and f" {gold} " in f" {pred} "

    def _answer(self, metadata: dict[str, Any]) -> str:
        kind = metadata.get("kind")
        if kind == "binary":
            positive, negative = binary_labels(str(metadata.get("output_format", "0/1")))
            return positive if self._correct(metadata.get("answer"), metadata.get("prediction")) else negative
        if kind == "score":
            correct = self._correct(metadata.get("answer"), metadata.get("prediction"))
            return f"Score: {metadata['max_score'] if correct else metadata['min_score']}"
        if kind == "comparative":
            a, b = metadata.get("response_a"), metadata.get("response_b")
            high, low = metadata["max_score"], metadata["min_score"]
            score_b = high if self._correct(a, b) else low
            return f"{high} {score_b}"
        return "1"

    def payload(self, request: Request) -> dict[str, Any]:
        """The base payload plus the dummy's settings and the request metadata (they decide its reply)."""
        settings = {"mode": self.mode, "reply": self.reply, "fail": self.fail, "metadata": request.metadata}
        return {**super().payload(request), "dummy": settings}

    def _invoke(self, request: Request) -> ProviderReply:
        started = time.perf_counter()
        with self._calls_lock:
            self.calls += 1
        if self.latency_s:
            time.sleep(self.latency_s)
        if self.fail:
            raise RuntimeError("dummy judge configured to fail (fail=True)")
        text = self.reply if self.reply is not None else self._answer(request.metadata)
        return ProviderReply(text=text, latency_s=time.perf_counter() - started, attempts=1)


__all__ = ["DUMMY_MODES", "DummyJudge", "normalise_text"]
