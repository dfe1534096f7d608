"""``async_openai``: the asyncio variant of :mod:`lmms_eval.models.chat.openai`.

Also registered as ``async_openai_compatible_chat`` and ``async_openai_compatible``. Arguments,
payload, retries, rate control, gate and failure handling are those of ``openai``; requests run as
tasks of one event loop (``asyncio.run`` per ``generate_until`` call, or a helper thread's loop when
the caller is already inside a running loop) instead of a thread pool, which makes high
``num_concurrent`` values cheap.

On Ctrl-C the event loop cancels the tasks: attempts in flight are abandoned (their connections
closed), waiting requests end, the gate is stopped and the KeyboardInterrupt goes on. Answers
finished before it were already reported to the gate.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import Instance
from lmms_eval.media import MediaError, media_failure
from lmms_eval.models.api.http import RequestFailedError
from lmms_eval.models.chat.openai import REQUESTS_PER_SLOT, Answer, OpenAICompatible

logger = logging.getLogger(__name__)

T = TypeVar("T")


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, also when this thread already runs an event loop.

    In that case it runs on a new loop in a daemon helper thread; a KeyboardInterrupt here cancels
    it there (and is raised on without waiting for it).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return _run_in_helper_thread(coro)


def _run_in_helper_thread(coro: Coroutine[Any, Any, T]) -> T:
    box: dict[str, Any] = {}
    started = threading.Event()
    finished = threading.Event()

    async def main() -> T:
        box["loop"], box["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await coro

    def target() -> None:
        try:
            box["result"] = asyncio.run(main())
        except BaseException as exc:
            box["error"] = exc
        finally:
            started.set()
            finished.set()

    threading.Thread(target=target, name="async-openai", daemon=True).start()
    try:
        finished.wait()
    except KeyboardInterrupt:
        started.wait(1.0)
        loop, task = box.get("loop"), box.get("task")
        if isinstance(loop, asyncio.AbstractEventLoop) and isinstance(task, asyncio.Task):
            loop.call_soon_threadsafe(task.cancel)
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]


class AsyncOpenAIChat(OpenAICompatible):
    """OpenAI-compatible chat backend on asyncio; same arguments as :class:`OpenAICompatible`."""

    is_simple = False

    def generate_until(self, requests: list[Instance]) -> list[Answer]:
        """Answers in request order; at most ``num_concurrent`` attempts in flight."""
        if not requests:
            return []
        if self.batch is not None:  # batch=true: one provider batch, as for ``openai``
            return super().generate_until(requests)
        gate = self.gate
        try:
            answers = run_coroutine(self._generate_and_close(requests, gate))
        except KeyboardInterrupt:
            gate.stop("interrupted")
            raise
        self._log_summary(answers)
        return answers

    async def _generate_and_close(self, requests: list[Instance], gate: RequestGate) -> list[Answer]:
        try:
            return await self.agenerate_until(requests, gate)
        finally:  # the connection pool belongs to this event loop, which ends here
            await self.client.aclose()

    async def agenerate_until(
        self, requests: list[Instance], gate: RequestGate | None = None
    ) -> list[Answer]:
        """``generate_until`` for callers that run their own event loop."""
        gate = gate if gate is not None else self.gate
        in_progress = asyncio.Semaphore(REQUESTS_PER_SLOT * self.num_concurrent)

        async def answer(request: Instance) -> Answer:
            async with in_progress:
                result: Answer | None = gate.refusal()
                if result is None:
                    try:  # media are read and encoded in a thread, not in the event loop
                        payload, until = await asyncio.to_thread(self.build_payload, request)
                        result = self.to_answer(await self.client.acomplete(payload, gate), until)
                    except RequestFailedError as exc:
                        result = self.to_failure(exc)
                    except MediaError as exc:
                        result = media_failure(exc)
                gate.done(result, request)
                return result

        return list(await asyncio.gather(*(answer(r) for r in requests)))
