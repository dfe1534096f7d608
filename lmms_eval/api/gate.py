"""``RequestGate``: what a model backend asks before it sends a request, and tells after.

The inference stage puts one gate on the model (``lm.gate``) for the whole run. A backend calls

* :meth:`RequestGate.admit` before each request it is about to send (and, with ``retry=True``,
  before each retry of one). ``None`` means go ahead; a string is the reason not to, and the
  backend returns ``RequestFailure(reason, attempts=0, kind="not_sent")`` for that request
  instead. Reasons: the ``--max_tokens`` budget is spent, the circuit breaker of the task is open
  (its first ``breaker_after`` answers all failed), or the run was stopped (Ctrl-C).
* :meth:`RequestGate.done` after each answer (a ``str``, ``GenerationResult``, loglikelihood pair or
  ``RequestFailure``), with the request it answers. This moves the progress bar per request, adds
  the answer's tokens to the budget, feeds the circuit breaker, keeps the answer until the call
  ends and hands it to the listeners (:meth:`RequestGate.listen`: the inference stage records it on
  the request, the response cache stores it), so an answer is kept as soon as it exists.
* :meth:`RequestGate.sleep` instead of ``time.sleep`` for retry delays: it returns early (``False``)
  when the run is stopped, so no thread keeps a process alive after Ctrl-C.

A backend that never calls :meth:`done` still works: the inference stage then reports its answers
when its call returns (progress, budget and breaker are then enforced between calls only).

The gate is thread-safe: threads of a pool and tasks of an event loop may share it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lmms_eval.api.instance import FailureKind, RequestFailure, split_generation_output

# hears each answer reported to the gate: (request, output), in the thread that reported it
AnswerListener = Callable[[Any, Any], None]
# a task whose first answers all failed this many times is stopped (dead base_url, wrong key)
DEFAULT_BREAKER_AFTER = 10


@dataclass(frozen=True)
class GateState:
    """A snapshot of the gate, for the results file and tests."""

    used_tokens: int
    budget: int | None
    budget_exhausted: bool
    breaker_open: str | None
    stopped: str | None
    reported: int


class RequestGate:
    """Admission control, progress and stop signal between the inference stage and a backend."""

    def __init__(
        self,
        max_tokens: int | None = None,
        breaker_after: int | None = DEFAULT_BREAKER_AFTER,
        on_progress: Callable[[int], Any] | None = None,
    ) -> None:
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self.budget = max_tokens
        self.breaker_after = breaker_after if breaker_after and breaker_after > 0 else None
        self.on_progress = on_progress
        self._lock = threading.RLock()  # re-entrant: a progress callback may ask for the state
        self._stop_event = threading.Event()
        self._stopped: str | None = None
        self._used = 0
        self._reported = 0
        self._task = ""
        self._task_answers = 0
        self._task_failures = 0
        self._breaker: str | None = None
        self._answers: dict[int, tuple[Any, Any]] = {}
        self._listeners: tuple[AnswerListener, ...] = ()

    # -- what the inference stage calls ------------------------------------------------------------

    def start_task(self, task_name: str) -> None:
        """A new task begins: its circuit breaker starts closed."""
        with self._lock:
            self._task = task_name
            self._task_answers = 0
            self._task_failures = 0
            self._breaker = None

    def start_chunk(self) -> int:
        """Forget the answers of the last call; returns the count of answers reported so far."""
        with self._lock:
            self._answers.clear()
            return self._reported

    @contextmanager
    def listen(self, listener: AnswerListener) -> Iterator[None]:
        """Hand ``listener`` every answer reported (with its request) while the block runs.

        Listeners run in the reporting thread, outside the gate's lock, in the order they were
        added; they must be thread-safe and quick.
        """
        with self._lock:
            self._listeners = (*self._listeners, listener)
        try:
            yield
        finally:
            with self._lock:
                self._listeners = tuple(x for x in self._listeners if x is not listener)

    def stop(self, reason: str = "interrupted") -> None:
        """Stop the run: nothing more is admitted and sleeping retries wake up at once."""
        with self._lock:
            if self._stopped is None:
                self._stopped = reason
        self._stop_event.set()

    def answer_of(self, request: Any) -> Any | None:
        """The answer reported for ``request`` in the current call, if any."""
        with self._lock:
            entry = self._answers.get(id(request))
        return entry[1] if entry is not None and entry[0] is request else None

    def state(self) -> GateState:
        with self._lock:
            return GateState(
                used_tokens=self._used,
                budget=self.budget,
                budget_exhausted=self._budget_spent(),
                breaker_open=self._breaker,
                stopped=self._stopped,
                reported=self._reported,
            )

    # -- what backends call ---------------------------------------------------------------------------

    @property
    def stopped(self) -> bool:
        return self._stop_event.is_set()

    def admit(self, retry: bool = False) -> str | None:
        """``None`` if a request (or, with ``retry``, a retry of one in flight) may be sent now."""
        with self._lock:
            if self._stopped is not None:
                return f"not sent: the run was {self._stopped}"
            if self._breaker is not None:
                return self._breaker
            if not retry and self._budget_spent():
                return f"not sent: the token budget of {self.budget} (--max_tokens) was spent"
        return None

    def refusal(self, retry: bool = False) -> RequestFailure | None:
        """:meth:`admit` as the ``RequestFailure`` to return in place of an answer, or ``None``."""
        reason = self.admit(retry)
        return None if reason is None else RequestFailure(reason, attempts=0, retryable=True, kind="not_sent")

    def done(self, output: Any, request: Any = None) -> None:
        """Record one answer: progress, tokens, circuit breaker; keep it and hand it to the listeners."""
        value, counts = split_generation_output(output)
        failed = isinstance(value, RequestFailure) and value.kind != "not_sent"
        with self._lock:
            self._reported += 1
            if request is not None:
                self._answers[id(request)] = (request, output)
            if counts:
                self._used += int(counts.get("input_tokens") or 0) + int(counts.get("output_tokens") or 0)
            if not (isinstance(value, RequestFailure) and value.kind == "not_sent"):
                self._task_answers += 1
                self._task_failures += int(failed)
                self._check_breaker(value)
            if self.on_progress is not None:  # under the lock: progress bars are not thread-safe
                self.on_progress(1)
            listeners = self._listeners
        if request is not None:
            for listener in listeners:
                listener(request, output)

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds`` unless the run stops first; ``True`` if the full time passed."""
        if seconds <= 0:
            return not self.stopped
        return not self._stop_event.wait(seconds)

    # -- internals (lock held) -------------------------------------------------------------------------

    def _budget_spent(self) -> bool:
        return self.budget is not None and self._used >= self.budget

    def _check_breaker(self, value: Any) -> None:
        limit = self.breaker_after
        if limit is None or self._breaker is not None or self._task_answers != limit:
            return
        if self._task_failures == limit:
            error = value.error if isinstance(value, RequestFailure) else ""
            self._breaker = (
                f"not sent: the first {limit} requests of task '{self._task}' all failed, so the rest "
                f"were not sent (last error: {error})"
            )


__all__ = ["DEFAULT_BREAKER_AFTER", "AnswerListener", "FailureKind", "GateState", "RequestGate"]
