"""``ResponseCacheSession``: the response cache in front of any model backend.

:meth:`ResponseCacheSession.model_call` returns a ``model_call`` for
:func:`lmms_eval.inference.run_requests`. For each call it looks every cacheable request up, sends
only the misses to the model (in request order: all at once to a streaming backend, else
``flush_size`` at a time), commits each good answer as soon as the backend reports it through the
run's gate (``lm.gate.done(answer, request)``; the others when the model call returns), and gives
back the outputs in request order. Backends need no cache code of their own.

Cacheable: loglikelihood requests, and generation requests that are greedy (temperature 0 or
unset, no ``do_sample``, at most one answer); with ``cache_sampling=True`` sampled generations too
(each repeat has its own key, so ``--repeats`` still gives distinct samples). Failed, empty and
malformed answers are never stored, so a rerun asks the model for exactly those again.

The model fingerprint in every key covers the model's content (:mod:`lmms_eval.caching.content`):
pass the model instance (``lm``) or a ``content_fingerprint`` of your own; otherwise the local files
named by the model args are looked at, and a model given to :meth:`ResponseCacheSession.model_call`
that offers ``content_fingerprint()`` is asked then.

So when the model call raises (Ctrl-C, a crash) or the process dies, the answers the backend
already reported are stored, and a rerun does not ask for them again.

A model that offers ``keep_state_in(store)`` is handed a :class:`KeptState`: a few JSON values of its
own kept in the same cache (e.g. the id of a submitted provider batch, so that a restarted run
collects that batch instead of submitting it again).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from lmms_eval.caching.content import (
    ContentFingerprint,
    given_fingerprint,
    model_content_fingerprint,
    offers_fingerprint,
)
from lmms_eval.caching.keys import (
    content_hash,
    decode_response,
    encode_response,
    is_deterministic,
    model_fingerprint,
    request_gen_kwargs,
    request_key,
)
from lmms_eval.caching.response_cache import CacheEntry, ResponseCache
from lmms_eval.inference import ModelCall, default_model_call

logger = logging.getLogger(__name__)
_COUNTERS_LOCK = threading.Lock()


@dataclass
class CacheCounters:
    """What the cache did during a run."""

    hits: int = 0  # answered from the cache
    misses: int = 0  # cacheable, not in the cache: sent to the model
    uncacheable: int = 0  # sampled generations (without cache_sampling) or unhashable prompts: sent
    stored: int = 0  # answers committed to the cache
    rejected: int = 0  # answers not stored: failures, empty or malformed

    @property
    def model_calls(self) -> int:
        """Requests sent to the model."""
        return self.misses + self.uncacheable


@dataclass
class _Pending:
    position: int
    request: Instance
    entry: CacheEntry | None = None


@dataclass(frozen=True)
class KeptState:
    """JSON values a model keeps in the response cache under keys of its own (scoped to the model id,
    not to its arguments: a rerun with other polling arguments finds them); written at once, so they
    survive a killed run."""

    cache: ResponseCache
    model_id: str
    model_fp: str

    def _key(self, key: str) -> str:
        return f"state:{self.model_id}:{key}"

    def get(self, key: str) -> dict[str, Any] | None:
        return self.cache.get_many([self._key(key)]).get(self._key(key))

    def put(self, key: str, value: dict[str, Any]) -> None:
        entry = CacheEntry(
            self._key(key), "state", "__model_state__", 0, 0, 0, self.model_id, self.model_fp, value
        )
        self.cache.put(entry)


@dataclass
class ResponseCacheSession:
    """One run's use of a :class:`ResponseCache` for one model.

    Creating a session holds the cache (:meth:`ResponseCache.hold`) until :meth:`close`.
    """

    cache: ResponseCache
    model_id: str
    model_args: Mapping[str, Any] = field(default_factory=dict)
    cache_sampling: bool = False
    flush_size: int | None = None  # answers per model call and commit; default: the model's batch size
    counters: CacheCounters = field(default_factory=CacheCounters)
    lm: Any = None  # the model instance; its content_fingerprint() is used when it has one
    content_fingerprint: str | None = None  # given: used instead of looking at the model
    model_fp: str = field(init=False, default="")
    content: ContentFingerprint = field(init=False, default_factory=ContentFingerprint)

    def __post_init__(self) -> None:
        self._fingerprint(self.lm)
        self.cache.hold()

    def _fingerprint(self, lm: Any) -> None:
        if self.content_fingerprint is not None:
            self.content = given_fingerprint(self.content_fingerprint, "given")
        else:
            self.content = model_content_fingerprint(self.model_args, lm)
        self.model_fp = model_fingerprint(self.model_id, self.model_args, self.content.value)
        if self.content.value:
            logger.debug(
                "response cache: model content fingerprint %s (from %s)",
                self.content.value,
                ", ".join(self.content.sources),
            )

    def model_call(
        self, lm: lmms, task_fingerprints: Mapping[str, str], inner: ModelCall | None = None
    ) -> ModelCall:
        """A ``model_call`` that answers from the cache and sends only misses to ``lm`` (or ``inner``).

        ``task_fingerprints`` maps task names to :meth:`ConfigurableTask.fingerprint`; requests of
        other tasks are not cached. The repeat index of a request is how many times the same
        :class:`Instance` was seen before by this call object (the evaluator sends each request
        ``repeats`` times), so create one per :func:`run_requests` call.
        """
        if self.content_fingerprint is None and lm is not self.lm and offers_fingerprint(lm):
            self.lm = lm
            self._fingerprint(lm)
        send = inner or default_model_call(lm)
        keep_state_in = getattr(lm, "keep_state_in", None)
        if callable(keep_state_in):
            keep_state_in(KeptState(self.cache, self.model_id, self.model_fp))
        seen: dict[int, tuple[Instance, int]] = {}
        flush = max(1, int(self.flush_size or getattr(lm, "batch_size", 1) or 1))
        streams = self.flush_size is None and bool(getattr(lm, "streams_answers", False))

        def call(request_type: str, requests: list[Instance]) -> list[Any]:
            outputs: list[Any] = [None] * len(requests)
            pending: list[_Pending] = []
            for position, request in enumerate(requests):
                repeat = seen.get(id(request), (request, -1))[1] + 1
                seen[id(request)] = (request, repeat)
                pending.append(
                    _Pending(position, request, self._entry(lm, request, repeat, task_fingerprints))
                )
            found = self.cache.get_many([p.entry.key for p in pending if p.entry is not None])
            misses: list[_Pending] = []
            for item in pending:
                record = found.get(item.entry.key) if item.entry is not None else None
                answer = decode_response(request_type, record) if record is not None else None
                if answer is None:
                    misses.append(item)
                    if item.entry is None:
                        self.counters.uncacheable += 1
                    else:
                        self.counters.misses += 1
                else:
                    outputs[item.position] = answer
                    self.counters.hits += 1
            step = max(1, len(misses)) if streams else flush
            for begin in range(0, len(misses), step):
                batch = misses[begin : begin + step]
                answers = self._send(send, lm, request_type, batch, streams)
                if len(answers) != len(batch):
                    raise RuntimeError(
                        f"model {type(lm).__name__}.{request_type} returned {len(answers)} results "
                        f"for {len(batch)} requests"
                    )
                for item, answer in zip(batch, answers):
                    outputs[item.position] = answer
            return outputs

        return call

    def _send(
        self, send: ModelCall, lm: lmms, request_type: str, batch: list[_Pending], streams: bool
    ) -> list[Any]:
        """``send`` one batch and store its good answers.

        The answers the backend reports through the run's gate are heard as they come: a streaming
        backend's are stored at once; another backend's are kept and stored only if ``send``
        raises (what it returns is authoritative, and may differ from what it reported). The
        others are stored when ``send`` returns. A request sent twice in the batch (repeats) is
        stored only then: the gate does not say which repeat an answer is.
        """
        times = Counter(id(item.request) for item in batch)
        by_request = {id(item.request): item for item in batch if item.entry is not None}
        heard_answers: dict[int, Any] = {}
        lock = threading.Lock()

        def heard(request: Any, answer: Any) -> None:
            item = by_request.get(id(request))
            if item is None or item.request is not request or times[id(request)] != 1:
                return
            with lock:
                if id(request) in heard_answers:
                    return
                heard_answers[id(request)] = answer
            if streams:
                self._store_safely(request_type, [item], [answer])

        gate = getattr(lm, "gate", None)
        listening = gate.listen(heard) if gate is not None else contextlib.nullcontext()
        try:
            with listening:
                answers = send(request_type, [item.request for item in batch])
        except BaseException:
            if not streams:
                done = [by_request[key] for key in heard_answers]
                self._store_safely(request_type, done, [heard_answers[id(i.request)] for i in done])
            if heard_answers:
                logger.info("response cache: kept the answers finished before the model call stopped")
            raise
        if len(answers) == len(batch):
            rest = [
                (item, answer)
                for item, answer in zip(batch, answers)
                if not streams or heard_answers.get(id(item.request)) is not answer
            ]
            self._store(request_type, [item for item, _ in rest], [answer for _, answer in rest])
        return answers

    def _store_safely(self, request_type: str, batch: list[_Pending], answers: list[Any]) -> None:
        """:meth:`_store` that logs instead of raising (it runs in a backend thread or while an
        interrupt or error goes on, which it must not hide)."""
        try:
            self._store(request_type, batch, answers)
        except Exception as exc:
            logger.error("response cache: could not store %d answer(s): %s", len(batch), exc)

    def _entry(
        self, lm: lmms, request: Instance, repeat: int, task_fingerprints: Mapping[str, str]
    ) -> CacheEntry | None:
        """The cache entry (without response) for one answer, or ``None`` when it is not cacheable."""
        task_fp = task_fingerprints.get(request.task_name)
        if task_fp is None:
            return None
        if not self.cache_sampling and not is_deterministic(
            request.request_type, request_gen_kwargs(request)
        ):
            return None
        try:
            content = content_hash(request, lm.get_doc(request))
        except Exception as exc:  # the model will meet (and report) the same problem
            logger.debug("response cache: cannot hash %s doc %s: %s", request.task_name, request.doc_id, exc)
            return None
        return CacheEntry(
            key=request_key(request, repeat, content, task_fp, self.model_fp),
            request_type=request.request_type,
            task_name=request.task_name,
            doc_id=request.doc_id,
            idx=request.idx,
            repeat=repeat,
            model=self.model_id,
            model_fingerprint=self.model_fp,
            response={},
        )

    def _store(self, request_type: str, batch: list[_Pending], answers: list[Any]) -> None:
        entries: list[CacheEntry] = []
        for item, answer in zip(batch, answers):
            if item.entry is None:
                continue
            record = encode_response(request_type, answer)
            if record is None:
                with _COUNTERS_LOCK:
                    self.counters.rejected += 1
                continue
            entries.append(replace(item.entry, response=record))
        stored = self.cache.put_many(entries)
        with _COUNTERS_LOCK:  # answers may be stored from the backend's threads
            self.counters.stored += stored

    def counts(self) -> dict[str, int]:
        """This process's counters (``hits``, ``misses``, ..., ``model_calls``)."""
        c = self.counters
        return {
            "hits": c.hits,
            "misses": c.misses,
            "uncacheable": c.uncacheable,
            "stored": c.stored,
            "rejected": c.rejected,
            "model_calls": c.model_calls,
        }

    def summary(self, counts: Mapping[str, int] | None = None) -> dict[str, Any]:
        """The ``cache`` section of the results; ``counts`` (the counters of all ranks of a
        multi-process run, summed) replace this process's own."""
        return {
            "path": str(self.cache.path),
            **(dict(counts) if counts is not None else self.counts()),
            "cache_sampling": self.cache_sampling,
            "model_fingerprint": self.model_fp,
            "content_fingerprint": self.content.value,
            "content_sources": list(self.content.sources),
        }

    def close(self) -> None:
        """Merge this run's answers into the shared cache file."""
        self.cache.close()
        c = self.counters
        logger.info(
            "response cache %s: %d hits, %d misses, %d not cacheable, %d stored, %d rejected",
            self.cache.path,
            c.hits,
            c.misses,
            c.uncacheable,
            c.stored,
            c.rejected,
        )


__all__ = ["CacheCounters", "ResponseCacheSession"]
