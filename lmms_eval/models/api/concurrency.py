"""Concurrency and rate control of API backends: a fixed cap on attempts in flight, and a pacer whose
rate is learned from the server's HTTP 429 answers.

:class:`AdaptiveConcurrency` hands out *slots*, first come first served (retries before first
attempts, so that requests already started finish first). A caller holds one slot per
HTTP attempt (a request waiting out a retry delay holds none) and sets :attr:`Slot.outcome` before
releasing it: ``"ok"``, ``"rate_limited"`` (HTTP 429 or 503), ``"error"`` (anything else) or
``"cancelled"`` (not sent).

The rule:

* **Concurrency is a fixed cap** (``max_concurrency``; the backends' ``num_concurrent``). A 429 says
  nothing about how many requests a server can hold, so the cap never falls. In a run launched as
  several processes (torchrun, accelerate, srun) the cap is the whole run's: each rank takes its
  share (:func:`rank_share`, at least 1), so the server sees the same load whatever the number of
  ranks (``split_across_ranks=False`` keeps the full cap on every rank).
* **A rate-limited request waits on its own.** Its retry delay (the server's ``Retry-After``; see
  :mod:`lmms_eval.models.api.http`) is that request's alone; the others go on. Isolated 429s, even
  one first attempt in seven, cost the attempts they waste and nothing more.
* **A storm of 429s starts pacing.** The limiter keeps the send time and outcome of recent attempts
  (the last second, at least 100) and looks at those sent after the first 429 among them, once a
  429 would be back for them (1.5 times the usual 429 round trip). When clearly more than
  ``storm_share`` (25%, by two standard errors, at least 8 attempts) were answered 429, the client
  sends faster than the server admits: from then on attempts, retries included, start one every
  ``1 / rate`` seconds, ``rate`` being the *admitted rate* (attempts not answered 429 per second
  between the first and the last attempt answered 429). Attempts already waiting to start are
  spaced out at the new rate.
  While a burst of 429s is being judged (8 within a few round trips) no new attempt starts.
* **While paced**, when ``overshoot_share`` (3%) or more of the attempts sent since the last change
  (at least 32) were answered 429, the admitted rate is measured again and the rate lowered to it,
  but by no more than that share (a measurement never raises it). After ``quiet_attempts`` (64)
  answers and ``quiet_s`` (0.25 s) without a 429 the rate rises by 5%; pacing ends once the rate is
  twice what ``max_concurrency`` attempts in flight can reach at the measured latency.
* **A cut that does not help is undone.** If the server limits the rate, slowing down lowers the
  share of 429s; if the 429s do not depend on the rate, the share stays. A cut made at a share
  under 50% that slowed sending by a quarter and left 85% of the share (judged on 32 attempts) is
  undone, and that share becomes a baseline added to both thresholds until a quiet period. So the
  rate never ratchets down on 429s it cannot avoid.

The same object gates threads (:meth:`acquire`, :meth:`slot`) and asyncio tasks (:meth:`aacquire`,
:meth:`aslot`); waits end early when the given stop signal (a ``RequestGate``) is set. With
``adaptive=False`` there is no pacing: a plain first-come-first-served semaphore.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar, cast

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")
Outcome = Literal["ok", "rate_limited", "error", "cancelled"]
# how often a waiting thread or task looks at the stop signal
STOP_POLL_S = 0.05
# the rate rule looks at the recent attempts at most this often
EVALUATE_EVERY_S = 0.005


class StopSignal(Protocol):
    """What the limiter and the HTTP client need of a stop signal (a ``RequestGate`` is one)."""

    @property
    def stopped(self) -> bool: ...

    def sleep(self, seconds: float) -> bool: ...


@dataclass
class Slot:
    """One admitted attempt. Set :attr:`outcome` before the slot is released.

    ``sent`` is when the attempt may start (its pacing time; :meth:`AdaptiveConcurrency.wait_time`
    says how long until then and marks it ``started`` at that time), ``done`` when it was released.
    """

    sent: float = 0.0
    outcome: Outcome = "error"
    done: float | None = None
    started: bool = False


@dataclass(frozen=True)
class ConcurrencyStats:
    """A snapshot of the limiter (for logs, tests and benchmarks).

    ``limit`` is the cap on attempts in flight, ``waiting`` the attempts queued for one; ``rate`` the
    pacing rate in attempts per second
    (``None``: not paced), ``min_rate`` the lowest it has been; ``decreases`` and ``increases`` count
    changes of the rate, ``reverted`` the cuts that were undone.
    """

    limit: int
    in_flight: int
    waiting: int
    max_in_flight: int
    rate: float | None
    min_rate: float | None
    decreases: int
    increases: int
    reverted: int
    rate_limited: int


async def sleep_unless_stopped(seconds: float, stop: StopSignal | None) -> bool:
    """``asyncio.sleep(seconds)`` that ends early when ``stop`` is set; ``True`` if it slept fully."""
    if stop is None:
        await asyncio.sleep(max(0.0, seconds))
        return True
    deadline = time.monotonic() + seconds
    while not stop.stopped:
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        await asyncio.sleep(min(left, STOP_POLL_S))
    return False


@dataclass
class _RateState:
    rate: float | None = None
    next_send: float = 0.0
    changed_at: float = 0.0
    evaluated_at: float = 0.0
    last_429: float = float("-inf")
    clean: int = 0  # attempts answered without a 429 since the last 429 or change of the rate
    baseline: float = 0.0
    cut: tuple[float | None, float, float] | None = None  # (rate before, share seen, send rate seen)
    latency: float | None = None  # EWMA of admitted attempts
    reject_rtt: float | None = None  # EWMA of 429 round trips
    recent: deque[Slot] = field(default_factory=deque)
    rejects: deque[float] = field(default_factory=deque)  # when the latest 429s came back
    brake_until: float = float("-inf")


def rank_share(total: int, rank: int, world_size: int) -> int:
    """Rank ``rank``'s part of ``total`` split over ``world_size`` ranks (the first ranks take the
    remainder); never below 1."""
    return max(1, total // world_size + (1 if rank < total % world_size else 0))


def _this_rank_share(total: int) -> int:
    from lmms_eval.distributed import launch_info

    launch = launch_info()
    if not launch.distributed:
        return total
    share = rank_share(total, launch.rank, launch.world_size)
    logger.info(
        "rank %d of %d: %d of the run's %d concurrent requests", launch.rank, launch.world_size, share, total
    )
    return share


class AdaptiveConcurrency:
    """A cap on attempts in flight plus a learned pacing rate; see the module docstring."""

    def __init__(
        self,
        max_concurrency: int,
        *,
        split_across_ranks: bool = True,
        adaptive: bool = True,
        horizon_s: float = 1.0,
        horizon_attempts: int = 100,
        storm_share: float = 0.25,
        overshoot_share: float = 0.03,
        quiet_s: float = 0.25,
        quiet_attempts: int = 64,
        increase: float = 0.05,
        min_rate: float = 0.5,
        min_samples: int = 8,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if not 0.0 < overshoot_share < storm_share < 1.0:
            raise ValueError(
                f"need 0 < overshoot_share < storm_share < 1, got {overshoot_share}, {storm_share}"
            )
        if split_across_ranks:
            max_concurrency = _this_rank_share(max_concurrency)
        self.max_concurrency = max_concurrency
        self.adaptive = adaptive
        self.horizon_s = horizon_s
        self.horizon_attempts = horizon_attempts
        self.storm_share = storm_share
        self.overshoot_share = overshoot_share
        self.quiet_s = quiet_s
        self.quiet_attempts = quiet_attempts
        self.increase = increase
        self.min_rate = min_rate
        self.min_samples = max(2, min_samples)
        self.clock = clock
        self._lock = threading.Lock()
        self._queue: deque[_Waiter] = deque()
        self._state = _RateState()
        self._in_flight = 0
        self._max_in_flight = 0
        self._min_rate: float | None = None
        self._decreases = 0
        self._increases = 0
        self._reverted = 0
        self._rate_limited = 0

    # -- state ---------------------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """The number of attempts allowed in flight (fixed)."""
        return self.max_concurrency

    @property
    def rate(self) -> float | None:
        """The pacing rate in attempts per second, or ``None`` when attempts are not paced."""
        return self._state.rate

    def stats(self) -> ConcurrencyStats:
        with self._lock:
            return ConcurrencyStats(
                limit=self.max_concurrency,
                in_flight=self._in_flight,
                waiting=len(self._queue),
                max_in_flight=self._max_in_flight,
                rate=self._state.rate,
                min_rate=self._min_rate,
                decreases=self._decreases,
                increases=self._increases,
                reverted=self._reverted,
                rate_limited=self._rate_limited,
            )

    # -- acquiring -----------------------------------------------------------------------------------

    def try_acquire(self) -> Slot | None:
        """A slot if one is free now and nobody waits for one, else ``None``; the attempt may
        start at its ``sent`` time."""
        with self._lock:
            if self._queue or self._in_flight >= self.max_concurrency:
                return None
            self._reserve()
            return self._schedule()

    def _reserve(self) -> None:
        self._in_flight += 1
        self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _schedule(self) -> Slot:
        """The slot of a reserved place, with its pacing time (call with the lock held)."""
        now = self.clock()
        state = self._state
        if self.adaptive and now - state.evaluated_at >= EVALUATE_EVERY_S:
            self._evaluate(now)  # judge the attempts so far before this one is scheduled
        sent = max(now, state.next_send)  # later than now while paced, or braking (see _brake)
        if state.rate is not None:
            state.next_send = sent + 1.0 / state.rate
        slot = Slot(sent)
        if self.adaptive:
            state.recent.append(slot)
        return slot

    def _enter(self, future: asyncio.Future[None] | None, retry: bool) -> Slot | _Waiter:
        """A slot at once, or a place in the queue (lock held): first come first served, except that
        retries go first, so that requests already started finish first."""
        if not self._queue and self._in_flight < self.max_concurrency:
            self._reserve()
            return self._schedule()
        waiter = _Waiter(future)
        if retry:
            self._queue.appendleft(waiter)
        else:
            self._queue.append(waiter)
        return waiter

    def acquire(self, stop: StopSignal | None = None, retry: bool = False) -> Slot | None:
        """Block the calling thread until an attempt may start; ``None`` if ``stop`` was set first.
        ``retry``: the attempt retries a request (it goes before first attempts)."""
        with self._lock:
            if stop is not None and stop.stopped:
                return None
            entry = self._enter(None, retry)
        while isinstance(entry, _Waiter):
            assert entry.event is not None
            entry.event.wait(STOP_POLL_S if stop is not None else None)
            with self._lock:
                if entry.granted:
                    entry = self._schedule()
                elif stop is not None and stop.stopped:
                    self._queue.remove(entry)
                    return None
        return self._wait_for_start(entry, stop)

    def _wait_for_start(self, slot: Slot, stop: StopSignal | None) -> Slot | None:
        while (wait := self.wait_time(slot)) > 0:
            if stop is None:
                time.sleep(wait)
            elif not stop.sleep(wait):
                self.cancel(slot)
                return None
        return slot

    async def aacquire(self, stop: StopSignal | None = None, retry: bool = False) -> Slot | None:
        """Wait (without blocking the event loop) until an attempt may start; ``None`` if stopped."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if stop is not None and stop.stopped:
                return None
            entry = self._enter(loop.create_future(), retry)
        if isinstance(entry, _Waiter):
            slot = await self._await_turn(entry, stop)
            if slot is None:
                return None
        else:
            slot = entry
        try:
            while (wait := self.wait_time(slot)) > 0:
                if not await sleep_unless_stopped(wait, stop):
                    self.cancel(slot)
                    return None
        except BaseException:
            self.cancel(slot)
            raise
        return slot

    async def _await_turn(self, waiter: _Waiter, stop: StopSignal | None) -> Slot | None:
        assert waiter.future is not None
        try:
            while not waiter.future.done():
                if stop is not None and stop.stopped:
                    raise _Stopped
                await asyncio.wait({waiter.future}, timeout=STOP_POLL_S if stop is not None else None)
        except (asyncio.CancelledError, _Stopped) as exc:
            with self._lock:
                if waiter.granted:  # handed a place meanwhile: give it on
                    self._in_flight -= 1
                    self._handoff()
                else:
                    waiter.future.cancel()
                    with contextlib.suppress(ValueError):
                        self._queue.remove(waiter)
            if isinstance(exc, _Stopped):
                return None
            raise
        with self._lock:
            return self._schedule()

    def wait_time(self, slot: Slot) -> float:
        """Seconds until ``slot`` may start (its start moves later when the rate is cut meanwhile)."""
        with self._lock:
            now = self.clock()
            state = self._state
            braked = state.evaluated_at < state.brake_until <= now  # judge before the brake lifts
            if self.adaptive and (braked or now - state.evaluated_at >= EVALUATE_EVERY_S):
                self._evaluate(now)
            wait = slot.sent - now
            slot.started = wait <= 0
            return wait

    def cancel(self, slot: Slot) -> None:
        """Give back a slot whose attempt was not sent."""
        slot.outcome = "cancelled"
        self.release(slot)

    def release(self, slot: Slot) -> None:
        """End an attempt and let its :attr:`Slot.outcome` steer the rate."""
        now = self.clock()
        with self._lock:
            self._in_flight -= 1
            slot.done = now
            if slot.outcome == "rate_limited":
                self._rate_limited += 1
            if self.adaptive and slot.outcome != "cancelled":
                self._observe(slot, now)
            self._handoff()

    @contextlib.contextmanager
    def slot(self) -> Iterator[Slot]:
        """``with limiter.slot() as slot: ...; slot.outcome = "ok"`` (threads)."""
        slot = self.acquire()
        assert slot is not None  # no stop signal: acquire always admits
        try:
            yield slot
        finally:
            self.release(slot)

    @contextlib.asynccontextmanager
    async def aslot(self) -> AsyncIterator[Slot]:
        """``async with limiter.aslot() as slot: ...`` (asyncio tasks)."""
        slot = await self.aacquire()
        assert slot is not None
        try:
            yield slot
        finally:
            self.release(slot)

    # -- the rate rule (called with the lock held) -----------------------------------------------------

    def _observe(self, slot: Slot, now: float) -> None:
        state = self._state
        took = now - slot.sent
        state.clean = 0 if slot.outcome == "rate_limited" else state.clean + 1
        if slot.outcome == "rate_limited":
            state.last_429 = now
            state.reject_rtt = took if state.reject_rtt is None else 0.8 * state.reject_rtt + 0.2 * took
            self._brake(now)
        elif slot.outcome == "ok":
            state.latency = took if state.latency is None else 0.95 * state.latency + 0.05 * took
        if slot.outcome == "rate_limited" or now - state.evaluated_at >= EVALUATE_EVERY_S:
            self._evaluate(now)  # at every 429: a storm is stopped within a few of them

    def _brake(self, now: float) -> None:
        """A burst of 429s (``min_samples`` within a few round trips) while not paced: hold new
        attempts until the attempts already sent have been answered and can be judged."""
        state = self._state
        settle = 1.5 * (state.reject_rtt or 0.0) + 0.001
        state.rejects.append(now)
        while state.rejects and state.rejects[0] < now - 2.0 * settle:
            state.rejects.popleft()
        if state.rate is None and len(state.rejects) >= self.min_samples:
            state.brake_until = now + settle
            state.next_send = max(state.next_send, state.brake_until)

    def _evaluate(self, now: float) -> None:
        state = self._state
        state.evaluated_at = now
        while len(state.recent) > self.horizon_attempts and state.recent[0].sent < now - self.horizon_s:
            state.recent.popleft()
        if now - state.last_429 >= self.quiet_s:
            self._quiet(now)
            return
        first_429 = next((s.sent for s in state.recent if s.outcome == "rate_limited"), now)
        # attempts sent long enough ago that a 429 would be back (the later ones would count only
        # their quick 429s, not their slow successes); strictly after the first 429: what was sent
        # before it passed on a full bucket
        settled = now - 1.5 * (state.reject_rtt or 0.0) - 0.001
        since_429 = [s for s in state.recent if first_429 < s.sent <= settled and s.outcome != "cancelled"]
        start = max(first_429, state.changed_at)
        recent = [s for s in since_429 if s.sent > start]  # sent at the current rate
        if len(recent) < self.min_samples:
            return
        rejected = sum(s.outcome == "rate_limited" for s in recent)
        share, send_rate = rejected / len(recent), len(recent) / max(now - start, 0.01)
        judging = state.cut is not None  # the last cut, on enough attempts sent after it
        if judging and (len(recent) < 4 * self.min_samples or self._undo_cut(share, send_rate, now)):
            return
        if state.rate is None:  # a storm: clearly (two standard errors) above its threshold
            if share - _margin(share, len(recent)) < self.storm_share + state.baseline:
                return
        elif len(recent) < 4 * self.min_samples or share < self.overshoot_share + state.baseline:
            return  # paced: a measurement on enough attempts
        new_rate = max(self.min_rate, self._admitted_rate(since_429, first_429))
        if state.rate is not None:  # paced: never below what the share of 429s asks for (a stall in
            new_rate = max(new_rate, state.rate * (1.0 - share))  # sending is not the server's rate)
            if new_rate >= state.rate:
                return  # sending no faster than the server admits: the 429s do not come from the rate
        logger.info(
            "%.0f%% of recent attempts rate limited: pacing at %.1f requests/s (was %s)",
            100 * share,
            new_rate,
            "unpaced" if state.rate is None else f"{state.rate:.1f}",
        )
        state.cut = (state.rate, share, send_rate)
        self._set_rate(new_rate, now)
        self._decreases += 1

    @staticmethod
    def _admitted_rate(attempts: list[Slot], first_429: float) -> float:
        """Attempts not answered 429 per second while the server was rejecting: the server's rate.

        Counted between the first and the last attempt answered 429 (the server had no room at
        either end, so what it admitted in between is what it makes room for, however unevenly the
        client sent), or up to the last attempt when the 429s span under 20 ms. Until 4 were
        admitted it counts up to one more (fading out), so that a first estimate from a few
        milliseconds errs high (a few more 429s, corrected at once) rather than low (slow to climb
        back).
        """
        last_429 = next((s.sent for s in reversed(attempts) if s.outcome == "rate_limited"), first_429)
        end = last_429 if last_429 - first_429 >= 0.02 else attempts[-1].sent
        admitted = sum(s.outcome != "rate_limited" for s in attempts if s.sent < end)
        return (admitted + max(0.0, 2.0 - admitted / 4.0)) / max(end - first_429, 0.01)

    def _undo_cut(self, share: float, send_rate: float, now: float) -> bool:
        """Judge the last cut by the attempts sent after it; ``True`` if it was undone.

        If the server limits the rate, slowing down lowers the share of 429s (the server admits the
        same number, out of fewer); if the 429s do not depend on the rate, the share stays. A cut
        made at a share under 50% that slowed sending by a quarter or more and left at least 85% of
        the share is undone.
        """
        state = self._state
        assert state.cut is not None
        before, share_before, rate_before = state.cut
        state.cut = None
        if share_before >= 0.5 or send_rate > 0.75 * rate_before or share < 0.85 * share_before:
            return False  # (most attempts rejected: a rate limit, whatever else is going on)
        logger.info(
            "pacing did not reduce 429s (%.0f%% of attempts); back to %s",
            100 * share,
            "unpaced" if before is None else f"{before:.1f} requests/s",
        )
        state.baseline = max(state.baseline, share)
        state.rate = before
        state.changed_at = now
        self._reverted += 1
        return True

    def _quiet(self, now: float) -> None:
        """No 429 for ``quiet_s``: after ``quiet_attempts`` clean answers too, forget the baseline and
        raise the rate (or stop pacing)."""
        state = self._state
        if state.clean < self.quiet_attempts:
            return
        state.baseline = 0.0
        state.cut = None
        if state.rate is None or now - state.changed_at < self.quiet_s:
            return
        step = self.increase
        ceiling = 2.0 * self.max_concurrency / state.latency if state.latency else None
        if ceiling is not None and state.rate * (1.0 + step) >= ceiling:
            logger.info("no 429 for %.2f s: attempts are no longer paced", self.quiet_s)
            state.rate = None
            state.changed_at = now
        else:
            self._set_rate(state.rate * (1.0 + step), now)
        self._increases += 1

    def _set_rate(self, rate: float, now: float) -> None:
        state = self._state
        slower = state.rate is None or rate < state.rate
        state.clean = 0
        state.rate = rate
        state.changed_at = now
        if slower:  # attempts waiting to start are spaced out again at the new rate
            start = now
            for slot in state.recent:
                if not slot.started and slot.done is None:
                    slot.sent = start = max(start, slot.sent)
                    start += 1.0 / rate
            state.next_send = max(state.next_send, start)
        self._min_rate = rate if self._min_rate is None else min(self._min_rate, rate)

    def _handoff(self) -> None:
        """Give free places to the waiters, first come first served (call with the lock held)."""
        while self._queue and self._in_flight < self.max_concurrency:
            waiter = self._queue.popleft()
            if waiter.future is None:
                assert waiter.event is not None
                self._reserve()
                waiter.granted = True
                waiter.event.set()
                continue
            if waiter.future.done():
                continue  # cancelled
            try:
                waiter.future.get_loop().call_soon_threadsafe(_resolve, waiter.future)
            except RuntimeError:  # its event loop is closed; nobody waits on it any more
                continue
            self._reserve()
            waiter.granted = True


