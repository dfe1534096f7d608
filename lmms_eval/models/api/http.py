"""The shared HTTP client of OpenAI-compatible chat-completions APIs (sync and asyncio).

:class:`ChatCompletionClient` POSTs a payload to ``{base_url}/chat/completions`` and returns a
:class:`ChatCompletion`, retrying what a retry can fix:

* retried: HTTP 429 (except ``insufficient_quota``), 408, 409, 425 and every 5xx; timeouts;
  connection errors and connections dropped without a response; a 2xx body that is not JSON or has
  no ``choices``;
* not retried: every other 4xx (400, 401, 403, 404, 422, ...) and invalid URLs. They raise
  :class:`RequestFailedError` (``retryable=False``) at once with the server's error message;
* not an answer, not retried: a reply whose message ``content`` is null with a ``refusal``
  (``kind="refusal"``, the refusal text as the error) or with ``finish_reason: "content_filter"``
  (``kind="filtered"``).

**Waits.** After a failure with a ``Retry-After`` (seconds, an HTTP date, or OpenAI's
``retry-after-ms``) the request waits that long, plus up to 10% jitter, at most ``max_backoff_s``:
the server said when, so neither more nor less. Other failures wait a random time in ``[0,
min(max_backoff_s, retry_backoff_s * 2**(k-1))]`` ("full jitter"), ``k`` counting the failures of the
request that came without a ``Retry-After``. A request is tried ``max_retries + 1`` times in all; the
last error is raised as :class:`RequestFailedError` (``retryable=True``). Only the request that
failed waits: with a :class:`~lmms_eval.models.api.concurrency.AdaptiveConcurrency` each attempt
holds one of its slots (a request waiting to retry holds none) and the limiter paces attempts when
the server rate-limits (see that module for the rule).

**Gate.** ``gate`` (on the client, or per call) is an optional hook, e.g. the run's
:class:`~lmms_eval.api.gate.RequestGate`: every attempt asks ``gate.admit(retry=...)`` right before
it is sent, and retry delays and pacing waits use ``gate.sleep``, so a stopped run (Ctrl-C, the
circuit breaker, the token budget) sends nothing more and its waiting requests end at once. A first
attempt the gate refuses raises :class:`RequestFailedError` with ``kind="not_sent"``.

**Secrets.** The API key (and ``OPENAI_API_KEY``) are registered with :mod:`lmms_eval.secrets`;
every error message and log line built here is redacted, so a server that echoes the key in an
error body does not leak it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import random
import ssl
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any, Protocol

from lmms_eval.api.instance import FailureKind, TokenCounts
from lmms_eval.errors import LmmsEvalError, MissingDependencyError
from lmms_eval.models.api.concurrency import AdaptiveConcurrency, Outcome, Slot, sleep_unless_stopped
from lmms_eval.secrets import redact_text, register_secret

try:
    import httpx
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("httpx", "api", "The OpenAI-compatible API client") from exc

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# requests in flight per async connection pool: httpcore's async pool does work quadratic in its
# size on every request, so a loop spreads its requests over several small pools
ASYNC_POOL_SIZE = 8
RATE_LIMIT_STATUSES = frozenset({429, 503})
RETRYABLE_CLIENT_STATUSES = frozenset({408, 409, 425, 429})
# a 429 that no retry fixes: the account is out of credit
NOT_RETRYABLE_CODES = frozenset({"insufficient_quota"})
RETRY_AFTER_JITTER = 0.1
_MAX_BODY_IN_ERROR = 300


class Gate(Protocol):
    """What the client asks of a gate (:class:`~lmms_eval.api.gate.RequestGate` is one)."""

    @property
    def stopped(self) -> bool: ...

    def admit(self, retry: bool = False) -> str | None: ...

    def sleep(self, seconds: float) -> bool: ...


@dataclass(frozen=True)
class ChatCompletion:
    """The first choice of a chat completion.

    ``latency_s`` is the wall time of the successful attempt (retry delays excluded);
    ``attempts`` counts every attempt, the successful one included.
    """

    text: str
    finish_reason: str | None
    usage: TokenCounts | None
    latency_s: float
    attempts: int
    raw: dict[str, Any]


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
class _AttemptError:
    message: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None
    rate_limited: bool = False
    kind: FailureKind = "error"
    usage: TokenCounts | None = None


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


# -- interpreting responses ---------------------------------------------------------------------------


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
        detail = _error_detail(json.loads(body) if body else None)
    except ValueError:
        detail = body.decode("utf-8", "replace").strip()[:_MAX_BODY_IN_ERROR]
    head = f"HTTP {status} {phrase}".rstrip()
    return f"{head}: {detail}" if detail else head


def _error_detail(data: Any) -> str:
    """The message of an OpenAI-style error body (``{"error": {"message": ...}}`` and variants)."""
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message") or err
        return str(err if err is not None else data)[:_MAX_BODY_IN_ERROR]
    return "" if data is None else str(data)[:_MAX_BODY_IN_ERROR]


def parse_usage(usage: Any) -> TokenCounts | None:
    """Token counts from an OpenAI ``usage`` object (reasoning tokens when the API reports them)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return TokenCounts(
        input_tokens=_as_int(usage.get("prompt_tokens")),
        output_tokens=_as_int(usage.get("completion_tokens")),
        reasoning_tokens=_as_int(reasoning),
    )


