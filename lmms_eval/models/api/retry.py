"""The one retry loop of API backends, whatever speaks to the provider (httpx or a vendor SDK).

A backend hands :func:`call_with_retries` (or :func:`acall_with_retries`) an *attempt*: a callable
that sends the request once and returns the parsed answer, or an :class:`AttemptError` saying why
it failed and whether a retry can fix it. The loop does the rest, the same way for every provider:

* each attempt holds a slot of the backend's
  :class:`~lmms_eval.models.api.concurrency.AdaptiveConcurrency` (pacing after storms of 429s);
* the gate (the run's :class:`~lmms_eval.api.gate.RequestGate`: budget, circuit breaker, Ctrl-C) is
  asked right before every attempt, and retry delays end early when it stops;
* waits follow :class:`RetryPolicy`: the server's ``Retry-After`` when it gave one, else jittered
  exponential backoff; a request is tried ``max_retries + 1`` times at most;
* a final failure raises :class:`RequestFailedError` (redacted).

:func:`status_error` is the shared rule of which HTTP statuses are retried: 429 (except
``insufficient_quota``), 408, 409, 425 and every 5xx. An SDK-based backend turns the SDK's
exceptions into :class:`AttemptError` with it, and builds its SDK client with the SDK's own retries
off (``max_retries=0``), so there is one retry policy.

This module imports no HTTP library.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any, Generic, Protocol, TypeVar

from lmms_eval.api.instance import FailureKind, TokenCounts
from lmms_eval.errors import LmmsEvalError
from lmms_eval.models.api.concurrency import AdaptiveConcurrency, Outcome, Slot, sleep_unless_stopped
from lmms_eval.secrets import redact_text

logger = logging.getLogger(__name__)

T = TypeVar("T")
RATE_LIMIT_STATUSES = frozenset({429, 503})
RETRYABLE_CLIENT_STATUSES = frozenset({408, 409, 425, 429})
# a 429 that no retry fixes: the account is out of credit
NOT_RETRYABLE_CODES = frozenset({"insufficient_quota"})
RETRY_AFTER_JITTER = 0.1
MAX_BODY_IN_ERROR = 300


class Gate(Protocol):
    """What the loop asks of a gate (:class:`~lmms_eval.api.gate.RequestGate` is one)."""

    @property
    def stopped(self) -> bool: ...

    def admit(self, retry: bool = False) -> str | None: ...

    def sleep(self, seconds: float) -> bool: ...


class RequestFailedError(LmmsEvalError):
    """A request that failed for good: not retryable, still failing after every retry, refused by
    the model, or not sent because the gate said no.

    The message is the last error (redacted); ``status`` is its HTTP status (``None`` for timeouts
    and connection errors); ``kind`` is a :data:`~lmms_eval.api.instance.FailureKind`; ``usage``
    the tokens the reply reported, if any (a refusal costs tokens too).
    """

    def __init__(
        self,
        message: str,
        attempts: int = 1,
        retryable: bool = True,
        status: int | None = None,
        kind: FailureKind = "error",
        usage: TokenCounts | None = None,
    ):
        super().__init__(redact_text(message))
        self.attempts = attempts
        self.retryable = retryable
        self.status = status
        self.kind: FailureKind = kind
        self.usage = usage


@dataclass(frozen=True)
class AttemptError:
    """Why one attempt failed: ``retryable``, the server's ``retry_after`` (seconds) if it gave one,
    ``rate_limited`` (a 429 or 503, which steers pacing)."""

    message: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None
    rate_limited: bool = False
    kind: FailureKind = "error"
    usage: TokenCounts | None = None


@dataclass(frozen=True)
class Attempted(Generic[T]):
    """What an attempt returned, the wall time of that (successful) attempt and the attempts made."""

    value: T
    latency_s: float
    attempts: int


class RetryPolicy:
    """How many times to retry and how long to wait: exponential backoff with full jitter.

    ``seed`` makes the jitter reproducible (two policies with the same seed give the same delays).
    """

    def __init__(
        self,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        seed: int | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if backoff_s < 0 or max_backoff_s < 0:
            raise ValueError("retry_backoff_s and max_backoff_s must be >= 0")
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before a retry: ``retry_after`` plus up to 10% when the server gave one,
        else full jitter for the ``retry``-th failure without one (1 for the first)."""
        if retry_after is not None:
            if retry_after > self.max_backoff_s:
                logger.warning(
                    "server asked to retry after %.1f s; waiting max_backoff_s=%.1f s instead",
                    retry_after,
                    self.max_backoff_s,
                )
            with self._lock:
                stretch = 1.0 + self._rng.uniform(0.0, RETRY_AFTER_JITTER)
            return min(self.max_backoff_s, retry_after * stretch)
        ceiling = min(self.max_backoff_s, self.backoff_s * 2.0 ** min(max(retry - 1, 0), 60))
        with self._lock:
            return self._rng.uniform(0.0, ceiling)


