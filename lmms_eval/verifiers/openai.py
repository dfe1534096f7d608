"""``OpenAIVerifier``: an LLM judge (any OpenAI-compatible endpoint) decides, via :mod:`lmms_eval.llm_judge`."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from lmms_eval.llm_judge.parsing import parse_binary_verdict, parse_score
from lmms_eval.verifiers.base import Verifier, VerifyResult

logger = logging.getLogger(__name__)

DEFAULT_PROMPT = (
    "Question: {question}\nReference answer: {ground_truth}\nModel answer: {prediction}\n\n"
    "Is the model answer correct? Reply with Yes or No."
)


def parse_binary_response(text: str) -> bool:
    """``True`` when a judge's reply says correct (yes, 1, true, correct, ``[[1]]``), else ``False``."""
    return parse_binary_verdict(str(text)) is True


class OpenAIVerifier(Verifier):
    """Asks a judge model whether the prediction is right.

    ``custom_prompt`` is a format string with ``{question}``, ``{prediction}``, ``{ground_truth}``
    or a function of those keyword arguments. With ``response_format="binary"`` the reply is read as
    yes/no (score 1 or 0); with ``"score"`` as a number in ``score_range`` (correct above its
    midpoint). ``response_parser`` overrides both. ``api_type`` picks the judge provider (default env
    ``API_TYPE``, else ``openai``); endpoint and key come from the usual environment variables.
    A failed call gives score 0, ``is_correct=False`` and the error in the metadata.
    """

    def __init__(
        self,
        model: str = "gpt-4o-2024-11-20",
        api_type: str | None = None,
        judge_type: str = "binary",
        custom_prompt: str | Callable[..., str] | None = None,
        response_format: str = "binary",
        response_parser: Callable[[str], Any] | None = None,
        score_range: tuple[float, float] = (0.0, 10.0),
        max_retries: int = 5,
        retry_delay: float = 2.0,
        temperature: float = 0.0,
        max_tokens: int = 1024,
    ) -> None:
        from lmms_eval.llm_judge import ServerConfig, get_server

        self.judge_type = judge_type
        self.custom_prompt = custom_prompt
        self.response_format = response_format
        self.response_parser = response_parser
        self.score_range = score_range
        config = ServerConfig(
            model_name=model,
            temperature=temperature,
            max_tokens=max_tokens,
            max_retries=max_retries,
            retry_backoff_s=retry_delay,
        )
        self.server = get_server(api_type or os.environ.get("API_TYPE") or None, config)

    def prompt(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> str:
        fields = {"question": question, "prediction": prediction, "ground_truth": ground_truth, **kwargs}
        if callable(self.custom_prompt):
            return self.custom_prompt(**fields)
        return (self.custom_prompt or DEFAULT_PROMPT).format(**fields)

    def verify(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> VerifyResult:
        from lmms_eval.llm_judge import Request

        response = self.server.complete(
            Request.from_prompt(self.prompt(question, prediction, ground_truth, **kwargs))
        )
        if not response.success or response.content is None:
            return VerifyResult(0.0, False, "", {"error": response.error, "confident": False})
        return self._read(response.content)

    def _read(self, reply: str) -> VerifyResult:
        if self.response_parser is not None:
            parsed = self.response_parser(reply)
            score = float(parsed)
            return VerifyResult(score, bool(parsed), reply, {"confident": True})
        if self.response_format == "score":
            low, high = self.score_range
            value = parse_score(reply, low, high)
            if value is None:
                return VerifyResult(0.0, False, reply, {"confident": False})
            return VerifyResult(float(value), value > (low + high) / 2, reply, {"confident": True})
        correct = parse_binary_response(reply)
        return VerifyResult(float(correct), correct, reply, {"confident": True})