def _as_int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _error_code(body: bytes) -> str | None:
    """The ``code`` (or ``type``) of an OpenAI-style error body."""
    try:
        data = json.loads(body) if body else None
    except ValueError:
        return None
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return None
    code = err.get("code") or err.get("type")
    return str(code) if code is not None else None


def _shape_problem(data: Any) -> str | None:
    """Why a 2xx JSON body is not a usable chat completion (``None`` when it is)."""
    if not isinstance(data, dict):
        return f"malformed response: expected a JSON object, got {type(data).__name__}"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        if data.get("error") is not None:
            return f"error in a 2xx response: {_error_detail(data)}"
        return "malformed response: no choices"
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        return "malformed response: the first choice has no message"
    return None


def _interpret(status: int, headers: Mapping[str, str], body: bytes) -> dict[str, Any] | _AttemptError:
    """The parsed completion of one HTTP response, or why the attempt failed."""
    if not 200 <= status < 300:
        retryable = status >= 500 or status in RETRYABLE_CLIENT_STATUSES
        if status == 429 and _error_code(body) in NOT_RETRYABLE_CODES:
            retryable = False
        return _AttemptError(
            error_message(status, body),
            retryable=retryable,
            status=status,
            retry_after=parse_retry_after(headers) if retryable else None,
            rate_limited=retryable and status in RATE_LIMIT_STATUSES,
        )
    try:
        data = json.loads(body)
    except ValueError:
        snippet = body[:80].decode("utf-8", "replace")
        return _AttemptError(f"malformed JSON in an HTTP {status} response: {snippet!r}", True, status)
    problem = _shape_problem(data)
    if problem is not None:
        return _AttemptError(problem, True, status)
    return _declined(data, status) or data


def _declined(data: dict[str, Any], status: int) -> _AttemptError | None:
    """A reply without content because the model refused or a content filter withheld it."""
    choice = data["choices"][0]
    if choice["message"].get("content") not in (None, ""):
        return None
    refusal = choice["message"].get("refusal")
    finish = choice.get("finish_reason")
    usage = parse_usage(data.get("usage"))
    if isinstance(refusal, str) and refusal.strip():
        return _AttemptError(refusal.strip(), False, status, kind="refusal", usage=usage)
    if finish == "content_filter":
        return _AttemptError(f"finish_reason: {finish}", False, status, kind="filtered", usage=usage)
    return None


def _transport_error(exc: Exception, timeout: float) -> _AttemptError:
    name = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return _AttemptError(f"request timed out after {timeout:g} s ({name})", True)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return _AttemptError(f"invalid request URL: {exc}", False)
    detail = str(exc) or "no details"
    if isinstance(exc, httpx.TransportError):
        return _AttemptError(f"connection error ({name}): {detail}", True)
    return _AttemptError(f"HTTP error ({name}): {detail}", not isinstance(exc, httpx.TooManyRedirects))


def _completion(data: dict[str, Any], latency_s: float, attempts: int) -> ChatCompletion:
    choice = data["choices"][0]
    content = choice["message"].get("content")
    if isinstance(content, list):  # some servers return content parts
        text = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    else:
        text = "" if content is None else str(content)
    finish = choice.get("finish_reason")
    return ChatCompletion(
        text=text,
        finish_reason=None if finish is None else str(finish),
        usage=parse_usage(data.get("usage")),
        latency_s=latency_s,
        attempts=attempts,
        raw=data,
    )


# -- the client ---------------------------------------------------------------------------------------