# -- classifying failures -----------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        with contextlib.suppress(ValueError):
            value = float(milliseconds) / 1000.0
            if math.isfinite(value):
                return max(0.0, value)
    raw = lowered.get("retry-after")
    if raw is None or not raw.strip():
        return None
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def error_message(status: int, body: bytes) -> str:
    """``HTTP 401 Unauthorized: <the server's message>``."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    try:
        detail = error_detail(json.loads(body) if body else None)
    except ValueError:
        detail = body.decode("utf-8", "replace").strip()[:MAX_BODY_IN_ERROR]
    head = f"HTTP {status} {phrase}".rstrip()
    return f"{head}: {detail}" if detail else head


def error_detail(data: Any) -> str:
    """The message of an error body: ``{"error": {"message": ...}}`` (OpenAI, Anthropic, Google)
    and variants."""
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message") or err
        return str(err if err is not None else data)[:MAX_BODY_IN_ERROR]
    return "" if data is None else str(data)[:MAX_BODY_IN_ERROR]


def error_code(body: bytes) -> str | None:
    """The ``code`` (or ``type``) of an error body's ``error`` object."""
    try:
        data = json.loads(body) if body else None
    except ValueError:
        return None
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return None
    code = err.get("code") or err.get("type")
    return str(code) if code is not None else None


def status_error(status: int, headers: Mapping[str, str], body: bytes) -> AttemptError:
    """The failed attempt of an HTTP error response: which statuses are retried (see the module
    docstring), the server's ``Retry-After``, and whether it was rate limited."""
    retryable = status >= 500 or status in RETRYABLE_CLIENT_STATUSES
    if status == 429 and error_code(body) in NOT_RETRYABLE_CODES:
        retryable = False
    return AttemptError(
        error_message(status, body),
        retryable=retryable,
        status=status,
        retry_after=parse_retry_after(headers) if retryable else None,
        rate_limited=retryable and status in RATE_LIMIT_STATUSES,
    )


# -- the loop -----------------------------------------------------------------------------------------


class _Tries:
    """The attempts of one request: how many, the last error, and what to raise when it ends."""

    def __init__(self, policy: RetryPolicy, gate: Gate | None) -> None:
        self.policy = policy
        self.gate = gate
        self.count = 0
        self.unguided = 0  # failures that came without a Retry-After (they set the backoff)
        self.last: AttemptError | None = None

    def admission(self, slot: Slot | None) -> str | None:
        """Why the next attempt must not be sent (asked right before sending), or ``None``."""
        reason = self.gate.admit(retry=self.count > 0) if self.gate is not None else None
        if reason is None and slot is None:
            reason = "not sent: the run was stopped"
        return reason

    def refused(self, reason: str) -> RequestFailedError:
        last = self.last
        if last is None:
            return RequestFailedError(reason, attempts=0, retryable=True, kind="not_sent")
        logger.info("request not retried (%s): %s", reason, redact_text(last.message))
        return RequestFailedError(
            f"{last.message} ({reason.replace('not sent', 'not retried', 1)})", self.count, True, last.status
        )

    def delay_after(self, error: AttemptError) -> float:
        """The wait before the next attempt; raises :class:`RequestFailedError` when there is none."""
        self.last = error
        if not error.retryable:
            if error.kind == "error":
                logger.warning("request failed (not retryable): %s", redact_text(error.message))
            raise RequestFailedError(error.message, self.count, False, error.status, error.kind, error.usage)
        if self.count > self.policy.max_retries:
            logger.warning("request failed after %d attempt(s): %s", self.count, redact_text(error.message))
            raise RequestFailedError(error.message, self.count, True, error.status)
        if error.retry_after is None:
            self.unguided += 1
        delay = self.policy.delay(max(1, self.unguided), error.retry_after)
        logger.debug(
            "attempt %d failed (%s); retrying in %.3f s", self.count, redact_text(error.message), delay
        )
        return delay

    def stopped(self) -> RequestFailedError:
        reason = self.gate.admit(retry=True) if self.gate is not None else None
        return self.refused(reason or "not sent: the run was stopped")


