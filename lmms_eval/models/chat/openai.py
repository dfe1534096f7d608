"""``openai``: chat models behind an OpenAI-compatible chat-completions API, called from threads.

Also registered as ``openai_compatible``, ``openai_compatible_chat`` and ``gpt4v`` (the published
id); :mod:`.async_openai` is
the asyncio variant with the same arguments. Model args:

* ``model`` (aliases ``model_version``, ``pretrained``): the API model name (required; the
  deployment name with ``api_type=azure``);
* ``base_url`` (default ``OPENAI_API_BASE``, then the OpenAI API), ``api_key`` (default
  ``OPENAI_API_KEY``), ``timeout`` (seconds per attempt, 60);
* ``api_type`` (``openai``, or ``azure`` for Azure OpenAI: ``base_url`` defaults to
  ``AZURE_OPENAI_ENDPOINT``, the key to ``AZURE_OPENAI_API_KEY`` and is sent as an ``api-key``
  header, requests go to ``{base_url}/openai/deployments/{model}/chat/completions?api-version=``
  ``api_version``, default ``AZURE_OPENAI_API_VERSION``, then ``OPENAI_API_VERSION``, then
  2024-10-21);
* ``max_retries`` (5 retries after the first attempt), ``retry_backoff_s`` (1.0, the base of the
  jittered exponential backoff when the server gives no ``Retry-After``), ``max_backoff_s`` (60);
* ``num_concurrent`` (32, the most attempts in flight; requests waiting to retry do not count),
  ``adaptive_concurrency`` (true: pace attempts at the rate the server admits once it answers many
  of them HTTP 429; see :mod:`lmms_eval.models.api.concurrency`);
* ``max_frames_num`` (10 frames sampled evenly from a video given as a list of frames or a folder
  of frame images: the centre frame of each of 10 equal segments, see :mod:`lmms_eval.media.video`;
  a video file is decoded by :func:`lmms_eval.media.read_video`: 10 frames, first and last included,
  at most ``video_max_pixels`` pixels each, default 448 x 448), ``pass_video_url`` (send videos as a
  ``video_url`` instead, for servers that take one);
* ``system_prompt`` (text or a path to a text file; not added when the messages already start
  with a system message), ``max_new_tokens`` (1024, when the task sets none),
  ``reasoning`` (true/false; default: detected from the model name);
* ``batch_size`` and ``device`` are accepted for command-line compatibility; ``device`` is unused;
* ``batch`` (false; true: the OpenAI Batch API, half the price: each ``generate_until`` call is one
  batch, uploaded as a JSONL file, polled every ``batch_poll_s`` seconds (30) with progress logged,
  for at most ``batch_max_wait_s`` (86400); see :mod:`lmms_eval.models.api.batch`; not with
  ``api_type=azure``).

Generation kwargs map to the API as ``max_new_tokens`` -> ``max_tokens``, ``temperature``
(0 unless the task samples), ``top_p``, ``seed``, ``presence_penalty``, ``frequency_penalty`` and
``until`` -> ``stop`` (the first 4). Reasoning models (names containing o1, o3, o4 or gpt-5)
get ``max_completion_tokens`` instead and no ``temperature``, ``top_p`` or ``stop``. ``n`` must
be 1. ``until`` is also applied to the returned text.

Each answer is a :class:`~lmms_eval.api.instance.GenerationResult` with the usage the API reported
(reasoning tokens from ``completion_tokens_details``) and the latency of the successful attempt.
A request that still fails after its retries, or fails with a non-retryable status, is returned as
a :class:`~lmms_eval.api.instance.RequestFailure`: recorded, never scored. So is a reply without
content that the model refused (``kind="refusal"``) or a content filter withheld
(``kind="filtered"``); those are not retried. A request whose media cannot be read (a missing or
broken image or video: :class:`~lmms_eval.media.MediaError`) is not sent: it is answered with
``RequestFailure(kind="input")``.

The run's :class:`~lmms_eval.api.gate.RequestGate` (``self.gate``) is asked before every attempt and
told every answer as soon as it is final: a refused request comes back as ``RequestFailure(kind=
"not_sent")`` without being sent (token budget spent, circuit breaker open, run stopped), and
retries stop when the gate closes. On Ctrl-C (KeyboardInterrupt in the thread that called
``generate_until``) the gate is stopped, waiting requests end at once, attempts in flight are
abandoned (the worker threads are daemon threads) and the KeyboardInterrupt goes on; the answers
finished before it were already reported to the gate.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure
from lmms_eval.api.path_types import FileOrText, NotAPath
from lmms_eval.errors import ModelArgsError
from lmms_eval.models._common import apply_stop_strings
from lmms_eval.models.api.backend import (
    DEFAULT_MAX_NEW_TOKENS,
    REQUESTS_PER_SLOT,
    Answer,
    ApiChatModel,
    stop_strings,
)
from lmms_eval.models.api.batch import DEFAULT_MAX_WAIT_S, DEFAULT_POLL_S, BatchProvider, OpenAIBatches
from lmms_eval.models.api.http import (
    ApiType,
    ChatCompletion,
    ChatCompletionClient,
    completion_from,
    interpret_response,
)
from lmms_eval.models.api.retry import AttemptError
from lmms_eval.protocol import ChatMessages

logger = logging.getLogger(__name__)

MAX_STOP_SEQUENCES = 4  # the OpenAI API accepts at most 4
_REASONING_NAME = re.compile(r"(?:^|[^a-z0-9])o[134](?:$|[^0-9])|gpt-5", re.IGNORECASE)

__all__ = [
    "DEFAULT_MAX_NEW_TOKENS",
    "REQUESTS_PER_SLOT",
    "Answer",
    "OpenAICompatible",
    "is_reasoning_model",
    "stop_strings",
]


def is_reasoning_model(name: str) -> bool:
    """Whether ``name`` is an OpenAI reasoning model (o1, o3, o4, gpt-5 families)."""
    return _REASONING_NAME.search(name) is not None


class OpenAICompatible(ApiChatModel):
    """OpenAI-compatible chat backend (thread pool); see the module docstring for its arguments."""

    is_simple = False
    sent_gen_kwargs = frozenset({"seed", "presence_penalty", "frequency_penalty"})

    def __init__(
        self,
        model: NotAPath | None = None,
        model_version: NotAPath | None = None,
        pretrained: NotAPath | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        api_type: str = "openai",
        api_version: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        retry_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        num_concurrent: int = 32,
        adaptive_concurrency: bool = True,
        max_frames_num: int = 10,
        pass_video_url: bool = False,
        video_max_pixels: int | None = 448 * 448,
        system_prompt: FileOrText | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        reasoning: bool | None = None,
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
        self.pass_video_url = bool(pass_video_url)
        self.reasoning = is_reasoning_model(self.model_version) if reasoning is None else bool(reasoning)
        kind = str(api_type).lower()
        if kind not in ("openai", "azure"):
            raise ModelArgsError(
                f"model '{type(self).__name__}': api_type must be 'openai' or 'azure', got {api_type!r}"
            )
        self.api_type: ApiType = "azure" if kind == "azure" else "openai"
        try:
            self.client = ChatCompletionClient(
                base_url=base_url,
                api_key=api_key,
                timeout=self.timeout,
                max_retries=int(max_retries),
                retry_backoff_s=float(retry_backoff_s),
                max_backoff_s=float(max_backoff_s),
                concurrency=self.concurrency,
                api_type=self.api_type,
                api_version=api_version,
                deployment=self.model_version,
            )
        except ValueError as exc:
            raise ModelArgsError(f"model '{type(self).__name__}': {exc}") from None
        self.retry = self.client.retry  # one policy: the client's
        if batch and self.api_type == "azure":
            raise ModelArgsError(
                f"model '{type(self).__name__}': batch=true is not supported with api_type=azure"
            )
        self.enable_batch(bool(batch), batch_poll_s, batch_max_wait_s)

    # -- building requests -------------------------------------------------------------------------------

    def build_payload(self, request: Instance) -> tuple[dict[str, Any], list[str]]:
        """The chat-completions payload of a ``generate_until`` request, and its stop strings."""
        gen_kwargs = request.args[1] or {}
        video_kwargs = None if self.pass_video_url else {"frames": self._frames}
        messages = ChatMessages.from_raw(self.doc_messages(request)).to_openai_messages(
            video_kwargs=video_kwargs, pass_video_url=self.pass_video_url
        )
        if self.system_prompt and not (messages and messages[0].get("role") == "system"):
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        until = stop_strings(gen_kwargs.get("until"))
        payload: dict[str, Any] = {"model": self.model_version, "messages": messages}
        payload.update(self.generation_params(gen_kwargs, until))
        return payload, until

    def generation_params(self, gen_kwargs: dict[str, Any], until: list[str]) -> dict[str, Any]:
        """API parameters from a task's generation kwargs (see the module docstring)."""
        settings = self.generation_settings(gen_kwargs)
        params: dict[str, Any] = {}
        if self.reasoning:
            params["max_completion_tokens"] = settings.max_new_tokens
        else:
            params["max_tokens"] = settings.max_new_tokens
            if settings.temperature is not None:
                params["temperature"] = settings.temperature
            if settings.top_p is not None:
                params["top_p"] = settings.top_p
            if until:
                params["stop"] = until[:MAX_STOP_SEQUENCES]
        if "seed" in settings.extra:
            params["seed"] = int(settings.extra["seed"])
        for key in ("presence_penalty", "frequency_penalty"):
            if key in settings.extra:
                params[key] = float(settings.extra[key])
        return params

    @staticmethod
    def to_answer(completion: ChatCompletion, until: list[str]) -> GenerationResult:
        return GenerationResult(
            text=apply_stop_strings(completion.text, until),
            token_counts=completion.usage,
            latency_s=completion.latency_s,
        )

    # -- answering --------------------------------------------------------------------------------------

    def request_answer(self, request: Instance, gate: RequestGate) -> GenerationResult:
        payload, until = self.build_payload(request)
        return self.to_answer(self.client.complete(payload, gate), until)

    # -- batch mode -------------------------------------------------------------------------------------

    def batch_provider(self) -> BatchProvider:
        return OpenAIBatches(self.client)

    def batch_body(self, request: Instance) -> tuple[dict[str, Any], list[str]]:
        return self.build_payload(request)

    def batch_answer(self, result: Any, until: list[str]) -> Answer:
        """A line of the batch's output or error file as the online path would answer it."""
        if not isinstance(result, dict):
            return RequestFailure("the batch returned no result for this request", retryable=True)
        response: dict[str, Any] = result.get("response") or {}
        status, body = response.get("status_code"), response.get("body")
        if not isinstance(status, int) or body is None:
            error: dict[str, Any] = result.get("error") or {}
            return RequestFailure(f"batch error: {error.get('message') or error.get('code') or result}")
        parsed = interpret_response(status, {}, json.dumps(body).encode("utf-8"))
        if isinstance(parsed, AttemptError):
            return RequestFailure(
                parsed.message, retryable=parsed.retryable, token_counts=parsed.usage, kind=parsed.kind
            )
        answer = self.to_answer(completion_from(parsed, 0.0, 1), until)
        answer.latency_s = None  # a batch has no per-request latency
        return answer

    def clean(self) -> None:
        """Close the connection pool (it reopens if the model is used again)."""
        self.client.close()
        super().clean()
