"""Adaptive concurrency for API backends: an AIMD limit on the number of requests in flight.

:class:`AdaptiveConcurrency` hands out *slots*. A caller holds one slot per HTTP attempt (not per
request: a request waiting out a retry delay holds none) and reports how the attempt went:

* ``"rate_limited"`` (HTTP 429, or 503 overload): the limit is multiplied by ``decrease_factor``
  (0.7 by default, never below ``min_concurrency``). Only attempts admitted under the current limit
  can lower it again, so a burst of 429s from one wave of requests lowers it once, not once per
  response (the "one decrease per round trip" rule of TCP congestion control).
* ``"ok"``: after ``max(increase_window, limit)`` healthy completions in a row the limit grows by 1,
  up to ``max_concurrency``.
* ``"error"`` (anything else: 5xx, timeouts, dropped connections): no change.

The same object gates threads (:meth:`AdaptiveConcurrency.slot`, a semaphore whose capacity follows
the limit) and asyncio tasks (:meth:`AdaptiveConcurrency.aslot`); both kinds may wait on it at once.
With ``adaptive=False`` the limit stays at ``max_concurrency``: a plain semaphore.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Literal

logger = logging.getLogger(__name__)

Outcome = Literal["ok", "rate_limited", "error"]


@dataclass
class Slot:
    """One admitted attempt. Set :attr:`outcome` before the slot is released."""

    epoch: int
    outcome: Outcome = "error"


@dataclass(frozen=True)
class ConcurrencyStats:
    """A snapshot of the limiter (for logs, tests and benchmarks)."""

    limit: int
    in_flight: int
    max_in_flight: int
    min_limit: int
    decreases: int
    increases: int
    rate_limited: int


class AdaptiveConcurrency:
    """An AIMD concurrency limit shared by threads and asyncio tasks; see the module docstring."""

    def __init__(
        self,
        max_concurrency: int,
        *,
        min_concurrency: int = 1,
        initial: int | None = None,
        decrease_factor: float = 0.7,
        increase_window: int = 4,
        adaptive: bool = True,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if not 1 <= min_concurrency <= max_concurrency:
            raise ValueError(f"min_concurrency must be in [1, {max_concurrency}], got {min_concurrency}")
        if not 0.0 < decrease_factor < 1.0:
            raise ValueError(f"decrease_factor must be in (0, 1), got {decrease_factor}")
        self.max_concurrency = max_concurrency
        self.min_concurrency = min_concurrency
        self.decrease_factor = decrease_factor
        self.increase_window = max(1, increase_window)
        self.adaptive = adaptive
        start = max_concurrency if initial is None else initial
        self._limit = min(max_concurrency, max(min_concurrency, start))
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._async_waiters: deque[asyncio.Future[None]] = deque()
        self._in_flight = 0
        self._epoch = 0
        self._healthy = 0
        self._max_in_flight = 0
        self._min_limit = self._limit
        self._decreases = 0
        self._increases = 0
        self._rate_limited = 0

    # -- state ---------------------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """The current number of attempts allowed in flight."""
        return self._limit

    def stats(self) -> ConcurrencyStats:
        with self._lock:
            return ConcurrencyStats(
                limit=self._limit,
                in_flight=self._in_flight,
                max_in_flight=self._max_in_flight,
                min_limit=self._min_limit,
                decreases=self._decreases,
                increases=self._increases,
                rate_limited=self._rate_limited,
            )

    # -- acquiring -----------------------------------------------------------------------------------

    def _try_take(self) -> Slot | None:
        """Admit one attempt if there is room (call with the lock held)."""
        if self._in_flight >= self._limit:
            return None
        self._in_flight += 1
        self._max_in_flight = max(self._max_in_flight, self._in_flight)
        return Slot(self._epoch)

    def acquire(self) -> Slot:
        """Block the calling thread until an attempt may start."""
        with self._cond:
            while True:
                slot = self._try_take()
                if slot is not None:
                    return slot
                self._cond.wait()

    async def aacquire(self) -> Slot:
        """Wait (without blocking the event loop) until an attempt may start."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                slot = self._try_take()
                if slot is not None:
                    return slot
                waiter: asyncio.Future[None] = loop.create_future()
                self._async_waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                with self._lock:
                    try:
                        self._async_waiters.remove(waiter)
                    except ValueError:  # already woken: pass the wake-up on, or it is lost
                        self._wake()
                raise

    def release(self, slot: Slot) -> None:
        """End an attempt and let its :attr:`Slot.outcome` steer the limit."""
        with self._lock:
            self._in_flight -= 1
            if self.adaptive:
                self._adapt(slot)
            elif slot.outcome == "rate_limited":
                self._rate_limited += 1
            self._wake()

    @contextlib.contextmanager
    def slot(self) -> Iterator[Slot]:
        """``with limiter.slot() as slot: ...; slot.outcome = "ok"`` (threads)."""
        slot = self.acquire()
        try:
            yield slot
        finally:
            self.release(slot)

    @contextlib.asynccontextmanager
    async def aslot(self) -> AsyncIterator[Slot]:
        """``async with limiter.aslot() as slot: ...`` (asyncio tasks)."""
        slot = await self.aacquire()
        try:
            yield slot
        finally:
            self.release(slot)

    # -- the AIMD rule (called with the lock held) ---------------------------------------------------

    def _adapt(self, slot: Slot) -> None:
        if slot.outcome == "rate_limited":
            self._rate_limited += 1
            self._healthy = 0
            if slot.epoch != self._epoch:
                return  # admitted under an older limit, which was already lowered
            self._epoch += 1
            lowered = max(self.min_concurrency, int(self._limit * self.decrease_factor))
            if lowered < self._limit:
                logger.info("rate limited: lowering concurrency from %d to %d", self._limit, lowered)
                self._limit = lowered
                self._decreases += 1
                self._min_limit = min(self._min_limit, lowered)
        elif slot.outcome == "ok":
            self._healthy += 1
            if self._limit < self.max_concurrency and self._healthy >= max(self.increase_window, self._limit):
                self._limit += 1
                self._increases += 1
                self._healthy = 0
                logger.debug("healthy: raising concurrency to %d", self._limit)

    def _wake(self) -> None:
        """Wake as many waiters as there is room for (call with the lock held)."""
        room = self._limit - self._in_flight
        if room <= 0:
            return
        self._cond.notify(room)
        woken = 0
        while self._async_waiters and woken < room:
            waiter = self._async_waiters.popleft()
            if waiter.done():
                continue
            try:
                waiter.get_loop().call_soon_threadsafe(_resolve, waiter)
            except RuntimeError:  # its event loop is closed; nobody waits on it any more
                continue
            woken += 1


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
