"""``ApiChatModel``: what every API chat backend shares, whichever provider it speaks to.

A backend (``openai``, ``claude``, ``gemini``) subclasses it and implements :meth:`ApiChatModel.request_answer`:
build the provider's request from a ``generate_until`` request and send it through the shared retry
loop (:mod:`lmms_eval.models.api.retry`). The rest is here, once:

* the common model args: ``model`` (aliases ``model_version``, ``pretrained``), ``timeout``,
  ``max_retries``, ``retry_backoff_s``, ``max_backoff_s``, ``num_concurrent``,
  ``adaptive_concurrency``, ``max_frames_num``, ``video_max_pixels``, ``system_prompt``,
  ``max_new_tokens``, ``batch_size`` and ``device`` (accepted, unused);
* :meth:`generation_settings`: a task's generation kwargs read the same way for every provider
  (greedy unless the task samples, ``n`` must be 1, kwargs a provider does not send logged once);
* answering: requests run on a thread pool, at most ``num_concurrent`` attempts in flight; the
  backend *streams* (``streams_answers``): the inference stage hands it all requests of a type at
  once and each slot takes the next request as soon as it is free; the run's gate is asked before
  each request and told each final answer as it arrives; a request that fails for good is a
  :class:`~lmms_eval.api.instance.RequestFailure` (recorded, never scored), one whose media cannot
  be read a ``RequestFailure(kind="input")``; Ctrl-C stops the gate and goes on;
* batch mode (``batch=true`` on backends that implement :meth:`ApiChatModel.batch_provider`): the
  requests of a call go to the provider's batch API as one batch (:mod:`lmms_eval.models.api.batch`),
  built and answered by the same code as online requests.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar

from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure
from lmms_eval.api.model import lmms
from lmms_eval.api.path_types import FileOrText, NotAPath
from lmms_eval.errors import ConfigError, ModelArgsError
from lmms_eval.media import (
    FrameSelection,
    MediaError,
    decode_video,
    is_frame_video,
    media_failure,
    sample_video_frames,
)
from lmms_eval.models._common import parse_batch_size
from lmms_eval.models.api.batch import (
    MAX_BATCH_REQUESTS,
    BatchItem,
    BatchProvider,
    BatchSettings,
    StateStore,
    run_batch,
)
from lmms_eval.models.api.concurrency import AdaptiveConcurrency, run_in_threads
from lmms_eval.models.api.retry import RequestFailedError, RetryPolicy

logger = logging.getLogger(__name__)

DEFAULT_MAX_NEW_TOKENS = 1024
# requests in progress per attempt slot: the extra ones wait out retry delays without idling a slot
REQUESTS_PER_SLOT = 2
# gen_kwargs every backend reads; a backend names those it also sends in ``sent_gen_kwargs``
BASE_GEN_KWARGS = frozenset({"until", "max_new_tokens", "temperature", "top_p", "n", "do_sample"})

Answer = GenerationResult | RequestFailure


@dataclass(frozen=True)
class GenerationSettings:
    """A task's generation kwargs, read once: ``temperature`` is 0.0 when greedy, ``None`` when the
    task samples without setting one (the provider's default)."""

    max_new_tokens: int
    temperature: float | None
    top_p: float | None
    until: list[str]
    extra: dict[str, Any]  # seed, penalties, ... (only the kwargs the backend sends)


def stop_strings(until: Any) -> list[str]:
    """``until`` as a list of non-empty stop strings."""
    items = [until] if isinstance(until, str) else list(until or [])
    return [str(s) for s in items if s]


class ApiChatModel(lmms):
    """The shared part of API chat backends; see the module docstring."""

    is_simple = False
    # generation kwargs this backend sends besides BASE_GEN_KWARGS
    sent_gen_kwargs: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        model: NotAPath | None = None,
        model_version: NotAPath | None = None,
        pretrained: NotAPath | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        retry_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        num_concurrent: int = 32,
        adaptive_concurrency: bool = True,
        max_frames_num: int = 10,
        video_max_pixels: int | None = 448 * 448,
        system_prompt: FileOrText | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
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
        if float(timeout) <= 0:
            raise ModelArgsError(f"model '{type(self).__name__}': timeout must be > 0, got {timeout}")
        self.model_version: str = names.pop()
        self.timeout = float(timeout)
        self.num_concurrent = int(num_concurrent)
        self.max_frames_num = int(max_frames_num)
        self.video_max_pixels = None if video_max_pixels is None else int(video_max_pixels)
        self.system_prompt = self._resolve_system_prompt(system_prompt)
        self.max_new_tokens = int(max_new_tokens)
        # the response cache hands a non-streaming model batch_size misses per call (batch mode)
        self.batch_size_per_gpu = max(parse_batch_size(batch_size, type(self).__name__), self.num_concurrent)
        del device  # accepted for command-line compatibility; the model runs behind the API
        self.concurrency = AdaptiveConcurrency(self.num_concurrent, adaptive=bool(adaptive_concurrency))
        try:
            self.retry = RetryPolicy(int(max_retries), float(retry_backoff_s), float(max_backoff_s))
        except ValueError as exc:
            raise ModelArgsError(f"model '{type(self).__name__}': {exc}") from None
        self._ignored_gen_kwargs: set[str] = set()
        self.batch: BatchSettings | None = None
        self._state_store: StateStore | None = None

    @property
    def streams_answers(self) -> bool:
        """All requests of a type in one call (see :mod:`lmms_eval.inference`); in batch mode the
        calls are provider batches of at most ``batch_size`` requests instead."""
        return self.batch is None

    def enable_batch(self, batch: bool, poll_s: float, max_wait_s: float) -> None:
        """Turn batch mode on (``batch=true``): one provider batch per call of :meth:`generate_until`."""
        if not batch:
            return
        if float(poll_s) <= 0 or float(max_wait_s) <= 0:
            raise ModelArgsError(
                f"model '{type(self).__name__}': batch_poll_s and batch_max_wait_s must be > 0, "
                f"got {poll_s} and {max_wait_s}"
            )
        self.batch = BatchSettings(float(poll_s), float(max_wait_s))
        # the evaluator and the response cache hand the model batch_size requests per call
        self.batch_size_per_gpu = MAX_BATCH_REQUESTS

    def keep_state_in(self, store: StateStore) -> None:
        """Where batch ids are kept across runs (the response cache hands its store here)."""
        self._state_store = store

    # -- building requests -------------------------------------------------------------------------------

    def doc_messages(self, request: Instance) -> Any:
        """What the task's ``doc_to_messages`` returns for the request's document."""
        doc_to_messages, _, doc_id, task, split = request.args[:5]
        return doc_to_messages(self.task_dict[task][split][doc_id])

    def _frames(self, source: Any) -> list[Any]:
        """``max_frames_num`` frames of a video: of a frame list or folder, centred in equal
        segments; of a video file, decoded by :func:`decode_video` (first and last included)."""
        if is_frame_video(source):
            return sample_video_frames(source, self.max_frames_num, sampling="centered")
        selection = FrameSelection(nframes=self.max_frames_num, max_pixels=self.video_max_pixels)
        return list(decode_video(source, selection).frames)

    def generation_settings(self, gen_kwargs: dict[str, Any]) -> GenerationSettings:
        """A task's generation kwargs for this backend (see :class:`GenerationSettings`)."""
        name = type(self).__name__
        n = gen_kwargs.get("n")
        if n not in (None, 1):
            raise ConfigError(f"model '{name}' generates one answer per request; got n={n}")
        sent = BASE_GEN_KWARGS | self.sent_gen_kwargs
        for key in set(gen_kwargs) - sent - self._ignored_gen_kwargs:
            self._ignored_gen_kwargs.add(key)
            logger.warning("model %s does not send generation kwarg '%s'", name, key)
        do_sample = gen_kwargs.get("do_sample")
        temperature = gen_kwargs.get("temperature")
        if do_sample is False or (temperature is None and not do_sample):
            temperature = 0.0
        top_p = gen_kwargs.get("top_p")
        extra = {k: gen_kwargs[k] for k in self.sent_gen_kwargs if gen_kwargs.get(k) is not None}
        return GenerationSettings(
            max_new_tokens=int(gen_kwargs.get("max_new_tokens") or self.max_new_tokens),
            temperature=None if temperature is None else float(temperature),
            top_p=None if top_p is None else float(top_p),
            until=stop_strings(gen_kwargs.get("until")),
            extra=extra,
        )

    # -- answering --------------------------------------------------------------------------------------

    def request_answer(self, request: Instance, gate: RequestGate) -> GenerationResult:
        """Send one request (through the shared retry loop) and return its answer; raises
        :class:`RequestFailedError` or :class:`~lmms_eval.media.MediaError`."""
        raise NotImplementedError

    @staticmethod
    def to_failure(error: RequestFailedError) -> RequestFailure:
        return RequestFailure(
            str(error),
            attempts=error.attempts,
            retryable=error.retryable,
            token_counts=error.usage,
            kind=error.kind,
        )

    def _answer(self, request: Instance, gate: RequestGate) -> Answer:
        """One request's final answer, reported to ``gate`` (or the gate's refusal, not sent)."""
        answer: Answer | None = gate.refusal()
        if answer is None:
            try:
                answer = self.request_answer(request, gate)
            except RequestFailedError as exc:
                answer = self.to_failure(exc)
            except MediaError as exc:
                answer = media_failure(exc)
        gate.done(answer, request)
        return answer

    def generate_until(self, requests: list[Instance]) -> list[Answer]:
        """Answers in request order; at most ``num_concurrent`` attempts in flight (or one batch)."""
        if not requests:
            return []
        if self.batch is not None:
            return self._generate_batch(requests, self.batch)
        gate = self.gate
        workers = min(REQUESTS_PER_SLOT * self.num_concurrent, len(requests))
        name = type(self).__name__.lower()
        try:
            answers = run_in_threads(lambda r: self._answer(r, gate), requests, workers, name)
        except KeyboardInterrupt:
            gate.stop("interrupted")
            raise
        self._log_summary(answers)
        return answers

    # -- batch mode -------------------------------------------------------------------------------------

    def batch_provider(self) -> BatchProvider:
        """The provider's batch API (backends that support ``batch=true`` override this)."""
        raise ModelArgsError(f"model '{type(self).__name__}' has no batch API; leave out batch=true")

    def batch_body(self, request: Instance) -> tuple[dict[str, Any], list[str]]:
        """The body of one request in a batch, and its stop strings."""
        raise NotImplementedError

    def batch_answer(self, result: Any, until: list[str]) -> Answer:
        """The answer of one raw batch result (``None``: the batch had no result for it)."""
        raise NotImplementedError

    def _generate_batch(self, requests: list[Instance], settings: BatchSettings) -> list[Answer]:
        """All requests as one provider batch; answers in request order, each reported to the gate."""
        gate = self.gate
        answers: list[Answer | None] = [None] * len(requests)
        items: list[tuple[int, BatchItem, list[str]]] = []
        for index, request in enumerate(requests):
            refusal = gate.refusal()
            try:
                if refusal is None:
                    body, until = self.batch_body(request)
                    items.append((index, BatchItem(f"request-{index}", body), until))
                    continue
                answers[index] = refusal
            except MediaError as exc:
                answers[index] = media_failure(exc)
            gate.done(answers[index], request)
        if items:
            failure: RequestFailure | None = None
            results: dict[str, Any] = {}
            try:
                results = run_batch(
                    self.batch_provider(), [i[1] for i in items], settings, gate, self._state_store
                )
            except RequestFailedError as exc:
                failure = self.to_failure(exc)
            for index, item, until in items:
                answer = failure or self.batch_answer(results.get(item.custom_id), until)
                answers[index] = answer
                gate.done(answer, requests[index])
        done = [a for a in answers if a is not None]
        self._log_summary(done)
        return done

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


__all__ = [
    "DEFAULT_MAX_NEW_TOKENS",
    "REQUESTS_PER_SLOT",
    "Answer",
    "ApiChatModel",
    "GenerationSettings",
    "stop_strings",
]
