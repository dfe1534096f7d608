"""``JudgeServer``: caching, concurrency, prompts and verdict parsing shared by all providers.

A provider implements :meth:`JudgeServer._invoke` (one call, raising on failure) and may replace
:meth:`JudgeServer._invoke_many` (the default runs calls on a thread pool of
``config.num_concurrent`` workers). Everything else - building the prompt, the cache lookup and
store, de-duplicating identical requests in a batch, parsing the verdict, and turning failures into
``success: False`` results - lives here.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from lmms_eval.llm_judge.cache import JudgeCache, cache_key
from lmms_eval.llm_judge.config import ServerConfig
from lmms_eval.llm_judge.parsing import binary_labels, parse_binary, parse_score, parse_score_pair
from lmms_eval.llm_judge.prompts import (
    BINARY_INSTRUCTIONS,
    BINARY_PROMPT,
    COMPARATIVE_PROMPT,
    SCORE_PROMPT,
    fill,
)
from lmms_eval.llm_judge.types import JudgeResponse, JudgeResult, Request

logger = logging.getLogger(__name__)

_BINARY_KEYS = frozenset({"question", "answer", "prediction", "output_format", "custom_prompt", "images"})
_SCORE_KEYS = frozenset(
    {"question", "answer", "prediction", "min_score", "max_score", "custom_prompt", "images"}
)
_COMPARATIVE_KEYS = frozenset(
    {"question", "response_a", "response_b", "context", "min_score", "max_score", "custom_prompt", "images"}
)


@dataclass(frozen=True)
class ProviderReply:
    """A successful provider call."""

    text: str
    latency_s: float = 0.0
    attempts: int = 1
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class ProviderFailure:
    """A provider call that failed after the provider's own retries."""

    error: str
    latency_s: float = 0.0
    attempts: int = 1


Outcome = ProviderReply | ProviderFailure