class _AsyncPools:
    """The async connection pools of one event loop: each request goes to the least busy pool,
    and a new pool opens when every pool has ``ASYNC_POOL_SIZE`` requests in flight."""

    def __init__(self, headers: Mapping[str, str], ssl_context: ssl.SSLContext, trust_env: bool) -> None:
        self._headers = headers
        self._ssl_context = ssl_context
        self._trust_env = trust_env
        self._clients: list[httpx.AsyncClient] = []
        self._active: list[int] = []

    @contextlib.contextmanager
    def checkout(self) -> Iterator[httpx.AsyncClient]:
        index = min(range(len(self._active)), key=self._active.__getitem__, default=-1)
        if index < 0 or self._active[index] >= ASYNC_POOL_SIZE:
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=ASYNC_POOL_SIZE)
            client = httpx.AsyncClient(
                headers=self._headers, limits=limits, verify=self._ssl_context, trust_env=self._trust_env
            )
            self._clients.append(client)
            self._active.append(0)
            index = len(self._clients) - 1
        active = self._active  # aclose() may swap the lists while a request is in flight
        active[index] += 1
        try:
            yield self._clients[index]
        finally:
            active[index] -= 1

    async def aclose(self) -> None:
        clients, self._clients, self._active = self._clients, [], []
        for client in clients:
            await client.aclose()


class _Tries:
    """The attempts of one request: how many, the last error, and what to raise when it ends."""

    def __init__(self, policy: RetryPolicy, gate: Gate | None) -> None:
        self.policy = policy
        self.gate = gate
        self.count = 0
        self.unguided = 0  # failures that came without a Retry-After (they set the backoff)
        self.last: _AttemptError | None = None

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

    def delay_after(self, error: _AttemptError) -> float:
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


