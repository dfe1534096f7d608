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

The retry loop itself (waits, slots, gate) is :func:`lmms_eval.models.api.retry.call_with_retries`,
which the SDK-based backends (``claude``, ``gemini``) share; this module supplies the HTTP attempt.
``api_type="azure"`` speaks Azure OpenAI's URL layout and ``api-key`` header (see the client).

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
import os
import ssl
import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from lmms_eval.api.instance import TokenCounts
from lmms_eval.errors import MissingDependencyError
from lmms_eval.models.api.concurrency import AdaptiveConcurrency
from lmms_eval.models.api.retry import (
    AttemptError,
    Gate,
    RequestFailedError,
    RetryPolicy,
    acall_with_retries,
    call_with_retries,
    error_detail,
    error_message,
    parse_retry_after,
    status_error,
)
from lmms_eval.secrets import redact_text, register_secret

try:
    import httpx
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("httpx", "api", "The OpenAI-compatible API client") from exc

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Azure OpenAI: the api-version sent when none is given (a generally available one)
DEFAULT_AZURE_API_VERSION = "2024-10-21"
AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
ApiType = Literal["openai", "azure"]
# requests in flight per async connection pool: httpcore's async pool does work quadratic in its
# size on every request, so a loop spreads its requests over several small pools
ASYNC_POOL_SIZE = 8


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


# -- interpreting responses ---------------------------------------------------------------------------


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
            return f"error in a 2xx response: {error_detail(data)}"
        return "malformed response: no choices"
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        return "malformed response: the first choice has no message"
    return None


def interpret_response(status: int, headers: Mapping[str, str], body: bytes) -> dict[str, Any] | AttemptError:
    """The parsed completion of one HTTP response, or why the attempt failed."""
    if not 200 <= status < 300:
        return status_error(status, headers, body)
    try:
        data = json.loads(body)
    except ValueError:
        snippet = body[:80].decode("utf-8", "replace")
        return AttemptError(f"malformed JSON in an HTTP {status} response: {snippet!r}", True, status)
    problem = _shape_problem(data)
    if problem is not None:
        return AttemptError(problem, True, status)
    return _declined(data, status) or data


def _declined(data: dict[str, Any], status: int) -> AttemptError | None:
    """A reply without content because the model refused or a content filter withheld it."""
    choice = data["choices"][0]
    if choice["message"].get("content") not in (None, ""):
        return None
    refusal = choice["message"].get("refusal")
    finish = choice.get("finish_reason")
    usage = parse_usage(data.get("usage"))
    if isinstance(refusal, str) and refusal.strip():
        return AttemptError(refusal.strip(), False, status, kind="refusal", usage=usage)
    if finish == "content_filter":
        return AttemptError(f"finish_reason: {finish}", False, status, kind="filtered", usage=usage)
    return None


def _transport_error(exc: Exception, timeout: float) -> AttemptError:
    name = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return AttemptError(f"request timed out after {timeout:g} s ({name})", True)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return AttemptError(f"invalid request URL: {exc}", False)
    detail = str(exc) or "no details"
    if isinstance(exc, httpx.TransportError):
        return AttemptError(f"connection error ({name}): {detail}", True)
    return AttemptError(f"HTTP error ({name}): {detail}", not isinstance(exc, httpx.TooManyRedirects))


def completion_from(data: dict[str, Any], latency_s: float, attempts: int) -> ChatCompletion:
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


def _openai_endpoint(base_url: str | None, api_key: str | None) -> tuple[str, str, dict[str, str]]:
    """``(base_url, url, auth headers)`` of an OpenAI-compatible API."""
    base = base_url or os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL")
    base = (base or DEFAULT_BASE_URL).rstrip("/")
    url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
    env_key = os.environ.get("OPENAI_API_KEY")
    key = api_key if api_key is not None else env_key
    register_secret(key)
    register_secret(env_key)
    return base, url, ({"Authorization": f"Bearer {key}"} if key else {})