def describe_error(exc: BaseException) -> str:
    """``"TypeName: message"`` (message cut to 500 characters)."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message[:500]}" if message else type(exc).__name__


class JudgeServer(abc.ABC):
    """Base class of judge providers; see the module docstring."""

    name: ClassVar[str] = "base"
    # providers that send the same payload to the same API share cache entries
    cache_namespace: ClassVar[str | None] = None

    def __init__(self, config: ServerConfig | None = None, cache: JudgeCache | None = None) -> None:
        self.config = config if config is not None else ServerConfig()
        if cache is None and self.config.use_cache:
            cache = JudgeCache(self.config.cache_path)
        self.cache = cache

    # -- provider hooks ---------------------------------------------------------------------------

    @abc.abstractmethod
    def _invoke(self, request: Request) -> ProviderReply:
        """Make one call; raise on failure (after retries)."""

    def payload(self, request: Request) -> dict[str, Any]:
        """The chat-completions payload sent for ``request`` (also the basis of its cache key)."""
        payload: dict[str, Any] = {
            "model": self.config.model_name,
            "messages": request.messages,
            "temperature": self.config.temperature if request.temperature is None else request.temperature,
            "max_tokens": self.config.max_tokens if request.max_tokens is None else request.max_tokens,
        }
        if self.config.top_p is not None:
            payload["top_p"] = self.config.top_p
        return payload

    def _invoke_safely(self, request: Request) -> Outcome:
        started = time.perf_counter()
        try:
            return self._invoke(request)
        except Exception as exc:
            return ProviderFailure(
                error=describe_error(exc),
                latency_s=time.perf_counter() - started,
                attempts=int(getattr(exc, "attempts", 1) or 1),
            )

    def _invoke_many(self, requests: Sequence[Request]) -> list[Outcome]:
        """Outcomes of ``requests`` in order, with at most ``num_concurrent`` calls in flight."""
        if len(requests) <= 1 or self.config.num_concurrent == 1:
            return [self._invoke_safely(r) for r in requests]
        workers = min(self.config.num_concurrent, len(requests))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"judge-{self.name}") as pool:
            return list(pool.map(self._invoke_safely, requests))

    def close(self) -> None:
        """Release the provider's connections and the cache file."""
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> JudgeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- raw requests -----------------------------------------------------------------------------

    def cache_key(self, request: Request) -> str:
        return cache_key(self.cache_namespace or self.name, self.config.model_name, self.payload(request))

    def complete(self, request: Request) -> JudgeResponse:
        """One judge call (or cache hit); failures come back with ``error`` set, never raised."""
        return self.complete_batch([request])[0]

    def evaluate(self, request: Request) -> JudgeResponse:
        """The published name of :meth:`complete` (``response.success`` / ``response.content``)."""
        return self.complete(request)

    def complete_batch(self, requests: Sequence[Request]) -> list[JudgeResponse]:
        """Judge calls for ``requests``, concurrently, answers in request order.

        Cached requests are not sent; identical requests in the batch are sent once. Successful
        replies are stored in the cache.
        """
        keys = [self.cache_key(r) for r in requests]
        responses: list[JudgeResponse | None] = [None] * len(requests)
        pending: dict[str, list[int]] = {}
        for index, key in enumerate(keys):
            if key in pending:
                pending[key].append(index)
                continue
            record = self.cache.get(key) if self.cache is not None else None
            if record is not None:
                responses[index] = self._from_record(record, key)
            else:
                pending[key] = [index]
        unique = list(pending)
        outcomes = self._invoke_many([requests[pending[key][0]] for key in unique]) if unique else []
        failures: list[str] = []
        for key, outcome in zip(unique, outcomes):
            response = self._from_outcome(outcome, key)
            if response.success and self.cache is not None:
                self.cache.put(key, self._to_record(response))
            if response.error is not None:
                failures.append(response.error)
            first, *duplicates = pending[key]
            responses[first] = response
            for index in duplicates:
                responses[index] = replace(response, cached=response.success)
        if failures:
            logger.warning(
                "judge %s (%s): %d of %d call(s) failed; first error: %s",
                self.name,
                self.config.model_name,
                len(failures),
                len(unique),
                failures[0],
            )
        return [r for r in responses if r is not None]

    async def acomplete_batch(self, requests: Sequence[Request]) -> list[JudgeResponse]:
        """:meth:`complete_batch` for callers inside an event loop (runs in a worker thread)."""
        return await asyncio.to_thread(self.complete_batch, requests)

    def _from_outcome(self, outcome: Outcome, key: str) -> JudgeResponse:
        if isinstance(outcome, ProviderFailure):
            return JudgeResponse(
                content=None,
                provider=self.name,
                model=self.config.model_name,
                cache_key=key,
                error=outcome.error,
                latency_s=outcome.latency_s,
                attempts=outcome.attempts,
            )
        return JudgeResponse(
            content=outcome.text,
            provider=self.name,
            model=self.config.model_name,
            cache_key=key,
            latency_s=outcome.latency_s,
            attempts=outcome.attempts,
            usage=outcome.usage,
        )

    def _from_record(self, record: Mapping[str, Any], key: str) -> JudgeResponse:
        usage = record.get("usage")
        return JudgeResponse(
            content=str(record.get("content", "")),
            provider=self.name,
            model=str(record.get("model", self.config.model_name)),
            cache_key=key,
            cached=True,
            latency_s=float(record.get("latency_s", 0.0)),
            attempts=0,
            usage=dict(usage) if isinstance(usage, Mapping) else None,
        )

    @staticmethod
    def _to_record(response: JudgeResponse) -> dict[str, Any]:
        record: dict[str, Any] = {
            "content": response.content,
            "provider": response.provider,
            "model": response.model,
            "latency_s": response.latency_s,
            "created_at": time.time(),
        }
        if response.usage:
            record["usage"] = response.usage
        return record

    # -- prompts ----------------------------------------------------------------------------------

    def _request(self, prompt: str, images: Iterable[Any] | None, metadata: dict[str, Any]) -> Request:
        return Request.from_prompt(
            prompt, system_prompt=self.config.system_prompt, images=images or (), metadata=metadata
        )

    def binary_request(
        self,
        question: str,
        answer: Any,
        prediction: Any,
        output_format: str = "0/1",
        custom_prompt: str | None = None,
        images: Iterable[Any] | None = None,
    ) -> Request:
        """The request :meth:`evaluate_binary` sends."""
        binary_labels(output_format)  # validates the format
        values = {
            "question": question,
            "answer": answer,
            "prediction": prediction,
            "instruction": BINARY_INSTRUCTIONS[output_format],
            "output_format": output_format,
        }
        prompt = fill(custom_prompt or BINARY_PROMPT, values)
        metadata = {
            "kind": "binary",
            **{k: values[k] for k in ("question", "answer", "prediction", "output_format")},
        }
        return self._request(prompt, images, metadata)

    def score_request(
        self,
        question: str,
        answer: Any,
        prediction: Any,
        min_score: float = 0,
        max_score: float = 10,
        custom_prompt: str | None = None,
        images: Iterable[Any] | None = None,
    ) -> Request:
        """The request :meth:`evaluate_score` sends."""
        _check_range(min_score, max_score)
        values = {
            "question": question,
            "answer": answer,
            "prediction": prediction,
            "min_score": _format_number(min_score),
            "max_score": _format_number(max_score),
        }
        prompt = fill(custom_prompt or SCORE_PROMPT, values)
        metadata = {"kind": "score", **values, "min_score": min_score, "max_score": max_score}
        return self._request(prompt, images, metadata)

    def comparative_request(
        self,
        question: str,
        response_a: Any,
        response_b: Any,
        context: str | None = None,
        min_score: float = 1,
        max_score: float = 10,
        custom_prompt: str | None = None,
        images: Iterable[Any] | None = None,
    ) -> Request:
        """The request :meth:`evaluate_comparative` sends."""
        _check_range(min_score, max_score)
        values = {
            "question": question,
            "response_a": response_a,
            "response_b": response_b,
            "context": context or "",
            "context_block": f"Context:\n{context}\n\n" if context else "",
            "min_score": _format_number(min_score),
            "max_score": _format_number(max_score),
        }
        prompt = fill(custom_prompt or COMPARATIVE_PROMPT, values)
        metadata = {
            "kind": "comparative",
            "question": question,
            "response_a": response_a,
            "response_b": response_b,
            "min_score": min_score,
            "max_score": max_score,
        }
        return self._request(prompt, images, metadata)

    # -- verdicts ---------------------------------------------------------------------------------

    @staticmethod
    def _binary_result(response: JudgeResponse, output_format: str) -> JudgeResult:
        if not response.success or response.content is None:
            return JudgeResult(False, None, response, error=response.error)
        label = parse_binary(response.content, output_format)
        if label is None:
            return JudgeResult(
                False, None, response, error=_unparsed(response.content, f"a {output_format} verdict")
            )
        return JudgeResult(True, label, response)

    @staticmethod
    def _score_result(response: JudgeResponse, min_score: float, max_score: float) -> JudgeResult:
        if not response.success or response.content is None:
            return JudgeResult(False, None, response, error=response.error, extra={"score": None})
        score = parse_score(response.content, min_score, max_score)
        if score is None:
            error = _unparsed(response.content, f"a score from {min_score} to {max_score}")
            return JudgeResult(False, None, response, error=error, extra={"score": None})
        return JudgeResult(True, score, response, extra={"score": score})

    @staticmethod
    def _comparative_result(response: JudgeResponse, min_score: float, max_score: float) -> JudgeResult:
        empty = {"scores": None, "winner": None}
        if not response.success or response.content is None:
            return JudgeResult(False, None, response, error=response.error, extra=empty)
        pair = parse_score_pair(response.content, min_score, max_score)
        if pair is None:
            error = _unparsed(response.content, f"two scores from {min_score} to {max_score}")
            return JudgeResult(False, None, response, error=error, extra=empty)
        winner = "a" if pair[0] > pair[1] else "b" if pair[1] > pair[0] else "tie"
        return JudgeResult(True, list(pair), response, extra={"scores": list(pair), "winner": winner})

    # -- public evaluation API --------------------------------------------------------------------

    def evaluate_binary(
        self,
        question: str,
        answer: Any,
        prediction: Any,
        output_format: str = "0/1",
        custom_prompt: str | None = None,
        images: Iterable[Any] | None = None,
    ) -> dict[str, Any]:
        """Is ``prediction`` a correct answer? ``{"success", "result", "raw", "cached", "error", "judge"}``.

        ``result`` is the ``output_format`` label (``"1"``/``"0"`` for ``"0/1"``) when ``success``,
        else ``None`` with ``error`` saying why (the call failed, or the reply had no clear verdict).
        """
        request = self.binary_request(question, answer, prediction, output_format, custom_prompt, images)
        return self._binary_result(self.complete(request), output_format).to_dict()

    def evaluate_binary_batch(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """:meth:`evaluate_binary` for each item (keys: its arguments), run concurrently, in order."""
        requests = [
            self.binary_request(**_checked(item, _BINARY_KEYS, "evaluate_binary_batch")) for item in items
        ]
        formats = [str(item.get("output_format", "0/1")) for item in items]
        return [
            self._binary_result(response, fmt).to_dict()
            for response, fmt in zip(self.complete_batch(requests), formats)
        ]

    def evaluate_score(
        self,
        question: str,
        answer: Any,
        prediction: Any,
        min_score: float = 0,
        max_score: float = 10,
        custom_prompt: str | None = None,
        images: Iterable[Any] | None = None,
    ) -> dict[str, Any]:
        """A score in ``[min_score, max_score]``: the result dict with ``result`` = ``score`` (a float)."""
        request = self.score_request(
            question, answer, prediction, min_score, max_score, custom_prompt, images
        )
        return self._score_result(self.complete(request), min_score, max_score).to_dict()

    def evaluate_score_batch(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """:meth:`evaluate_score` for each item, run concurrently, in order."""
        checked = [_checked(item, _SCORE_KEYS, "evaluate_score_batch") for item in items]
        responses = self.complete_batch([self.score_request(**item) for item in checked])
        return [
            self._score_result(r, item.get("min_score", 0), item.get("max_score", 10)).to_dict()
            for r, item in zip(responses, checked)
        ]

    def evaluate_comparative(
        self,
        question: str,
        response_a: Any,
        response_b: Any,
        context: str | None = None,
        min_score: float = 1,
        max_score: float = 10,
        custom_prompt: str | None = None,
        images: Iterable[Any] | None = None,
    ) -> dict[str, Any]:
        """Score two responses: ``scores`` = ``[a, b]`` (also in ``result``), ``winner`` = a / b / tie."""
        request = self.comparative_request(
            question, response_a, response_b, context, min_score, max_score, custom_prompt, images
        )
        return self._comparative_result(self.complete(request), min_score, max_score).to_dict()

    def evaluate_comparative_batch(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """:meth:`evaluate_comparative` for each item, run concurrently, in order."""
        checked = [_checked(item, _COMPARATIVE_KEYS, "evaluate_comparative_batch") for item in items]
        responses = self.complete_batch([self.comparative_request(**item) for item in checked])
        return [
            self._comparative_result(r, item.get("min_score", 1), item.get("max_score", 10)).to_dict()
            for r, item in zip(responses, checked)
        ]


def _checked(item: Mapping[str, Any], allowed: frozenset[str], method: str) -> dict[str, Any]:
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise ValueError(
            f"{method}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )
    return dict(item)


def _check_range(min_score: float, max_score: float) -> None:
    if not min_score < max_score:
        raise ValueError(f"judge score range: min_score ({min_score}) must be below max_score ({max_score})")


def _format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _unparsed(reply: str, expected: str) -> str:
    shown = reply.strip().replace("\n", " ")
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return f"could not read {expected} from the judge's reply: {shown!r}"


__all__ = ["JudgeServer", "Outcome", "ProviderFailure", "ProviderReply", "describe_error"]
