"""Inference stage: send requests to the model grouped by request type, in chunks, with progress."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from lmms_eval.api.instance import Instance, unwrap_generation_output
from lmms_eval.api.model import lmms

logger = logging.getLogger(__name__)

REQUEST_ORDER = ("loglikelihood", "generate_until", "generate_until_multi_round")

ModelCall = Callable[[str, list[Instance]], list[Any]]


def default_model_call(lm: lmms) -> ModelCall:
    def call(request_type: str, requests: list[Instance]) -> list[Any]:
        return getattr(lm, request_type)(requests)

    return call


def run_requests(
    lm: lmms,
    requests: Sequence[Instance],
    model_call: ModelCall | None = None,
    chunk_size: int | None = None,
    show_progress: bool | None = None,
) -> dict[str, float]:
    """Fill ``resps`` and ``token_counts`` of every request; returns seconds spent per request type.

    Each request is sent ``repeats`` times (consecutively). Requests go to the model in chunks so the
    progress bar moves and a crash loses at most one chunk; models see chunks in request order and
    must answer in that order.
    """
    call = model_call or default_model_call(lm)
    by_type: dict[str, list[Instance]] = defaultdict(list)
    for request in requests:
        by_type[request.request_type].append(request)
    timings: dict[str, float] = {}
    size = chunk_size or max(256, 32 * max(1, int(getattr(lm, "batch_size", 1) or 1)))
    for request_type in [t for t in REQUEST_ORDER if t in by_type] + [
        t for t in by_type if t not in REQUEST_ORDER
    ]:
        expanded = [r for r in by_type[request_type] for _ in range(max(1, r.repeats))]
        for r in by_type[request_type]:
            r.resps, r.token_counts = [], []
        started = time.perf_counter()
        disable = None if show_progress is None else not show_progress  # None: only on a terminal
        with tqdm(total=len(expanded), desc=request_type, unit="req", disable=disable, leave=False) as bar:
            for begin in range(0, len(expanded), size):
                chunk = expanded[begin : begin + size]
                outputs = call(request_type, chunk)
                if len(outputs) != len(chunk):
                    raise RuntimeError(
                        f"model {type(lm).__name__}.{request_type} returned {len(outputs)} results for {len(chunk)} requests"
                    )
                for request, output in zip(chunk, outputs):
                    value, counts = unwrap_generation_output(output)
                    request.resps.append(value)
                    request.token_counts.append(counts)
                bar.update(len(chunk))
        timings[request_type] = time.perf_counter() - started
        logger.info("%s: %d requests in %.2f s", request_type, len(expanded), timings[request_type])
    return timings