class ChatCompletionClient:
    """Chat completions over HTTP with retries; see the module docstring.

    ``base_url`` defaults to ``OPENAI_API_BASE`` (then ``OPENAI_BASE_URL``, then the OpenAI API);
    ``api_key`` to ``OPENAI_API_KEY`` (no ``Authorization`` header without one). ``timeout`` is
    per attempt. Keyword-only extras: ``concurrency`` (a limiter shared with other clients),
    ``gate`` (the default gate of :meth:`complete` / :meth:`acomplete`), ``seed`` (reproducible
    jitter) and ``trust_env`` (proxy settings from the environment).

    One client may serve many threads (:meth:`complete`) and the tasks of event loops
    (:meth:`acomplete`). Async connections belong to the event loop that opened them: each loop
    gets its own pools, which :meth:`aclose` (called on that loop) closes.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        retry_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        headers: Mapping[str, str] | None = None,
        *,
        concurrency: AdaptiveConcurrency | None = None,
        gate: Gate | None = None,
        seed: int | None = None,
        trust_env: bool = True,
    ) -> None:
        base = base_url or os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL")
        self.base_url = (base or DEFAULT_BASE_URL).rstrip("/")
        self.url = (
            self.base_url
            if self.base_url.endswith("/chat/completions")
            else f"{self.base_url}/chat/completions"
        )
        env_key = os.environ.get("OPENAI_API_KEY")
        key = api_key if api_key is not None else env_key
        register_secret(key)
        register_secret(env_key)
        self._headers: dict[str, str] = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._headers.update(headers or {})
        try:
            self._url = httpx.URL(self.url)
        except httpx.InvalidURL as exc:
            raise ValueError(redact_text(f"invalid base_url {self.base_url!r}: {exc}")) from None
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.timeout = float(timeout)
        self.retry = RetryPolicy(max_retries, retry_backoff_s, max_backoff_s, seed)
        self.concurrency = concurrency
        self.gate = gate
        self._trust_env = trust_env
        self._sync_client: httpx.Client | None = None
        self._ssl_context: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self._async_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncPools] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"ChatCompletionClient(url={redact_text(self.url)!r}, max_retries={self.retry.max_retries})"

    @property
    def max_retries(self) -> int:
        return self.retry.max_retries

    # -- sync -------------------------------------------------------------------------------------------

    def complete(self, payload: Mapping[str, Any], gate: Gate | None = None) -> ChatCompletion:
        """POST ``payload`` and return the completion; raises :class:`RequestFailedError`."""
        body = _encode(payload)
        client = self._get_sync_client()
        tries = _Tries(self.retry, gate if gate is not None else self.gate)
        while True:
            slot = (
                self.concurrency.acquire(tries.gate, tries.count > 0)
                if self.concurrency
                else Slot(time.monotonic())
            )
            reason = tries.admission(slot)
            if reason is not None:
                self._release(slot, "cancelled")
                raise tries.refused(reason)
            tries.count += 1
            started = time.perf_counter()
            try:
                response = client.post(self._url, content=body, timeout=self.timeout)
                result = _interpret(response.status_code, response.headers, response.content)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                result = _transport_error(exc, self.timeout)
            except BaseException:
                self._release(slot, "cancelled")
                raise
            latency = time.perf_counter() - started
            if not isinstance(result, _AttemptError):
                self._release(slot, "ok")
                return _completion(result, latency, tries.count)
            delay = self._after_failure(slot, result, tries)
            if tries.gate is None:
                time.sleep(delay)
            elif not tries.gate.sleep(delay):
                raise tries.stopped()

    def _after_failure(self, slot: Slot | None, error: _AttemptError, tries: _Tries) -> float:
        """The wait before the next attempt (or the final error). The slot is given back only once
        that is decided, so that a final failure is reported (and can open the circuit breaker)
        about as soon as its slot lets another attempt out."""
        try:
            return tries.delay_after(error)
        finally:
            self._release(slot, "rate_limited" if error.rate_limited else "error")

    def _release(self, slot: Slot | None, outcome: Outcome) -> None:
        if slot is not None and self.concurrency is not None:
            slot.outcome = outcome
            self.concurrency.release(slot)

    def _get_sync_client(self) -> httpx.Client:
        with self._lock:
            if self._sync_client is None:
                keepalive = max(128, 2 * self.concurrency.max_concurrency if self.concurrency else 0)
                limits = httpx.Limits(max_connections=None, max_keepalive_connections=keepalive)
                self._sync_client = httpx.Client(
                    headers=self._headers,
                    limits=limits,
                    verify=self._get_ssl_context(),
                    trust_env=self._trust_env,
                )
            return self._sync_client

    def _get_ssl_context(self) -> ssl.SSLContext:
        """One TLS context for all connection pools (loading the CA bundle takes tens of ms)."""
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context(trust_env=self._trust_env)
        return self._ssl_context

    def close(self) -> None:
        """Close the sync connection pool (and forget async pools whose event loop has ended)."""
        with self._lock:
            client, self._sync_client = self._sync_client, None
            for loop in [loop for loop in self._async_pools if loop.is_closed()]:
                del self._async_pools[loop]
        if client is not None:
            client.close()

    def __enter__(self) -> ChatCompletionClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async ------------------------------------------------------------------------------------------

    async def acomplete(self, payload: Mapping[str, Any], gate: Gate | None = None) -> ChatCompletion:
        """``await`` version of :meth:`complete`; cancelling it abandons the attempt in flight."""
        body = _encode(payload)
        pools = self._get_async_pools()
        tries = _Tries(self.retry, gate if gate is not None else self.gate)
        while True:
            slot = (
                await self.concurrency.aacquire(tries.gate, tries.count > 0)
                if self.concurrency
                else Slot(time.monotonic())
            )
            reason = tries.admission(slot)
            if reason is not None:
                self._release(slot, "cancelled")
                raise tries.refused(reason)
            tries.count += 1
            started = time.perf_counter()
            try:
                with pools.checkout() as client:
                    response = await client.post(self._url, content=body, timeout=self.timeout)
                result = _interpret(response.status_code, response.headers, response.content)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                result = _transport_error(exc, self.timeout)
            except BaseException:  # cancelled: the attempt is abandoned
                self._release(slot, "cancelled")
                raise
            latency = time.perf_counter() - started
            if not isinstance(result, _AttemptError):
                self._release(slot, "ok")
                return _completion(result, latency, tries.count)
            if not await sleep_unless_stopped(self._after_failure(slot, result, tries), tries.gate):
                raise tries.stopped()

    def _get_async_pools(self) -> _AsyncPools:
        loop = asyncio.get_running_loop()
        with self._lock:
            pools = self._async_pools.get(loop)
            if pools is None:
                pools = self._async_pools[loop] = _AsyncPools(
                    self._headers, self._get_ssl_context(), self._trust_env
                )
            return pools

    async def aclose(self) -> None:
        """Close the async connection pools of the running event loop."""
        with self._lock:
            pools = self._async_pools.pop(asyncio.get_running_loop(), None)
        if pools is not None:
            await pools.aclose()

    async def __aenter__(self) -> ChatCompletionClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _encode(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(dict(payload), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


__all__ = [
    "ChatCompletion",
    "ChatCompletionClient",
    "Gate",
    "RequestFailedError",
    "RetryPolicy",
    "error_message",
    "parse_retry_after",
    "parse_usage",
]
