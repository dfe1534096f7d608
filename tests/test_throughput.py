"""Throughput figures from what models report per response."""

from __future__ import annotations

import pytest

import lmms_eval
from lmms_eval.api.instance import GenerationResult, Instance, TokenCounts
from lmms_eval.models.chat.dummy import DummyChat


class _TimedModel(DummyChat):
    """Answers like the dummy and reports fixed timings: 0.5 s latency, 0.1 s to the first token."""

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        out: list[str | GenerationResult] = []
        for i in range(len(requests)):
            n_tokens = 5 if i % 2 == 0 else 3
            out.append(GenerationResult("A", TokenCounts(input_tokens=10, output_tokens=n_tokens), 0.5, 0.1))
        return out


def test_throughput_is_computed_from_reported_timings_and_stored() -> None:
    results = lmms_eval.simple_evaluate(model=_TimedModel(), tasks=["demo_qa"], limit=4, show_progress=False)
    figures = results["throughput"]["demo_qa"]
    assert figures["responses"] == 4
    assert figures["output_tokens_total"] == 5 + 3 + 5 + 3
    assert figures["output_tokens_mean"] == pytest.approx(4.0)
    assert figures["e2e_latency_s_mean"] == pytest.approx(0.5)
    assert figures["time_to_first_token_s_mean"] == pytest.approx(0.1)
    # TPOT per response = (0.5 - 0.1) / (tokens - 1): 0.1 for 5 tokens, 0.2 for 3 tokens
    assert figures["time_per_output_token_s_mean"] == pytest.approx(0.15)
    assert figures["output_tokens_per_second"] == pytest.approx(16 / figures["inference_seconds"], rel=1e-3)


def test_models_without_timings_leave_the_timing_fields_empty() -> None:
    figures = lmms_eval.simple_evaluate(model="dummy", tasks=["demo_qa"], limit=3, show_progress=False)[
        "throughput"
    ]["demo_qa"]
    assert figures["e2e_latency_s_mean"] is None and figures["time_to_first_token_s_mean"] is None
    assert figures["output_tokens_total"] == 3


def test_the_log_names_only_what_was_measured(caplog: pytest.LogCaptureFixture) -> None:
    from types import SimpleNamespace

    from lmms_eval.throughput import summarize

    timed = SimpleNamespace(resps=["a"], token_counts=[{"output_tokens": 4, "latency_s": 0.5}])
    with caplog.at_level("INFO", logger="lmms_eval.throughput"):
        summarize("t", [timed], 1.0)  # type: ignore[list-item]
    assert "n/a" not in caplog.text and "E2E 0.5 s" in caplog.text and "TTFT" not in caplog.text
