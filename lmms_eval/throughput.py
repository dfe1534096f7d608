"""Throughput of a task's inference: latency, time to first token, time per output token, speed.

Built from what models report per response (:class:`~lmms_eval.api.instance.GenerationResult`:
token counts, latency, time to first token) and the wall time of the inference stage.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from typing import Any

from lmms_eval.api.instance import FAILURE_KINDS, Instance

logger = logging.getLogger(__name__)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def summarize(task_name: str, requests: Sequence[Instance], wall_seconds: float) -> dict[str, Any]:
    """Throughput figures of one task (``None`` where the model reported nothing to compute them)."""
    records = [c for r in requests for c in r.token_counts if c]
    output_tokens = [float(c["output_tokens"]) for c in records if c.get("output_tokens") is not None]
    input_tokens = [float(c["input_tokens"]) for c in records if c.get("input_tokens") is not None]
    latencies = [float(c["latency_s"]) for c in records if c.get("latency_s") is not None]
    ttfts = [float(c["time_to_first_token_s"]) for c in records if c.get("time_to_first_token_s") is not None]
    per_token = [
        (float(c["latency_s"]) - float(c["time_to_first_token_s"])) / (float(c["output_tokens"]) - 1)
        for c in records
        if c.get("latency_s") is not None
        and c.get("time_to_first_token_s") is not None
        and (c.get("output_tokens") or 0) > 1
    ]
    total_out = math.fsum(output_tokens)
    summary = {
        "responses": sum(len(r.resps) for r in requests),
        "inference_seconds": wall_seconds,
        "output_tokens_total": int(total_out) if output_tokens else None,
        "output_tokens_mean": _mean(output_tokens),
        "input_tokens_mean": _mean(input_tokens),
        "e2e_latency_s_mean": _mean(latencies),
        "time_to_first_token_s_mean": _mean(ttfts),
        "time_per_output_token_s_mean": _mean(per_token),
        "output_tokens_per_second": total_out / wall_seconds if output_tokens and wall_seconds > 0 else None,
    }
    if latencies or output_tokens:
        logger.info(
            "%s throughput: E2E %s s, TTFT %s s, TPOT %s s, %s tokens/s, %s output tokens",
            task_name,
            _fmt(summary["e2e_latency_s_mean"]),
            _fmt(summary["time_to_first_token_s_mean"]),
            _fmt(summary["time_per_output_token_s_mean"]),
            _fmt(summary["output_tokens_per_second"]),
            summary["output_tokens_total"],
        )
    return summary


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4g}"


USAGE_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens")


def usage(requests: Sequence[Instance]) -> dict[str, int]:
    """Token usage of one task's responses (what the models reported)."""
    records = [c for r in requests for c in r.token_counts if c]
    totals = {name: int(math.fsum(float(c.get(name) or 0) for c in records)) for name in USAGE_FIELDS}
    totals["total_tokens"] = totals["input_tokens"] + totals["output_tokens"]
    totals["n_api_calls"] = len(records)
    return totals


def total_usage(per_task: Iterable[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = dict.fromkeys((*USAGE_FIELDS, "total_tokens", "n_api_calls"), 0)
    for entry in per_task:
        for key in out:
            out[key] += int(entry.get(key, 0))
    return out


def failure_kind(error: str) -> str:
    """The :data:`~lmms_eval.api.instance.FailureKind` of a recorded failure message."""
    head = error.split(":", 1)[0]
    return head if head in FAILURE_KINDS else "error"


def _doc_kind(errors: list[str]) -> str:
    """A document was not asked only if none of its requests was; else the first other kind."""
    kinds = [failure_kind(e) for e in errors] or ["error"]
    return next((k for k in kinds if k != "not_sent"), "not_sent")


def failure_summary(failed: dict[int, list[str]], examples: int = 5) -> dict[str, Any]:
    """How many documents of a task failed, by kind, with the first few errors.

    ``doc_ids`` lists the first 50 failed documents; ``not_sent_doc_ids`` every document that was
    never asked (token budget spent, circuit breaker open, run stopped), so a rerun knows them.
    """
    kinds = {d: _doc_kind(errors) for d, errors in failed.items()}
    by_kind: dict[str, int] = {}
    for kind in kinds.values():
        by_kind[kind] = by_kind.get(kind, 0) + 1
    shown = sorted(failed.items())[:examples]
    summary: dict[str, Any] = {
        "docs": len(failed),
        "by_kind": dict(sorted(by_kind.items())),
        "doc_ids": sorted(failed)[:50],
        "examples": [{"doc_id": d, "kind": kinds[d], "errors": e[:2]} for d, e in shown],
    }
    not_sent = sorted(d for d, kind in kinds.items() if kind == "not_sent")
    if not_sent:
        summary["not_sent_doc_ids"] = not_sent
    return summary
