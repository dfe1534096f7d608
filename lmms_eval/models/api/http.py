"""The shared HTTP client of OpenAI-compatible chat-completions APIs (sync and asyncio).

:class:`ChatCompletionClient` POSTs a payload to ``{base_url}/chat/completions`` and returns a
:class:`ChatCompletion`, retrying what a retry can fix:

* retried: HTTP 429, 408, 409, 425 and every 5xx; timeouts; connection errors and connections
  dropped without a response; a 2xx body that is not JSON or has no ``choices``;
* not retried: every other 4xx (400, 401, 403, 404, 422, ...) and invalid URLs. They raise
  :class:`RequestFailedError` (``retryable=False``) at once with the server's error message.

Retry ``k`` (1 for the first) waits a random time in ``[0, min(max_backoff_s, retry_backoff_s *
2**(k-1))]`` ("full jitter"), or at least the server's ``Retry-After`` (seconds, an HTTP date, or
OpenAI's ``retry-after-ms``), honoured up to ``max_backoff_s``. A request is tried
``max_retries + 1`` times in all; the last error is raised as :class:`RequestFailedError`
(``retryable=True``). Nothing here sleeps a fixed amount.

When a :class:`~lmms_eval.models.api.concurrency.AdaptiveConcurrency` is given, each attempt holds
one of its slots (a request waiting out a retry delay holds none) and reports how it went, so the
limit falls under rate limiting and recovers when the server is healthy.
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
from typing import Any

from lmms_eval.api.instance import TokenCounts
from lmms_eval.errors import LmmsEvalError, MissingDependencyError
from lmms_eval.models.api.concurrency import AdaptiveConcurrency, Outcome, Slot

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
_MAX_BODY_IN_ERROR = 300


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
    """A request that failed for good: not retryable, or still failing after every retry.

    The message is the last error; ``status`` is its HTTP status (``None`` for timeouts and
    connection errors).
    """

    def __init__(self, message: str, attempts: int = 1, retryable: bool = True, status: int | None = None):
        super().__init__(message)
        self.attempts = attempts
        self.retryable = retryable
        self.status = status


@dataclass(frozen=True)
class _AttemptError:
    message: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None
    rate_limited: bool = False


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
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        ceiling = min(self.max_backoff_s, self.backoff_s * 2.0 ** min(max(retry - 1, 0), 60))
        with self._lock:
            jittered = self._rng.uniform(0.0, ceiling)
        if retry_after is None:
            return jittered
        if retry_after > self.max_backoff_s:
            logger.warning(
                "server asked to retry after %.1f s; waiting max_backoff_s=%.1f s instead",
                retry_after,
                self.max_backoff_s,
            )
        return max(jittered, min(retry_after, self.max_backoff_s))


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
        return _AttemptError(
            error_message(status, body),
            retryable=retryable,
            status=status,
            retry_after=parse_retry_after(headers) if retryable else None,
            rate_limited=status in RATE_LIMIT_STATUSES,
        )
    try:
        data = json.loads(body)
    except ValueError:
        snippet = body[:80].decode("utf-8", "replace")
        return _AttemptError(f"malformed JSON in an HTTP {status} response: {snippet!r}", True, status)
    problem = _shape_problem(data)
    if problem is not None:
        return _AttemptError(problem, True, status)
    return data


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


def _outcome(result: dict[str, Any] | _AttemptError) -> Outcome:
    if not isinstance(result, _AttemptError):
        return "ok"
    return "rate_limited" if result.rate_limited else "error"


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


class ChatCompletionClient:
    """Chat completions over HTTP with retries; see the module docstring.

    ``base_url`` defaults to ``OPENAI_API_BASE`` (then ``OPENAI_BASE_URL``, then the OpenAI API);
    ``api_key`` to ``OPENAI_API_KEY`` (no ``Authorization`` header without one). ``timeout`` is
    per attempt. Keyword-only extras: ``concurrency`` (an adaptive limit shared with other
    clients), ``seed`` (reproducible jitter) and ``trust_env`` (proxy settings from the
    environment).

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
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._headers: dict[str, str] = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._headers.update(headers or {})
        try:
            self._url = httpx.URL(self.url)
        except httpx.InvalidURL as exc:
            raise ValueError(f"invalid base_url {self.base_url!r}: {exc}") from None
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.timeout = float(timeout)
        self.retry = RetryPolicy(max_retries, retry_backoff_s, max_backoff_s, seed)
        self.concurrency = concurrency
        self._trust_env = trust_env
        self._sync_client: httpx.Client | None = None
        self._ssl_context: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self._async_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncPools] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"ChatCompletionClient(url={self.url!r}, max_retries={self.retry.max_retries})"

    @property
    def max_retries(self) -> int:
        return self.retry.max_retries

    # -- sync -------------------------------------------------------------------------------------------

    def complete(self, payload: Mapping[str, Any]) -> ChatCompletion:
        """POST ``payload`` and return the completion; raises :class:`RequestFailedError`."""
        body = _encode(payload)
        client = self._get_sync_client()
        attempt = 0
        while True:
            attempt += 1
            with self._slot() as slot:
                started = time.perf_counter()
                try:
                    response = client.post(self._url, content=body, timeout=self.timeout)
                    result = _interpret(response.status_code, response.headers, response.content)
                except (httpx.HTTPError, httpx.InvalidURL) as exc:
                    result = _transport_error(exc, self.timeout)
                latency = time.perf_counter() - started
                slot.outcome = _outcome(result)
            if not isinstance(result, _AttemptError):
                return _completion(result, latency, attempt)
            time.sleep(self._delay_after(result, attempt))

    def _get_sync_client(self) -> httpx.Client:
        with self._lock:
            if self._sync_client is None:
                keepalive = max(128, self.concurrency.max_concurrency if self.concurrency else 0)
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

    def _slot(self) -> contextlib.AbstractContextManager[Slot]:
        return self.concurrency.slot() if self.concurrency else contextlib.nullcontext(Slot(0))

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

    async def acomplete(self, payload: Mapping[str, Any]) -> ChatCompletion:
        """``await`` version of :meth:`complete`."""
        body = _encode(payload)
        pools = self._get_async_pools()
        attempt = 0
        while True:
            attempt += 1
            async with self._aslot() as slot:
                started = time.perf_counter()
                try:
                    with pools.checkout() as client:
                        response = await client.post(self._url, content=body, timeout=self.timeout)
                    result = _interpret(response.status_code, response.headers, response.content)
                except (httpx.HTTPError, httpx.InvalidURL) as exc:
                    result = _transport_error(exc, self.timeout)
                latency = time.perf_counter() - started
                slot.outcome = _outcome(result)
            if not isinstance(result, _AttemptError):
                return _completion(result, latency, attempt)
            await asyncio.sleep(self._delay_after(result, attempt))

    def _get_async_pools(self) -> _AsyncPools:
        loop = asyncio.get_running_loop()
        with self._lock:
            pools = self._async_pools.get(loop)
            if pools is None:
                pools = self._async_pools[loop] = _AsyncPools(
                    self._headers, self._get_ssl_context(), self._trust_env
                )
            return pools

    def _aslot(self) -> contextlib.AbstractAsyncContextManager[Slot]:
        return self.concurrency.aslot() if self.concurrency else contextlib.nullcontext(Slot(0))

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

    # -- shared -----------------------------------------------------------------------------------------

    def _delay_after(self, error: _AttemptError, attempt: int) -> float:
        """The wait before the next attempt; raises :class:`RequestFailedError` when there is none."""
        if not error.retryable:
            logger.warning("request failed (not retryable): %s", error.message)
            raise RequestFailedError(error.message, attempt, False, error.status)
        if attempt > self.retry.max_retries:
            logger.warning("request failed after %d attempt(s): %s", attempt, error.message)
            raise RequestFailedError(error.message, attempt, True, error.status)
        delay = self.retry.delay(attempt, error.retry_after)
        logger.debug("attempt %d failed (%s); retrying in %.3f s", attempt, error.message, delay)
        return delay


def _encode(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(dict(payload), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


__all__ = [
    "ChatCompletion",
    "ChatCompletionClient",
    "RequestFailedError",
    "RetryPolicy",
    "error_message",
    "parse_retry_after",
    "parse_usage",
]
