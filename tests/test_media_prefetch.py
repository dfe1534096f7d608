"""``prefetch_batches``: in order, bounded ahead, per-item errors, overlap with the caller's work."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from lmms_eval.media import Loaded, prefetch_batches, prefetch_settings


def test_batches_come_back_in_order_with_per_item_errors() -> None:
    def load(item: int) -> int:
        if item == 4:
            raise ValueError("broken item 4")
        return item * 10

    batches = [[0, 1], [2, 3, 4], [], [5]]
    got = list(prefetch_batches(batches, load, ahead=2, workers=3))
    assert [[x.value for x in batch] for batch in got] == [[0, 10], [20, 30, None], [], [50]]
    error = got[1][2].error
    assert isinstance(error, ValueError) and str(error) == "broken item 4"
    with pytest.raises(ValueError, match="broken item 4"):
        got[1][2].get()
    assert got[0][1].get() == 10


def test_loading_stays_a_bounded_number_of_batches_ahead() -> None:
    loaded: list[int] = []
    lock = threading.Lock()

    def load(item: int) -> int:
        with lock:
            loaded.append(item)
        return item

    seen_ahead = []
    stream = prefetch_batches([[i] for i in range(10)], load, ahead=2, workers=2)
    for k, _batch in enumerate(stream):
        time.sleep(0.02)  # the caller works; the pool has had time to load all it may
        with lock:
            seen_ahead.append(max(loaded) - k)
    assert max(seen_ahead) == 2  # never more than 2 batches beyond the one in use


def test_without_prefetch_items_load_in_the_callers_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMMS_MEDIA_PREFETCH", "0")
    threads: list[str] = []

    def load(item: int) -> int:
        threads.append(threading.current_thread().name)
        return item

    assert [[x.get() for x in b] for b in prefetch_batches([[1, 2], [3]], load)] == [[1, 2], [3]]
    assert set(threads) == {threading.current_thread().name}
    assert prefetch_settings() == (0, prefetch_settings()[1])
    monkeypatch.setenv("LMMS_MEDIA_WORKERS", "3")
    monkeypatch.setenv("LMMS_MEDIA_PREFETCH", "2")
    assert prefetch_settings() == (2, 3) and prefetch_settings(1, 5) == (1, 5)
    monkeypatch.setenv("LMMS_MEDIA_WORKERS", "many")
    with pytest.raises(ValueError, match="LMMS_MEDIA_WORKERS='many' is not an integer"):
        prefetch_settings()


def test_loading_overlaps_the_callers_work() -> None:
    """With ``ahead=1`` the next batch loads while the caller works on this one; with ``ahead=0``
    nothing loads until the caller asks. (The speed-up itself is measured in bench/bench_video.py.)"""

    def seen_during_first_batch(ahead: int) -> list[int]:
        loading_next = threading.Event()
        started: list[int] = []

        def load(item: int) -> int:
            started.append(item)
            if item == 1:
                loading_next.set()
            return item

        seen: list[int] = []
        for batch in prefetch_batches([[i] for i in range(6)], load, ahead=ahead, workers=2):
            if batch[0].value == 0:
                if ahead:
                    assert loading_next.wait(timeout=30)  # a hang guard, not a speed target
                seen = sorted(started)
        return seen

    assert seen_during_first_batch(0) == [0]
    assert seen_during_first_batch(1)[:2] == [0, 1]


def test_closing_early_cancels_loads_not_started() -> None:
    started: list[Any] = []

    def load(item: int) -> int:
        started.append(item)
        time.sleep(0.05)
        return item

    stream = prefetch_batches([[i] for i in range(50)], load, ahead=1, workers=1)
    first = next(stream)
    stream.close()
    time.sleep(0.15)
    assert first[0] == Loaded(value=0) and len(started) <= 3
