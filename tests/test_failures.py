"""Failed requests are data, not answers: recorded, never scored, counted, and the run exits non-zero."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lmms_eval
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.cli import main
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.models.registry_v2 import register_model_class


class _FlakyModel(DummyChat):
    """Answers correctly, but requests for every third doc fail after retries."""

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult | RequestFailure]:  # type: ignore[override]
        out: list[str | GenerationResult | RequestFailure] = []
        for request in requests:
            if request.doc_id % 3 == 0:
                out.append(RequestFailure("HTTP 500 from the server", attempts=5))
            else:
                answer = str(self.get_doc(request)["answer"])
                out.append(GenerationResult(answer, TokenCounts(input_tokens=10, output_tokens=2)))
        return out


def test_failed_requests_are_recorded_and_never_scored(tmp_path: Path) -> None:
    results = lmms_eval.simple_evaluate(
        model=_FlakyModel(), tasks=["demo_qa"], limit=12, output_path=str(tmp_path), log_samples=True
    )
    scores = results["results"]["demo_qa"]
    assert scores["exact_match,none"] == 1.0  # the failures are not counted as wrong answers
    assert scores["samples"] == 8 and scores["failed"] == 4
    assert results["n-samples"]["demo_qa"] == {"original": 120, "effective": 12, "failed": 4}
    assert results["failures"]["demo_qa"]["doc_ids"] == [0, 3, 6, 9]
    assert results["status"] == "completed_with_failures"
    assert (
        results["usage"]["total"]["output_tokens"] == 16 and results["usage"]["total"]["input_tokens"] == 80
    )
    lines = [json.loads(x) for x in next(tmp_path.rglob("*_samples_demo_qa.jsonl")).read_text().splitlines()]
    failed = [x for x in lines if x.get("failed")]
    assert sorted(x["doc_id"] for x in failed) == [0, 3, 6, 9]
    assert "HTTP 500" in failed[0]["errors"][0] and "exact_match" not in failed[0]


def test_cli_exits_non_zero_on_failures_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register_model_class("flaky_test_model", _FlakyModel)
    args = ["--model", "flaky_test_model", "--tasks", "demo_qa", "--limit", "6", "--verbosity", "WARNING"]
    assert main(args) == 3
    err = capsys.readouterr().err
    assert "2 document(s) had failed requests" in err and "HTTP 500" in err
    assert main([*args, "--allow_failures"]) == 0


def test_token_budget_stops_sending_requests_between_chunks_of_a_silent_backend() -> None:
    """A backend that does not report to the gate is held to the budget chunk by chunk."""
    from lmms_eval import inference
    from lmms_eval.api.gate import RequestGate
    from lmms_eval.tasks import TaskManager

    class Counting(DummyChat):
        calls = 0

        def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
            type(self).calls += len(requests)
            return [GenerationResult("A", TokenCounts(input_tokens=50, output_tokens=50)) for _ in requests]

    task = TaskManager().load_task_or_group(["demo_qa"])["demo_qa"]
    model = Counting()
    model.task_dict["demo_qa"] = task.model_docs()
    requests = task.build_all_requests(chat=True, limit=30)
    gate = RequestGate(150)
    inference.run_requests(model, requests, chunk_size=10, show_progress=False, gate=gate)
    assert Counting.calls == 10  # one chunk of 10 spends 1,000 tokens; nothing more is sent
    assert gate.state().budget_exhausted and gate.state().used_tokens == 1000
    assert all(not r.failures for r in requests[:10])
    assert all("token budget of 150 (--max_tokens) was spent" in r.failures[0] for r in requests[10:])
    results = lmms_eval.simple_evaluate(
        model=Counting(), tasks=["demo_qa"], limit=5, max_tokens=150, show_progress=False
    )
    assert results["usage"]["budget_exceeded"] is True and results["usage"]["budget_total_tokens"] == 150
