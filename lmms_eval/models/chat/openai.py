"""``openai``: chat models behind an OpenAI-compatible chat-completions API, called from threads.

Also registered as ``openai_compatible`` and ``openai_compatible_chat``; :mod:`.async_openai` is
the asyncio variant with the same arguments. Model args:

* ``model`` (aliases ``model_version``, ``pretrained``): the API model name (required);
* ``base_url`` (default ``OPENAI_API_BASE``, then the OpenAI API), ``api_key`` (default
  ``OPENAI_API_KEY``), ``timeout`` (seconds per attempt, 60);
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
* ``batch_size`` and ``device`` are accepted for command-line compatibility; ``device`` is unused.

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

import logging
import re
from typing import Any

from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure
from lmms_eval.api.model import lmms
from lmms_eval.errors import ConfigError, ModelArgsError
from lmms_eval.media import (
    FrameSelection,
    MediaError,
    decode_video,
    is_frame_video,
    media_failure,
    sample_video_frames,
)
from lmms_eval.models._common import apply_stop_strings, parse_batch_size
from lmms_eval.models.api.concurrency import AdaptiveConcurrency, run_in_threads
from lmms_eval.models.api.http import ChatCompletion, ChatCompletionClient, RequestFailedError
from lmms_eval.protocol import ChatMessages

logger = logging.getLogger(__name__)

DEFAULT_MAX_NEW_TOKENS = 1024
# requests in progress per attempt slot: the extra ones wait out retry delays without idling a slot
REQUESTS_PER_SLOT = 2
MAX_STOP_SEQUENCES = 4  # the OpenAI API accepts at most 4
# gen_kwargs understood here; others are logged once and not sent
GEN_KWARGS = frozenset(
    {
        "until",
        "max_new_tokens",
        "temperature",
        "top_p",
        "seed",
        "n",
        "do_sample",
        "presence_penalty",
        "frequency_penalty",
    }
)
_REASONING_NAME = re.compile(r"(?:^|[^a-z0-9])o[134](?:$|[^0-9])|gpt-5", re.IGNORECASE)

Answer = GenerationResult | RequestFailure


def is_reasoning_model(name: str) -> bool:
    """Whether ``name`` is an OpenAI reasoning model (o1, o3, o4, gpt-5 families)."""
    return _REASONING_NAME.search(name) is not None


def stop_strings(until: Any) -> list[str]:
    """``until`` as a list of non-empty stop strings."""
    items = [until] if isinstance(until, str) else list(until or [])
    return [str(s) for s in items if s]


class OpenAICompatible(lmms):
    """OpenAI-compatible chat backend (thread pool); see the module docstring for its arguments."""

    is_simple = False

    def __init__(
        self,
        model: str | None = None,
        model_version: str | None = None,
        pretrained: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        retry_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        num_concurrent: int = 32,
        adaptive_concurrency: bool = True,
        max_frames_num: int = 10,
        pass_video_url: bool = False,
        video_max_pixels: int | None = 448 * 448,
        system_prompt: str | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        reasoning: bool | None = None,
        batch_size: int | str | None = 1,
        device: str | None = None,
    ) -> None:
        super().__init__()
        names = {n for n in (model, model_version, pretrained) if n}
        if not names:
            raise ModelArgsError(f"model '{type(self).__name__}' needs the API model name: model=<name>")
        if len(names) > 1:
            raise ModelArgsError(
                f"model, model_version and pretrained name the same thing; got {', '.join(sorted(names))}"
            )
        if int(num_concurrent) < 1:
            raise ModelArgsError(f"num_concurrent must be at least 1, got {num_concurrent}")
        self.model_version: str = names.pop()
        self.num_concurrent = int(num_concurrent)
        self.max_frames_num = int(max_frames_num)
        self.pass_video_url = bool(pass_video_url)
        self.video_max_pixels = None if video_max_pixels is None else int(video_max_pixels)
        self.system_prompt = self._resolve_system_prompt(system_prompt)
        self.max_new_tokens = int(max_new_tokens)
        self.reasoning = is_reasoning_model(self.model_version) if reasoning is None else bool(reasoning)
        # the evaluator sends requests in chunks of 32 x batch_size: keep every slot busy
        self.batch_size_per_gpu = max(parse_batch_size(batch_size, type(self).__name__), self.num_concurrent)
        del device  # accepted for command-line compatibility; the model runs behind the API
        self.concurrency = AdaptiveConcurrency(self.num_concurrent, adaptive=bool(adaptive_concurrency))
        try:
            self.client = ChatCompletionClient(
                base_url=base_url,
                api_key=api_key,
                timeout=float(timeout),
                max_retries=int(max_retries),
                retry_backoff_s=float(retry_backoff_s),
                max_backoff_s=float(max_backoff_s),
                concurrency=self.concurrency,
            )
        except ValueError as exc:
            raise ModelArgsError(f"model '{type(self).__name__}': {exc}") from None
        self._ignored_gen_kwargs: set[str] = set()

    # -- building requests -------------------------------------------------------------------------------

    def build_payload(self, request: Instance) -> tuple[dict[str, Any], list[str]]:
        """The chat-completions payload of a ``generate_until`` request, and its stop strings."""
        doc_to_messages, gen_kwargs, doc_id, task, split = request.args[:5]
        doc = self.task_dict[task][split][doc_id]
        video_kwargs = None if self.pass_video_url else {"frames": self._frames}
        messages = ChatMessages.from_raw(doc_to_messages(doc)).to_openai_messages(
            video_kwargs=video_kwargs, pass_video_url=self.pass_video_url
        )
        if self.system_prompt and not (messages and messages[0].get("role") == "system"):
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        until = stop_strings((gen_kwargs or {}).get("until"))
        payload: dict[str, Any] = {"model": self.model_version, "messages": messages}
        payload.update(self.generation_params(gen_kwargs or {}, until))
        return payload, until

    def _frames(self, source: Any) -> list[Any]:
        """``max_frames_num`` frames of a video: of a frame list or folder, centred in equal
        segments; of a video file, decoded by :func:`decode_video` (first and last included)."""
        if is_frame_video(source):
            return sample_video_frames(source, self.max_frames_num, sampling="centered")
        selection = FrameSelection(nframes=self.max_frames_num, max_pixels=self.video_max_pixels)
        return list(decode_video(source, selection).frames)

    def generation_params(self, gen_kwargs: dict[str, Any], until: list[str]) -> dict[str, Any]:
        """API parameters from a task's generation kwargs (see the module docstring)."""
        n = gen_kwargs.get("n")
        if n not in (None, 1):
            raise ConfigError(f"model '{type(self).__name__}' generates one answer per request; got n={n}")
        for key in set(gen_kwargs) - GEN_KWARGS - self._ignored_gen_kwargs:
            self._ignored_gen_kwargs.add(key)
            logger.warning("model %s does not send generation kwarg '%s'", type(self).__name__, key)
        max_new = int(gen_kwargs.get("max_new_tokens") or self.max_new_tokens)
        params: dict[str, Any] = {}
        if self.reasoning:
            params["max_completion_tokens"] = max_new
        else:
            params["max_tokens"] = max_new
            do_sample = gen_kwargs.get("do_sample")
            temperature = gen_kwargs.get("temperature")
            if do_sample is False or (temperature is None and not do_sample):
                params["temperature"] = 0.0
            elif temperature is not None:
                params["temperature"] = float(temperature)
            if gen_kwargs.get("top_p") is not None:
                params["top_p"] = float(gen_kwargs["top_p"])
            if until:
                params["stop"] = until[:MAX_STOP_SEQUENCES]
        if gen_kwargs.get("seed") is not None:
            params["seed"] = int(gen_kwargs["seed"])
        for key in ("presence_penalty", "frequency_penalty"):
            if gen_kwargs.get(key) is not None:
                params[key] = float(gen_kwargs[key])
        return params

    @staticmethod
    def to_answer(completion: ChatCompletion, until: list[str]) -> GenerationResult:
        return GenerationResult(
            text=apply_stop_strings(completion.text, until),
            token_counts=completion.usage,
            latency_s=completion.latency_s,
        )

    @staticmethod
    def to_failure(error: RequestFailedError) -> RequestFailure:
        return RequestFailure(
            str(error),
            attempts=error.attempts,
            retryable=error.retryable,
            token_counts=error.usage,
            kind=error.kind,
        )

    # -- answering --------------------------------------------------------------------------------------

    def _answer(self, request: Instance, gate: RequestGate) -> Answer:
        """One request's final answer, reported to ``gate`` (or the gate's refusal, not sent)."""
        answer: Answer | None = gate.refusal()
        if answer is None:
            try:
                payload, until = self.build_payload(request)
                answer = self.to_answer(self.client.complete(payload, gate), until)
            except RequestFailedError as exc:
                answer = self.to_failure(exc)
            except MediaError as exc:
                answer = media_failure(exc)
        gate.done(answer, request)
        return answer

    def generate_until(self, requests: list[Instance]) -> list[Answer]:
        """Answers in request order; at most ``num_concurrent`` attempts in flight."""
        if not requests:
            return []
        gate = self.gate
        workers = min(REQUESTS_PER_SLOT * self.num_concurrent, len(requests))
        try:
            answers = run_in_threads(lambda r: self._answer(r, gate), requests, workers, "openai")
        except KeyboardInterrupt:
            gate.stop("interrupted")
            raise
        self._log_summary(answers)
        return answers

    def _log_summary(self, answers: list[Answer]) -> None:
        failed = [a for a in answers if isinstance(a, RequestFailure)]
        if failed:
            kinds = sorted({a.kind for a in failed})
            logger.warning(
                "%s: %d of %d requests failed (%s)",
                self.model_version,
                len(failed),
                len(answers),
                ", ".join(kinds),
            )
        stats = self.concurrency.stats()
        if stats.rate_limited:
            paced = "not paced" if stats.rate is None else f"paced at {stats.rate:.1f} requests/s"
            logger.info(
                "%s: %d rate-limited attempts so far; %s (lowest %s), at most %d in flight",
                self.model_version,
                stats.rate_limited,
                paced,
                "-" if stats.min_rate is None else f"{stats.min_rate:.1f}",
                stats.limit,
            )

    def clean(self) -> None:
        """Close the connection pool (it reopens if the model is used again)."""
        self.client.close()
        super().clean()
