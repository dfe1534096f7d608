"""Inference stage: send requests to the model grouped by request type, in chunks, with progress."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from lmms_eval.api.instance import Instance, RequestFailure, unwrap_generation_output
from lmms_eval.api.model import lmms

logger = logging.getLogger(__name__)

REQUEST_ORDER = ("loglikelihood", "generate_until", "generate_until_multi_round")

ModelCall = Callable[[str, list[Instance]], list[Any]]


def default_model_call(lm: lmms) -> ModelCall:
    def call(request_type: str, requests: list[Instance]) -> list[Any]:
        return getattr(lm, request_type)(requests)

    return call


class TokenBudget:
    """A total-token budget (``--max_tokens``) shared by all tasks of a run."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0

    def add(self, counts: dict[str, Any] | None) -> None:
        if counts:
            self.used += int(counts.get("input_tokens") or 0) + int(counts.get("output_tokens") or 0)

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.used >= self.limit


def run_requests(
    lm: lmms,
    requests: Sequence[Instance],
    model_call: ModelCall | None = None,
    chunk_size: int | None = None,
    show_progress: bool | None = None,
    budget: TokenBudget | None = None,
) -> dict[str, float]:
    """Fill ``resps`` and ``token_counts`` of every request; returns seconds spent per request type.

    Each request is sent ``repeats`` times (consecutively). Requests go to the model in chunks so the
    progress bar moves and a crash loses at most one chunk; models see chunks in request order and
    must answer in that order. A :class:`RequestFailure` answer is recorded in ``failures``; once the
    token ``budget`` is spent, the remaining requests are not sent and fail with that reason.
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
                if budget is not None and budget.exhausted:
                    outputs = [RequestFailure(f"token budget of {budget.limit} exhausted", 0) for _ in chunk]
                else:
                    outputs = call(request_type, chunk)
                if len(outputs) != len(chunk):
                    raise RuntimeError(
                        f"model {type(lm).__name__}.{request_type} returned {len(outputs)} results for {len(chunk)} requests"
                    )
                for request, output in zip(chunk, outputs):
                    value, counts = unwrap_generation_output(output)
                    if isinstance(value, RequestFailure):
                        request.failures.append(str(value))
                        value = None
                    request.resps.append(value)
                    request.token_counts.append(counts)
                    if budget is not None:
                        budget.add(counts)
                bar.update(len(chunk))
        timings[request_type] = time.perf_counter() - started
        logger.info("%s: %d requests in %.2f s", request_type, len(expanded), timings[request_type])
    return timings