def _azure_endpoint(
    base_url: str | None, api_key: str | None, api_version: str | None, deployment: str | None
) -> tuple[str, str, dict[str, str]]:
    """``(base_url, url, auth headers)`` of an Azure OpenAI deployment (see the client docstring)."""
    env_key = os.environ.get(AZURE_KEY_ENV)
    key = api_key or env_key
    register_secret(key)
    register_secret(env_key)
    base = (base_url or os.environ.get(AZURE_ENDPOINT_ENV) or "").rstrip("/")
    if not base:
        raise ValueError(
            f"api_type=azure needs base_url=https://<resource>.openai.azure.com (or {AZURE_ENDPOINT_ENV})"
        )
    if not key:
        raise ValueError(f"api_type=azure needs an API key: set {AZURE_KEY_ENV} or pass api_key=...")
    version = (
        api_version
        or os.environ.get("AZURE_OPENAI_API_VERSION")
        or os.environ.get("OPENAI_API_VERSION")
        or DEFAULT_AZURE_API_VERSION
    )
    if "/openai/deployments/" not in base:
        if not deployment:
            raise ValueError("api_type=azure needs the deployment name: model=<deployment>")
        base = f"{base}/openai/deployments/{quote(deployment, safe='')}"
    url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
    return base, f"{url}?api-version={quote(version, safe='')}", {"api-key": key}


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
    per attempt. Keyword-only extras: ``concurrency`` (a limiter shared with other clients),
    ``gate`` (the default gate of :meth:`complete` / :meth:`acomplete`), ``seed`` (reproducible
    jitter) and ``trust_env`` (proxy settings from the environment).

    ``api_type="azure"`` speaks Azure OpenAI instead: the URL is
    ``{base_url}/openai/deployments/{deployment}/chat/completions?api-version={api_version}``
    (``base_url`` defaults to ``AZURE_OPENAI_ENDPOINT``, ``api_version`` to
    ``AZURE_OPENAI_API_VERSION``, then ``OPENAI_API_VERSION``, then :data:`DEFAULT_AZURE_API_VERSION`)
    and the key (``api_key``, default ``AZURE_OPENAI_API_KEY``; required) goes in an ``api-key``
    header. A ``base_url`` that already names a deployment (``.../openai/deployments/<name>``) is
    used as it is.

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
        api_type: ApiType = "openai",
        api_version: str | None = None,
        deployment: str | None = None,
    ) -> None:
        self.api_type: ApiType = api_type
        if api_type == "azure":
            self.base_url, self.url, auth = _azure_endpoint(base_url, api_key, api_version, deployment)
        elif api_type == "openai":
            self.base_url, self.url, auth = _openai_endpoint(base_url, api_key)
        else:
            raise ValueError(f"api_type must be 'openai' or 'azure', got {api_type!r}")
        self._headers: dict[str, str] = {"Content-Type": "application/json", "Accept": "application/json"}
        self._headers.update(auth)
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

        def attempt() -> dict[str, Any] | AttemptError:
            try:
                response = client.post(self._url, content=body, timeout=self.timeout)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                return _transport_error(exc, self.timeout)
            return interpret_response(response.status_code, response.headers, response.content)

        done = call_with_retries(
            attempt, self.retry, self.concurrency, gate if gate is not None else self.gate
        )
        return completion_from(done.value, done.latency_s, done.attempts)

    def call_api(
        self,
        method: str,
        path: str,
        json_body: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
        data: Mapping[str, str] | None = None,
    ) -> bytes:
        """One other request of the same API (``{base_url}/{path}``: files, batches, ...) through the
        same retry loop, without the gate; returns the body of the 2xx answer, raises
        :class:`RequestFailedError`."""
        client = self._get_sync_client()
        url = f"{self.base_url}/{path.lstrip('/')}"

        def attempt() -> bytes | AttemptError:
            try:
                if files is not None:  # multipart: httpx sets its own content type
                    headers = {k: v for k, v in self._headers.items() if k.lower() != "content-type"}
                    response = httpx.request(
                        method,
                        url,
                        files=files,
                        data=data,
                        headers=headers,
                        timeout=self.timeout,
                        verify=self._get_ssl_context(),
                        trust_env=self._trust_env,
                    )
                else:
                    body = None if json_body is None else _encode(json_body)
                    response = client.request(method, url, content=body, timeout=self.timeout)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                return _transport_error(exc, self.timeout)
            if not 200 <= response.status_code < 300:
                return status_error(response.status_code, response.headers, response.content)
            return response.content

        return call_with_retries(attempt, self.retry, self.concurrency).value

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

        async def attempt() -> dict[str, Any] | AttemptError:
            try:
                with pools.checkout() as client:
                    response = await client.post(self._url, content=body, timeout=self.timeout)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                return _transport_error(exc, self.timeout)
            return interpret_response(response.status_code, response.headers, response.content)

        done = await acall_with_retries(
            attempt, self.retry, self.concurrency, gate if gate is not None else self.gate
        )
        return completion_from(done.value, done.latency_s, done.attempts)

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
    "DEFAULT_AZURE_API_VERSION",
    "ApiType",
    "ChatCompletion",
    "ChatCompletionClient",
    "Gate",
    "RequestFailedError",
    "RetryPolicy",
    "completion_from",
    "error_message",
    "interpret_response",
    "parse_retry_after",
    "parse_usage",
]
