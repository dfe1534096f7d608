"""``claude``: Anthropic models through the Anthropic Messages API and the official ``anthropic`` SDK.

Install with ``pip install 'lmms_eval[anthropic]'``; the SDK is imported when the model is built.
Model args (besides those every API backend takes, see :mod:`lmms_eval.models.api.backend`):

* ``model`` (aliases ``model_version``, ``pretrained``): the model name, e.g. ``claude-sonnet-4-6``;
* ``api_key`` (default ``ANTHROPIC_API_KEY``; required), ``base_url`` (default
  ``ANTHROPIC_BASE_URL``, then the Anthropic API).

Requests: images are base64 image blocks, a video its ``max_frames_num`` frames as image blocks,
system messages (and ``system_prompt``) the top-level ``system``; audio is refused per request
(``RequestFailure(kind="input")``). ``max_tokens`` (which Anthropic requires) is the task's
``max_new_tokens``, else the ``max_new_tokens`` argument (1024). ``temperature`` is 0 unless the
task samples; ``top_p`` is sent only without a temperature (recent models take one or the
other). ``until`` becomes ``stop_sequences``, except whitespace-only strings, which Anthropic
rejects: every ``until`` string is applied to the returned text instead.

Answers carry the usage the API reported (input tokens, cache reads and writes included; output
tokens). A reply with ``stop_reason: "refusal"`` is a failure of kind ``refusal``. Retries, rate
pacing, the gate (budget, circuit breaker, Ctrl-C) and redaction are those of every API backend
(:mod:`lmms_eval.models.api.retry`); the SDK's own retries are off.

``batch=true`` sends each ``generate_until`` call as one Anthropic Message Batch (half the price),
polled every ``batch_poll_s`` seconds (30) for at most ``batch_max_wait_s`` (86400), resumed after a
restart through the response cache (see :mod:`lmms_eval.models.api.batch`); each result is answered
by the same code as an online reply.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.api.path_types import FileOrText, NotAPath
from lmms_eval.errors import MissingDependencyError, ModelArgsError
from lmms_eval.models._common import apply_stop_strings
from lmms_eval.models.api.backend import DEFAULT_MAX_NEW_TOKENS, ApiChatModel
from lmms_eval.models.api.batch import (
    DEFAULT_MAX_WAIT_S,
    DEFAULT_POLL_S,
    BatchItem,
    BatchProvider,
    BatchState,
    retried,
)
from lmms_eval.models.api.retry import AttemptError, RequestFailedError, RetryPolicy, call_with_retries
from lmms_eval.models.api.sdk import api_key_from, sdk_attempt_error
from lmms_eval.protocol import ChatMessages

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"


def sendable_stop_sequences(until: list[str]) -> list[str]:
    """The stop strings Anthropic accepts: not whitespace-only (the others are applied client-side)."""
    return [s for s in until if s.strip()]


class Claude(ApiChatModel):
    """Anthropic Messages API backend (thread pool); see the module docstring for its arguments."""

    is_simple = False

    def __init__(
        self,
        model: NotAPath | None = None,
        model_version: NotAPath | None = None,
        pretrained: NotAPath | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        retry_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        num_concurrent: int = 8,
        adaptive_concurrency: bool = True,
        max_frames_num: int = 10,
        video_max_pixels: int | None = 448 * 448,
        system_prompt: FileOrText | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        batch_size: int | str | None = 1,
        device: str | None = None,
        batch: bool = False,
        batch_poll_s: float = DEFAULT_POLL_S,
        batch_max_wait_s: float = DEFAULT_MAX_WAIT_S,
    ) -> None:
        super().__init__(
            model=model,
            model_version=model_version,
            pretrained=pretrained,
            timeout=timeout,
            max_retries=max_retries,
            retry_backoff_s=retry_backoff_s,
            max_backoff_s=max_backoff_s,
            num_concurrent=num_concurrent,
            adaptive_concurrency=adaptive_concurrency,
            max_frames_num=max_frames_num,
            video_max_pixels=video_max_pixels,
            system_prompt=system_prompt,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            device=device,
        )
        try:
            import anthropic
        except ImportError:
            raise MissingDependencyError("anthropic", "anthropic", "The 'claude' model") from None
        key = api_key_from(api_key, (KEY_ENV,), "claude")
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        timeout = self.timeout
        self._make_client = lambda: anthropic.Anthropic(
            api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0
        )
        self._client: Any = None
        self.enable_batch(bool(batch), batch_poll_s, batch_max_wait_s)
        try:
            self._client = self._make_client()
        except Exception as exc:  # the SDK's own checks of its arguments
            raise ModelArgsError(f"model 'claude': {type(exc).__name__}: {exc}") from None

    # -- building requests -------------------------------------------------------------------------------

    def build_request(self, request: Instance) -> tuple[dict[str, Any], list[str]]:
        """The ``messages.create`` arguments of a ``generate_until`` request, and its stop strings."""
        settings = self.generation_settings(request.args[1] or {})
        system, messages = ChatMessages.from_raw(self.doc_messages(request)).to_anthropic_messages(
            video_kwargs={"frames": self._frames}
        )
        params: dict[str, Any] = {
            "model": self.model_version,
            "max_tokens": settings.max_new_tokens,
            "messages": messages,
        }
        system = system if system is not None else self.system_prompt
        if system:
            params["system"] = system
        # sampling goes in the body as it is: recent SDKs no longer list temperature and top_p
        if settings.temperature is not None:
            params["extra_body"] = {"temperature": settings.temperature}
        elif settings.top_p is not None:
            params["extra_body"] = {"top_p": settings.top_p}
        stops = sendable_stop_sequences(settings.until)
        if stops:
            params["stop_sequences"] = stops
        return params, settings.until

    # -- answering --------------------------------------------------------------------------------------

    def request_answer(self, request: Instance, gate: RequestGate) -> GenerationResult:
        params, until = self.build_request(request)

        def attempt() -> Any:
            try:
                message = self.client.messages.create(**params)
            except Exception as exc:
                return sdk_attempt_error(exc, self.timeout)
            return _declined(message) or message

        done = call_with_retries(attempt, self.retry, self.concurrency, gate)
        return _answer_of(done.value, until, done.latency_s)

    # -- batch mode -------------------------------------------------------------------------------------

    def batch_provider(self) -> BatchProvider:
        return AnthropicBatches(self.client, self.retry, self.timeout)

    def batch_body(self, request: Instance) -> tuple[dict[str, Any], list[str]]:
        """The request's ``params`` in a batch: those of ``messages.create``, sampling included."""
        params, until = self.build_request(request)
        sampling = params.pop("extra_body", {})
        return {**params, **sampling}, until

    def batch_answer(self, result: Any, until: list[str]) -> GenerationResult | RequestFailure:
        """One batch result, answered as the online path answers a reply."""
        outcome: Any = getattr(result, "result", None)
        kind = getattr(outcome, "type", None)
        if kind == "succeeded":
            message = outcome.message
            declined = _declined(message)
            if declined is not None:
                return RequestFailure(
                    declined.message, retryable=False, token_counts=declined.usage, kind="refusal"
                )
            return _answer_of(message, until, None)
        if kind == "errored":
            error = getattr(getattr(outcome, "error", None), "error", None)
            detail = getattr(error, "message", None) or getattr(error, "type", None) or "error"
            return RequestFailure(
                f"batch request errored: {detail}",
                retryable=getattr(error, "type", "") != "invalid_request_error",
            )
        return RequestFailure(f"batch request {kind or 'missing from the results'}", retryable=True)

    @property
    def client(self) -> Any:
        """The SDK client (built again after :meth:`clean` closed it)."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    def clean(self) -> None:
        """Close the SDK's connection pool (it reopens if the model is used again)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
        super().clean()


