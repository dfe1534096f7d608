"""``async_openai``: the asyncio variant of :mod:`lmms_eval.models.chat.openai`.

Also registered as ``async_openai_compatible_chat`` and ``async_openai_compatible``. Arguments,
payload, retries, adaptive concurrency and failure handling are those of ``openai``; requests run
as tasks of one event loop (``asyncio.run`` per ``generate_until`` call, or a helper thread's loop
when the caller is already inside a running loop) instead of a thread pool, which makes high
``num_concurrent`` values cheap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from lmms_eval.api.instance import Instance
from lmms_eval.models.api.http import RequestFailedError
from lmms_eval.models.chat.openai import Answer, OpenAICompatible

logger = logging.getLogger(__name__)

T = TypeVar("T")


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, also when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="async-openai") as pool:
        return pool.submit(asyncio.run, coro).result()


class AsyncOpenAIChat(OpenAICompatible):
    """OpenAI-compatible chat backend on asyncio; same arguments as :class:`OpenAICompatible`."""

    is_simple = False

    def generate_until(self, requests: list[Instance]) -> list[Answer]:
        """Answers in request order; at most ``num_concurrent`` requests in flight."""
        if not requests:
            return []
        answers = run_coroutine(self._generate_and_close(requests))
        self._log_summary(answers)
        return answers

    async def _generate_and_close(self, requests: list[Instance]) -> list[Answer]:
        try:
            return await self.agenerate_until(requests)
        finally:  # the connection pool belongs to this event loop, which ends here
            await self.client.aclose()

    async def agenerate_until(self, requests: list[Instance]) -> list[Answer]:
        """``generate_until`` for callers that run their own event loop."""
        gate = asyncio.Semaphore(self.num_concurrent)

        async def answer(request: Instance) -> Answer:
            async with gate:
                payload, until = self.build_payload(request)
                try:
                    return self.to_answer(await self.client.acomplete(payload), until)
                except RequestFailedError as exc:
                    return self.to_failure(exc)

        return list(await asyncio.gather(*(answer(r) for r in requests)))