class _Stopped(Exception):
    pass


class _Waiter:
    """A thread (``event``) or task (``future``) in the queue for a place."""

    __slots__ = ("event", "future", "granted")

    def __init__(self, future: asyncio.Future[None] | None) -> None:
        self.future = future
        self.event = threading.Event() if future is None else None
        self.granted = False


def _margin(share: float, samples: int) -> float:
    """Two standard errors of a share measured on ``samples`` attempts."""
    return 2.0 * math.sqrt(share * (1.0 - share) / samples)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def run_in_threads(func: Callable[[T], R], items: Sequence[T], workers: int, name: str) -> list[R]:
    """``[func(item) for item in items]`` on ``workers`` daemon threads, taking items in order.

    The first exception of ``func`` is raised here (the workers then take no new items). When the
    calling thread is interrupted (KeyboardInterrupt) the workers take no new items and are left to
    finish what they hold: being daemon threads, they do not keep the process alive at exit.
    """
    results: list[R | None] = [None] * len(items)
    order = itertools.count()
    lock = threading.Lock()
    finished = threading.Event()
    abort = threading.Event()
    errors: list[BaseException] = []
    left = [len(items)]

    def work() -> None:
        while not abort.is_set():
            with lock:
                index = next(order)
            if index >= len(items):
                return
            try:
                results[index] = func(items[index])
            except BaseException as exc:
                errors.append(exc)
                abort.set()
                finished.set()
                return
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    finished.set()

    if not items:
        return []
    for number in range(max(1, min(workers, len(items)))):
        threading.Thread(target=work, name=f"{name}-{number}", daemon=True).start()
    try:
        finished.wait()
    finally:
        abort.set()
    if errors:
        raise errors[0]
    return cast("list[R]", results)  # every index was filled: no error, nothing left


__all__ = [
    "AdaptiveConcurrency",
    "ConcurrencyStats",
    "Outcome",
    "Slot",
    "StopSignal",
    "rank_share",
    "run_in_threads",
    "sleep_unless_stopped",
]
