"""Inference stage: send requests to the model grouped by request type, with progress.

The stage puts the run's :class:`~lmms_eval.api.gate.RequestGate` on the model (``lm.gate``).
Backends that report each answer to it give per-request progress (with an ETA), stop sending once
the ``--max_tokens`` budget is spent or the task's circuit breaker opens, and stop at once on
Ctrl-C; each answer they report is recorded on its request at once (and stored by the response
cache, which listens to the gate too), so a crash loses nothing answered.

How requests are handed over depends on the backend:

* a *streaming* backend (``streams_answers = True``: the API backends, which keep a window of
  ``num_concurrent`` attempts in flight that refills as answers arrive) gets all requests of a type
  in one call, so no request waits for a slower one before it is sent;
* any other backend (local models that batch) gets chunks of ``max(256, 32 x batch_size)``
  requests, so that one that reports nothing to the gate loses at most a chunk in a crash. Those
  that report each batch's answers (the HF backends) have them recorded batch by batch.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tqdm import tqdm

from lmms_eval.api.chat_layout import CHAT_LAYOUT_TYPES, as_layout, chat_layout, layout_error
from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import Instance, RequestFailure, split_generation_output
from lmms_eval.api.model import lmms
from lmms_eval.secrets import redact_text

logger = logging.getLogger(__name__)

REQUEST_ORDER = (
    "loglikelihood",
    "generate_until",
    "generate_until_multi_round",
    "generate_until_agentic",
    "generate_visual_cot",
)

ModelCall = Callable[[str, list[Instance]], list[Any]]
# (request type, requests answered, requests in all) after each answer
ProgressListener = Callable[[str, int, int], None]


# the cyclic garbage collector's first threshold during a run (Python's default is 700)
RUN_GC_THRESHOLD = 50_000


_gc_lock = threading.Lock()
_gc_runs = 0  # runs inside fewer_collections() now (evaluations may run in several threads)
_gc_saved: tuple[tuple[int, ...], bool] = ((700, 10, 10), False)  # thresholds, whether we froze


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the tasks with fewer cyclic garbage collections: the objects alive at the start (modules,
    the task's docs) are frozen out of them and a collection starts after 50,000 allocations, not
    700. A run allocates several objects per document that live until its task ends, which by
    default sets off full collections over every live object again and again. Nested or concurrent
    runs share one setting; the last to end puts the collector back as it was."""
    global _gc_runs, _gc_saved
    with _gc_lock:
        if _gc_runs == 0:
            thresholds = gc.get_threshold()
            ours = gc.get_freeze_count() == 0  # someone froze objects already: leave theirs frozen
            gc.freeze()
            gc.set_threshold(RUN_GC_THRESHOLD, *thresholds[1:])
            _gc_saved = (thresholds, ours)
        _gc_runs += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs -= 1
            if _gc_runs == 0:
                thresholds, ours = _gc_saved
                gc.set_threshold(*thresholds)
                if ours:
                    gc.unfreeze()


def default_model_call(lm: lmms) -> ModelCall:
    """Call ``lm``'s method for the request type; chat requests go in the layout the model takes
    (:mod:`lmms_eval.api.chat_layout`), and a failed unpack of them is a :class:`ChatLayoutError`."""
    chat = not getattr(lm, "is_simple", True)
    layout = chat_layout(type(lm)) if chat else "guide"

    def call(request_type: str, requests: list[Instance]) -> list[Any]:
        if not chat or request_type not in CHAT_LAYOUT_TYPES:
            return getattr(lm, request_type)(requests)
        try:
            return getattr(lm, request_type)(as_layout(requests, layout))
        except ValueError as exc:
            error = layout_error(type(lm), layout, exc)
            if error is None:
                raise
            raise error from exc

    return call


