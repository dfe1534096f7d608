"""Generation speed that model files report with :func:`log_metrics` (published names).

Each call is logged and kept in a per-process history; :func:`summarize_logged_metrics` totals it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

logger = logging.getLogger(__name__)

_HISTORY: list[dict[str, Any]] = []
_LOCK = threading.Lock()


def reset_logged_metrics() -> None:
    """Forget every record of :func:`log_metrics`."""
    with _LOCK:
        _HISTORY.clear()


def get_logged_metrics_history() -> list[dict[str, Any]]:
    """Copies of the records of :func:`log_metrics`, oldest first."""
    with _LOCK:
        return [dict(record) for record in _HISTORY]


def calculate_token_throughput(token_count: float, duration: float) -> float:
    """Tokens per second; 0.0 when no time passed."""
    return float(token_count) / duration if duration > 0 else 0.0


def summarize_logged_metrics() -> dict[str, Any]:
    """Total tokens and time, overall speed, and the mean of each numeric extra (``avg_<name>``)."""
    history = get_logged_metrics_history()
    if not history:
        return {}
    tokens = sum(int(r.get("total_gen_tokens", 0)) for r in history)
    elapsed = sum(float(r.get("total_elapsed_time", 0.0)) for r in history)
    summary: dict[str, Any] = {
        "total_gen_tokens": tokens,
        "total_elapsed_time": elapsed,
        "avg_speed": calculate_token_throughput(tokens, elapsed),
    }
    extras: dict[str, list[float]] = {}
    for record in history:
        for key, value in record.items():
            if key not in summary and isinstance(value, (int, float)) and not isinstance(value, bool):
                extras.setdefault(key, []).append(float(value))
    summary.update({f"avg_{key}": sum(values) / len(values) for key, values in extras.items()})
    return summary


def log_metrics(
    total_elapsed_time: float,
    total_gen_tokens: int,
    avg_speed: float,
    additional_metrics: dict[str, Any] | None = None,
) -> None:
    """Log one generation run's time, tokens and speed (and extras) and keep the record."""
    record: dict[str, Any] = {
        "total_elapsed_time": total_elapsed_time,
        "total_gen_tokens": total_gen_tokens,
        "avg_speed": avg_speed,
        **(additional_metrics or {}),
    }
    with _LOCK:
        _HISTORY.append(record)
    logger.info(
        "generation: %s tokens in %.2f s (%.2f tokens/s)", total_gen_tokens, total_elapsed_time, avg_speed
    )


__all__ = [
    "calculate_token_throughput",
    "get_logged_metrics_history",
    "log_metrics",
    "reset_logged_metrics",
    "summarize_logged_metrics",
]