def _release(concurrency: AdaptiveConcurrency | None, slot: Slot | None, outcome: Outcome) -> None:
    if slot is not None and concurrency is not None:
        slot.outcome = outcome
        concurrency.release(slot)


def _after_failure(
    concurrency: AdaptiveConcurrency | None, slot: Slot | None, error: AttemptError, tries: _Tries
) -> float:
    """The wait before the next attempt (or the final error). The slot is given back only once that
    is decided, so that a final failure is reported (and can open the circuit breaker) about as soon
    as its slot lets another attempt out."""
    try:
        return tries.delay_after(error)
    finally:
        _release(concurrency, slot, "rate_limited" if error.rate_limited else "error")


def call_with_retries(
    attempt: Callable[[], T | AttemptError],
    policy: RetryPolicy,
    concurrency: AdaptiveConcurrency | None = None,
    gate: Gate | None = None,
) -> Attempted[T]:
    """Run ``attempt`` until it returns an answer; raises :class:`RequestFailedError` when it fails
    for good (see the module docstring). ``attempt`` must turn the failures it expects into an
    :class:`AttemptError`; any other exception gives the slot back and goes on."""
    tries = _Tries(policy, gate)
    while True:
        slot = concurrency.acquire(gate, tries.count > 0) if concurrency else Slot(time.monotonic())
        reason = tries.admission(slot)
        if reason is not None:
            _release(concurrency, slot, "cancelled")
            raise tries.refused(reason)
        tries.count += 1
        started = time.perf_counter()
        try:
            result = attempt()
        except BaseException:
            _release(concurrency, slot, "cancelled")
            raise
        latency = time.perf_counter() - started
        if not isinstance(result, AttemptError):
            _release(concurrency, slot, "ok")
            return Attempted(result, latency, tries.count)
        delay = _after_failure(concurrency, slot, result, tries)
        if gate is None:
            time.sleep(delay)
        elif not gate.sleep(delay):
            raise tries.stopped()


async def acall_with_retries(
    attempt: Callable[[], Awaitable[T | AttemptError]],
    policy: RetryPolicy,
    concurrency: AdaptiveConcurrency | None = None,
    gate: Gate | None = None,
) -> Attempted[T]:
    """``await`` version of :func:`call_with_retries`; cancelling it abandons the attempt in flight."""
    tries = _Tries(policy, gate)
    while True:
        slot = await concurrency.aacquire(gate, tries.count > 0) if concurrency else Slot(time.monotonic())
        reason = tries.admission(slot)
        if reason is not None:
            _release(concurrency, slot, "cancelled")
            raise tries.refused(reason)
        tries.count += 1
        started = time.perf_counter()
        try:
            result = await attempt()
        except BaseException:  # cancelled: the attempt is abandoned
            _release(concurrency, slot, "cancelled")
            raise
        latency = time.perf_counter() - started
        if not isinstance(result, AttemptError):
            _release(concurrency, slot, "ok")
            return Attempted(result, latency, tries.count)
        if not await sleep_unless_stopped(_after_failure(concurrency, slot, result, tries), gate):
            raise tries.stopped()


__all__ = [
    "AttemptError",
    "Attempted",
    "Gate",
    "RequestFailedError",
    "RetryPolicy",
    "acall_with_retries",
    "call_with_retries",
    "error_detail",
    "error_message",
    "parse_retry_after",
    "status_error",
]