def _answer_of(message: Any, until: list[str], latency_s: float | None) -> GenerationResult:
    text = "".join(getattr(block, "text", "") for block in message.content if block.type == "text")
    return GenerationResult(
        text=apply_stop_strings(text, until), token_counts=_usage(message), latency_s=latency_s
    )


class AnthropicBatches:
    """Anthropic Message Batches through the SDK (``client.messages.batches``), each call through the
    shared retry loop."""

    name = "anthropic"

    def __init__(self, client: Any, policy: RetryPolicy, timeout: float) -> None:
        self.client = client
        self.policy = policy
        self.timeout = timeout

    def _call(self, call: Any) -> Any:
        return retried(call, self.policy, lambda exc: sdk_attempt_error(exc, self.timeout))

    def submit(self, items: Sequence[BatchItem]) -> str:
        requests = [{"custom_id": item.custom_id, "params": item.body} for item in items]
        return str(self._call(lambda: self.client.messages.batches.create(requests=requests)).id)

    def state(self, batch_id: str) -> BatchState:
        batch = self._call(lambda: self.client.messages.batches.retrieve(batch_id))
        counts = batch.request_counts
        done = sum(int(getattr(counts, k, 0) or 0) for k in ("succeeded", "errored", "canceled", "expired"))
        status = str(batch.processing_status)
        return BatchState(status, done, done + int(counts.processing or 0), ended=status == "ended")

    def results(self, batch_id: str) -> dict[str, Any]:
        try:
            return self._call(
                lambda: {r.custom_id: r for r in self.client.messages.batches.results(batch_id)}
            )
        except RequestFailedError:
            raise
        except Exception as exc:  # the SDK could not read the results stream
            raise RequestFailedError(
                f"anthropic batch {batch_id}: results unreadable ({type(exc).__name__}: {exc})"
            ) from None


def _usage(message: Any) -> TokenCounts | None:
    usage = getattr(message, "usage", None)
    if usage is None:
        return None
    inputs = [
        getattr(usage, k, None)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    return TokenCounts(
        input_tokens=sum(int(n) for n in inputs if n) if inputs[0] is not None else None,
        output_tokens=getattr(usage, "output_tokens", None),
    )


def _declined(message: Any) -> AttemptError | None:
    """A reply the model refused to give (``stop_reason: "refusal"``): a failure, not retried."""
    if getattr(message, "stop_reason", None) != "refusal":
        return None
    return AttemptError("stop_reason: refusal", False, 200, kind="refusal", usage=_usage(message))


__all__ = ["Claude", "sendable_stop_sequences"]
