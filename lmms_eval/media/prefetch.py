"""Decoding that overlaps inference: a bounded pool loads the media of the next batches.

:func:`prefetch_batches` takes the batches a backend will run (lists of items) and a ``load``
function (an item's media: decode a video, open an image, render a prompt). While the caller
works on batch ``k`` (the model generates), a thread pool is already loading the items of
batches ``k + 1 .. k + ahead``, each item as its own task, so a batch of videos decodes in
parallel. Batches come back in order as lists of :class:`Loaded` (the value, or the exception
``load`` raised for that item, so one broken video fails one item, not the batch).

Memory is bounded: at most ``ahead + 1`` batches of loaded media exist at once (the one in use and
those loaded ahead); nothing is loaded further ahead, however fast decoding is. Decoders that
release the GIL (PyAV, torchcodec, PIL) decode in parallel with the model.

Settings, read when a run starts (:func:`prefetch_settings`):

* ``LMMS_MEDIA_PREFETCH``: batches loaded ahead, default 1; ``0`` loads each batch when it is
  needed, in the calling thread (no pool);
* ``LMMS_MEDIA_WORKERS``: loading threads, default the CPU count, at most 4.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

T = TypeVar("T")
R = TypeVar("R")

PREFETCH_ENV = "LMMS_MEDIA_PREFETCH"
WORKERS_ENV = "LMMS_MEDIA_WORKERS"
DEFAULT_PREFETCH = 1
MAX_DEFAULT_WORKERS = 4


@dataclass(frozen=True)
class Loaded(Generic[R]):
    """One item's media: ``value``, or the ``error`` its loading raised."""

    value: R | None = None
    error: Exception | None = None

    def get(self) -> R:
        """The value; re-raises the loading error."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} must be 0 or more")
    return value


def prefetch_settings(ahead: int | None = None, workers: int | None = None) -> tuple[int, int]:
    """``(batches ahead, threads)``: the arguments, else the environment (module doc), else 1 and
    the CPU count (at most 4)."""
    default_workers = max(1, min(MAX_DEFAULT_WORKERS, os.cpu_count() or 1))
    depth = _env_int(PREFETCH_ENV, DEFAULT_PREFETCH) if ahead is None else ahead
    threads = _env_int(WORKERS_ENV, default_workers) if workers is None else workers
    return max(0, depth), max(1, threads)


def _load_now(load: Callable[[T], R], item: T) -> Loaded[R]:
    try:
        return Loaded(value=load(item))
    except Exception as exc:  # one item's failure is that item's result
        return Loaded(error=exc)


def prefetch_batches(
    batches: Iterable[Sequence[T]],
    load: Callable[[T], R],
    ahead: int | None = None,
    workers: int | None = None,
) -> Generator[list[Loaded[R]], None, None]:
    """Each batch's items loaded, in order, loading up to ``ahead`` batches in advance (module doc).

    Closing the iterator early (a ``break``, an exception in the caller) cancels the loads not
    yet started and does not wait for those running.
    """
    depth, threads = prefetch_settings(ahead, workers)
    if depth == 0:
        for batch in batches:
            yield [_load_now(load, item) for item in batch]
        return
    from concurrent.futures import ThreadPoolExecutor

    pending: deque[list[Future[Loaded[R]]]] = deque()
    source = iter(batches)
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lmms-media")
    try:
        while True:
            while len(pending) <= depth:
                batch = next(source, None)
                if batch is None:
                    break
                pending.append([pool.submit(_load_now, load, item) for item in batch])
            if not pending:
                return
            futures = pending.popleft()
            yield [future.result() for future in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


__all__ = [
    "DEFAULT_PREFETCH",
    "PREFETCH_ENV",
    "WORKERS_ENV",
    "Loaded",
    "prefetch_batches",
    "prefetch_settings",
]