def run_requests(
    lm: lmms,
    requests: Sequence[Instance],
    model_call: ModelCall | None = None,
    chunk_size: int | None = None,
    show_progress: bool | None = None,
    gate: RequestGate | None = None,
    listener: ProgressListener | None = None,
) -> dict[str, float]:
    """Fill ``resps`` and ``token_counts`` of every request; returns seconds spent per request type.

    Each request is sent ``repeats`` times (consecutively). A streaming backend gets all requests of
    a type at once, any other one chunks of ``chunk_size`` (see the module docstring); models see
    requests in request order and must answer in that order. ``listener`` hears the count of answered requests as it grows. A
    :class:`RequestFailure` answer is recorded in ``failures``. Requests that already
    carry a failure (their document could not be turned into a request) are never sent. On
    KeyboardInterrupt the gate is stopped, so backend threads stop too, and the interrupt goes on.
    """
    call = model_call or default_model_call(lm)
    gate = gate if gate is not None else RequestGate(breaker_after=None)
    lm.gate = gate
    by_type: dict[str, list[Instance]] = defaultdict(list)
    for request in requests:
        by_type[request.request_type].append(request)
    timings: dict[str, float] = {}
    size = chunk_size or max(256, 32 * max(1, int(getattr(lm, "batch_size", 1) or 1)))
    streams = chunk_size is None and bool(getattr(lm, "streams_answers", False))
    order = [t for t in REQUEST_ORDER if t in by_type] + [t for t in by_type if t not in REQUEST_ORDER]
    try:
        for request_type in order:
            for r in by_type[request_type]:
                r.resps, r.token_counts = [], []
            expanded = [r for r in by_type[request_type] if not r.failures for _ in range(max(1, r.repeats))]
            started = time.perf_counter()
            step = max(1, len(expanded)) if streams else size
            _run_type(lm, request_type, expanded, call, step, gate, show_progress, listener, streams)
            timings[request_type] = time.perf_counter() - started
            logger.info("%s: %d requests in %.2f s", request_type, len(expanded), timings[request_type])
    except KeyboardInterrupt:
        gate.stop("interrupted")
        raise
    finally:
        gate.on_progress = None
    return timings


def _run_type(
    lm: lmms,
    request_type: str,
    expanded: list[Instance],
    call: ModelCall,
    size: int,
    gate: RequestGate,
    show_progress: bool | None,
    listener: ProgressListener | None = None,
    streams: bool = False,
) -> None:
    disable = None if show_progress is None else not show_progress  # None: only on a terminal
    with tqdm(total=len(expanded), desc=request_type, unit="req", disable=disable, leave=False) as bar:
        answered = 0

        def advance(n: int) -> None:
            nonlocal answered
            answered += n
            bar.update(n)
            if listener is not None:
                listener(request_type, answered, len(expanded))

        gate.on_progress = advance
        if listener is not None:
            listener(request_type, 0, len(expanded))
        recorder = _Recorder(expanded, early=streams)
        with gate.listen(recorder.heard):
            for begin in range(0, len(expanded), size):
                chunk = expanded[begin : begin + size]
                reported_before = gate.start_chunk()
                refusal = gate.refusal()
                outputs = [refusal] * len(chunk) if refusal is not None else call(request_type, chunk)
                if len(outputs) != len(chunk):
                    raise RuntimeError(
                        f"model {type(lm).__name__}.{request_type} returned {len(outputs)} results "
                        f"for {len(chunk)} requests"
                    )
                reported = gate.state().reported - reported_before
                if reported == 0:  # a backend that does not report: account for the chunk here
                    for request, output in zip(chunk, outputs):
                        gate.done(output, request)
                elif reported < len(chunk):  # answered without the model (response cache hits)
                    advance(len(chunk) - reported)
                recorder.finish(chunk, outputs)


class _Recorder:
    """Records answers on their requests: as the gate hears them, or when the model call returns.

    A request sent once to a streaming backend is recorded as soon as its answer is reported; if
    the call then returns another answer for it, that one replaces it (what a call returns is
    authoritative). Other answers are recorded in order when the call returns (for a request sent
    ``repeats`` times, which answer is which repeat is only known then).
    """

    def __init__(self, expanded: Sequence[Instance], early: bool) -> None:
        counts = Counter(map(id, expanded)) if early else Counter[int]()
        self._once = {key for key, times in counts.items() if times == 1}
        self._heard: dict[int, Any] = {}
        self._lock = threading.Lock()

    def heard(self, request: Any, output: Any) -> None:
        key = id(request)
        with self._lock:
            if key not in self._once or key in self._heard:
                return
            self._heard[key] = output
        _record(request, output)

    def finish(self, chunk: Sequence[Instance], outputs: Sequence[Any]) -> None:
        for request, output in zip(chunk, outputs):
            key = id(request)
            if key in self._heard:
                if self._heard[key] is output:
                    continue
                request.resps, request.token_counts, request.failures = [], [], []
            _record(request, output)


def _record(request: Instance, output: Any) -> None:
    value, counts = split_generation_output(output)
    if isinstance(value, RequestFailure):  # error bodies may echo a key back
        request.failures.append(redact_text(str(value)))
        value = None
    request.resps.append(value)
    request.token_counts.append(counts)
