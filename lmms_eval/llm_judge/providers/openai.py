"""``openai`` and ``async_openai`` judges: any OpenAI-compatible chat-completions endpoint.

Both send the payload of :meth:`OpenAIJudge.payload` through
:class:`lmms_eval.models.api.http.ChatCompletionClient` (retries with backoff live there). ``openai``
runs batch calls on a thread pool; ``async_openai`` runs them as asyncio tasks bounded by a
semaphore. Both bound the calls in flight by ``config.num_concurrent``.

For reasoning models (names containing o1, o3, o4 or gpt-5) the payload carries
``max_completion_tokens`` and no ``temperature`` / ``top_p``, which those models reject.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from lmms_eval.llm_judge.base import JudgeServer, Outcome, ProviderFailure, ProviderReply, describe_error
from lmms_eval.llm_judge.cache import JudgeCache
from lmms_eval.llm_judge.config import ServerConfig
from lmms_eval.llm_judge.types import Request

logger = logging.getLogger(__name__)

T = TypeVar("T")
ClientFactory = Callable[[ServerConfig], Any]

_REASONING_MODEL = re.compile(r"(?:^|[^a-z0-9])(?:o1|o3|o4|gpt-5)(?:$|[^0-9])", re.IGNORECASE)


def is_reasoning_model(model_name: str) -> bool:
    """Whether ``model_name`` names an OpenAI reasoning model (o1, o3, o4, gpt-5 families)."""
    return bool(_REASONING_MODEL.search(model_name.split("/")[-1]))


def default_client_factory(config: ServerConfig) -> Any:
    """A :class:`ChatCompletionClient` configured from ``config``."""
    from lmms_eval.models.api.http import ChatCompletionClient  # MissingDependencyError without httpx

    return ChatCompletionClient(
        base_url=config.base_url,
        api_key=config.api_key,
        timeout=config.timeout,
        max_retries=config.max_retries,
        retry_backoff_s=config.retry_backoff_s,
    )


def _usage_dict(usage: Any) -> dict[str, int] | None:
    if usage is None:
        return None
    if hasattr(usage, "to_dict"):
        data = usage.to_dict()
    elif isinstance(usage, dict):
        data = usage
    else:
        data = {k: v for k, v in vars(usage).items() if not k.startswith("_")}
    out = {str(k): int(v) for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return out or None


def reply_from_completion(completion: Any, started: float) -> ProviderReply:
    """A :class:`ProviderReply` from a ``ChatCompletion`` (text, latency, attempts, usage)."""
    latency = getattr(completion, "latency_s", None)
    return ProviderReply(
        text=str(getattr(completion, "text", "") or ""),
        latency_s=float(latency) if latency is not None else time.perf_counter() - started,
        attempts=int(getattr(completion, "attempts", 1) or 1),
        usage=_usage_dict(getattr(completion, "usage", None)),
    )


class OpenAIJudge(JudgeServer):
    """Synchronous OpenAI-compatible judge.

    ``client`` replaces the HTTP client (anything with ``complete(payload)`` returning an object
    with ``text``); ``client_factory(config)`` builds one on first use (default:
    :func:`default_client_factory`).
    """

    name = "openai"
    cache_namespace = "openai"

    def __init__(
        self,
        config: ServerConfig | None = None,
        cache: JudgeCache | None = None,
        client: Any | None = None,
        client_factory: ClientFactory | None = None,
    ) -> None:
        super().__init__(config, cache)
        self._client = client
        self._owns_client = client is None
        self._client_factory = client_factory or default_client_factory
        self._client_lock = threading.Lock()

    def payload(self, request: Request) -> dict[str, Any]:
        payload = super().payload(request)
        if is_reasoning_model(self.config.model_name):
            payload.pop("temperature", None)
            payload.pop("top_p", None)
            payload["max_completion_tokens"] = payload.pop("max_tokens")
        return payload

    @property
    def client(self) -> Any:
        """The HTTP client (created on first use)."""
        with self._client_lock:
            if self._client is None:
                self._client = self._client_factory(self.config)
            return self._client

    def _invoke(self, request: Request) -> ProviderReply:
        started = time.perf_counter()
        return reply_from_completion(self.client.complete(self.payload(request)), started)

    def _invoke_many(self, requests: Sequence[Request]) -> list[Outcome]:
        _ = self.client  # a missing dependency is an error of the run, not a failed judge call
        return super()._invoke_many(requests)

    def close(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None and self._owns_client and hasattr(client, "close"):
            client.close()
        super().close()


def run_sync(coroutine_factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code, also when an event loop is running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine_factory())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-loop") as pool:
        return pool.submit(lambda: asyncio.run(coroutine_factory())).result()


class AsyncOpenAIJudge(OpenAIJudge):
    """OpenAI-compatible judge whose batches run as asyncio tasks (``client.acomplete``).

    Each batch runs in its own event loop (in a worker thread when the caller is inside one); the
    client's async connection pool of that loop is closed when the batch ends.
    """

    name = "async_openai"

    async def _ainvoke(self, client: Any, request: Request) -> Outcome:
        started = time.perf_counter()
        try:
            return reply_from_completion(await client.acomplete(self.payload(request)), started)
        except Exception as exc:
            return ProviderFailure(
                error=describe_error(exc),
                latency_s=time.perf_counter() - started,
                attempts=int(getattr(exc, "attempts", 1) or 1),
            )

    async def _ainvoke_many(self, requests: Sequence[Request]) -> list[Outcome]:
        client = self.client
        semaphore = asyncio.Semaphore(self.config.num_concurrent)

        async def one(request: Request) -> Outcome:
            async with semaphore:
                return await self._ainvoke(client, request)

        try:
            return list(await asyncio.gather(*(one(r) for r in requests)))
        finally:
            if self._owns_client and hasattr(client, "aclose"):
                await client.aclose()  # the connection pool of this batch's event loop

    def _invoke_many(self, requests: Sequence[Request]) -> list[Outcome]:
        return run_sync(lambda: self._ainvoke_many(requests))

    def _invoke(self, request: Request) -> ProviderReply:
        outcome = self._invoke_many([request])[0]
        if isinstance(outcome, ProviderFailure):
            raise RuntimeError(outcome.error)
        return outcome


__all__ = [
    "AsyncOpenAIJudge",
    "OpenAIJudge",
    "default_client_factory",
    "is_reasoning_model",
    "reply_from_completion",
    "run_sync",
]
