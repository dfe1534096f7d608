"""Throughput of a task's inference: latency, time to first token, time per output token, speed;
token usage; and the published ``efficiency`` section (output tokens per correct answer).

Built from what models report per response (:class:`~lmms_eval.api.instance.GenerationResult`:
token counts, latency, time to first token) and the wall time of the inference stage.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

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
    measured = [
        f"{label}{summary[key]:.4g}{unit}"
        for label, key, unit in (
            ("E2E ", "e2e_latency_s_mean", " s"),
            ("TTFT ", "time_to_first_token_s_mean", " s"),
            ("TPOT ", "time_per_output_token_s_mean", " s"),
            ("", "output_tokens_per_second", " tokens/s"),
        )
        if summary[key] is not None
    ]
    if summary["output_tokens_total"] is not None:
        measured.append(f"{summary['output_tokens_total']} output tokens")
    if measured:  # only what the model measured: the dummy reports no latencies
        logger.info("%s throughput: %s", task_name, ", ".join(measured))
    return summary


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


# -- efficiency: output tokens per correct answer (the published ``efficiency`` section) ----------

# the metric whose per-document value counts as "correct", in order; then any "*_score" metric
CORRECTNESS_METRICS = ("score", "acc", "accuracy", "exact_match")
EFFICIENCY_KEYS = (
    "docs",
    "docs_with_token_counts",
    "total_input_tokens",
    "total_output_tokens",
    "total_tokens",
    "total_correct_score",
    "avg_output_tokens_per_sample",
    "tokens_per_correct_answer",
)


def correct_score(metrics: Mapping[str, Any]) -> float:
    """How correct one document's answer was, from its metric values (0 when none says).

    The first of ``score``, ``acc``, ``accuracy``, ``exact_match``, then the first metric named
    ``*_score``, whose value is a number or a dict with a numeric ``"score"``; negative values and
    NaN count as 0.
    """
    names = [*CORRECTNESS_METRICS, *(m for m in metrics if m.endswith("_score"))]
    for name in names:
        value = metrics.get(name)
        if isinstance(value, dict):
            value = value.get("score")
        if isinstance(value, (bool, int, float)):
            number = float(value)
            return 0.0 if math.isnan(number) else max(0.0, number)
    return 0.0


def _doc_metrics(
    sample_metrics: Mapping[tuple[str, str], Sequence[Any]],
    sample_doc_ids: Mapping[tuple[str, str], Sequence[int]],
) -> dict[int, dict[str, Any]]:
    """Per document, each metric's value under one filter chain (``none`` when present, else the first)."""
    filters = list(dict.fromkeys(f for _, f in sample_metrics))
    chosen = "none" if "none" in filters else (filters[0] if filters else None)
    docs: dict[int, dict[str, Any]] = {}
    for (metric, filter_key), values in sample_metrics.items():
        if filter_key != chosen:
            continue
        for doc_id, value in zip(sample_doc_ids.get((metric, filter_key), ()), values):
            docs.setdefault(doc_id, {})[metric] = value
    return docs


def _efficiency_entry(
    docs: float, counted: float, inputs: float, outputs: float, correct: float
) -> dict[str, Any]:
    return {
        "docs": docs,
        "docs_with_token_counts": counted,
        "total_input_tokens": inputs,
        "total_output_tokens": outputs,
        "total_tokens": inputs + outputs,
        "total_correct_score": correct,
        "avg_output_tokens_per_sample": outputs / counted if counted else 0.0,
        "tokens_per_correct_answer": outputs / correct if correct > 0 else None,
    }


def task_efficiency(
    requests: Sequence[Instance],
    sample_metrics: Mapping[tuple[str, str], Sequence[Any]],
    sample_doc_ids: Mapping[tuple[str, str], Sequence[int]],
) -> dict[str, Any]:
    """The ``efficiency`` entry of one task (the published keys, :data:`EFFICIENCY_KEYS`).

    ``tokens_per_correct_answer`` is the output tokens of all documents over the sum of their
    :func:`correct_score`; ``None`` when nothing was correct. Reasoning tokens are not added.
    """
    counts: dict[int, list[dict[str, Any]]] = {}
    for request in requests:
        counts.setdefault(request.doc_id, []).extend(c for c in request.token_counts if c)
    inputs = math.fsum(float(c.get("input_tokens") or 0) for cs in counts.values() for c in cs)
    outputs = math.fsum(float(c.get("output_tokens") or 0) for cs in counts.values() for c in cs)
    correct = math.fsum(correct_score(m) for m in _doc_metrics(sample_metrics, sample_doc_ids).values())
    counted = float(sum(1 for cs in counts.values() if cs))
    return _efficiency_entry(float(len(counts)), counted, inputs, outputs, correct)


class ScoredTask(Protocol):
    """What :func:`add_efficiency` reads of a scored task (:class:`lmms_eval.aggregation.TaskResult`)."""

    @property
    def sample_metrics(self) -> Mapping[tuple[str, str], Sequence[Any]]: ...

    @property
    def sample_doc_ids(self) -> Mapping[tuple[str, str], Sequence[int]]: ...


def add_efficiency(
    results: dict[str, Any], task_name: str, requests: Sequence[Instance], scored: ScoredTask
) -> None:
    """Put the task's entry in ``results["efficiency"]["by_task"]`` and recompute ``overall``."""
    section = results.setdefault("efficiency", {})
    by_task = section.setdefault("by_task", {})
    by_task[task_name] = task_efficiency(requests, scored.sample_metrics, scored.sample_doc_ids)
    totals = {k: math.fsum(float(e[k]) for e in by_task.values()) for k in EFFICIENCY_KEYS[:4]}
    correct = math.fsum(float(e["total_correct_score"]) for e in by_task.values())
    section["overall"] = _efficiency_entry(
        totals["docs"],
        totals["docs_with_token_counts"],
        totals["total_input_tokens"],
        totals["total_output_tokens"],
        correct,
    )
