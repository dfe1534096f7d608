"""The RequestGate between inference and backends: budget and circuit breaker within a chunk,
per-request progress, requests that are never sent, and Ctrl-C keeping what finished."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lmms_eval
from lmms_eval import inference
from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.cli import main
from lmms_eval.evaluator import EvaluationInterrupted
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.models.registry_v2 import register_model_class
from lmms_eval.tasks import TaskManager


class _Reporting(DummyChat):
    """Answers every request (100 tokens each) one at a time, asking the gate first, as API backends do."""

    sent: list[int]

    def generate_until(self, requests: list[Instance]) -> list[Any]:  # type: ignore[override]
        out: list[Any] = []
        for request in requests:
            refusal = self.gate.refusal()
            if refusal is None:
                type(self).sent.append(request.doc_id)
                refusal = self.answer(request)
            self.gate.done(refusal, request)
            out.append(refusal)
        return out

    def answer(self, request: Instance) -> Any:
        doc = self.get_doc(request)
        return GenerationResult(str(doc["answer"]), TokenCounts(input_tokens=60, output_tokens=40))


class _Unreachable(_Reporting):
    def answer(self, request: Instance) -> Any:
        return RequestFailure("connection error (ConnectError): [Errno 111] Connection refused", attempts=6)


def _requests(limit: int) -> tuple[Any, list[Instance]]:
    task = TaskManager().load_task_or_group(["demo_qa"])["demo_qa"]
    return task, task.build_all_requests(chat=True, limit=limit)


def test_budget_stops_new_requests_within_one_chunk() -> None:
    _Reporting.sent = []
    task, requests = _requests(30)
    model = _Reporting()
    model.task_dict["demo_qa"] = task.model_docs()
    gate = RequestGate(250)
    inference.run_requests(model, requests, chunk_size=1000, show_progress=False, gate=gate)
    # 100 tokens per answer: the third answer spends the budget, nothing after it is sent
    assert _Reporting.sent == [0, 1, 2]
    assert gate.state().used_tokens == 300 and gate.state().budget_exhausted
    assert all(not r.failures for r in requests[:3])
    assert all(
        r.failures[0].startswith("not_sent: ") and "--max_tokens" in r.failures[0] for r in requests[3:]
    )


def test_budget_run_says_so_lists_unasked_docs_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _Reporting.sent = []
    register_model_class("gate_reporting_model", _Reporting)
    args = ["--model", "gate_reporting_model", "--tasks", "demo_qa", "--limit", "8", "--max_tokens", "250"]
    assert main([*args, "--output_path", str(tmp_path), "--verbosity", "WARNING"]) == 3
    err = capsys.readouterr().err
    assert "--max_tokens budget of 250 was spent" in err and "5 not_sent" in err
    results = json.loads(next(tmp_path.rglob("*_results.json")).read_text())
    failures = results["failures"]["demo_qa"]
    assert failures["not_sent_doc_ids"] == [3, 4, 5, 6, 7] and failures["by_kind"] == {"not_sent": 5}
    assert results["usage"]["budget_used_tokens"] == 300 and results["usage"]["budget_exceeded"] is True
    assert results["results"]["demo_qa"]["samples"] == 3  # scored only what was asked
    assert main([*args, "--allow_failures", "--verbosity", "WARNING"]) == 0


def test_circuit_breaker_stops_a_task_whose_first_requests_all_fail(caplog: pytest.LogCaptureFixture) -> None:
    _Unreachable.sent = []
    results = lmms_eval.simple_evaluate(
        model=_Unreachable(), tasks=["demo_qa"], limit=40, show_progress=False
    )
    assert len(_Unreachable.sent) == 10  # not 40: the breaker opened after the first 10 failures
    failures = results["failures"]["demo_qa"]
    assert failures["by_kind"] == {"error": 10, "not_sent": 30}
    assert failures["not_sent_doc_ids"] == list(range(10, 40))
    assert any("first 10 requests of task 'demo_qa' all failed" in r.getMessage() for r in caplog.records)


def test_breaker_is_per_task_and_stays_closed_after_a_success() -> None:
    gate = RequestGate(breaker_after=3)
    failure = RequestFailure("HTTP 500")
    gate.start_task("a")
    for output in (failure, "fine", failure, failure, failure):
        gate.done(output)
    assert gate.admit() is None  # one success among the first three: the task goes on
    gate.start_task("b")
    for _ in range(3):
        gate.done(failure)
    assert "first 3 requests of task 'b'" in (gate.admit() or "")
    gate.start_task("c")
    assert gate.admit() is None


def test_progress_moves_once_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    updates: list[int] = []

    class Bar:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __enter__(self) -> Bar:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def update(self, n: int = 1) -> None:
            updates.append(n)

    monkeypatch.setattr(inference, "tqdm", Bar)
    _Reporting.sent = []
    task, requests = _requests(12)
    model = _Reporting()
    model.task_dict["demo_qa"] = task.model_docs()
    inference.run_requests(model, requests, chunk_size=1000, show_progress=True)
    assert updates == [1] * 12  # per request, not one jump of 12 per chunk


def test_requests_that_already_failed_are_never_sent() -> None:
    _Reporting.sent = []
    task, requests = _requests(5)
    requests[2].failures.append("input: task 'demo_qa' doc 2: doc_to_text raised KeyError: 'question'")
    model = _Reporting()
    model.task_dict["demo_qa"] = task.model_docs()
    inference.run_requests(model, requests, show_progress=False)
    assert _Reporting.sent == [0, 1, 3, 4]
    assert requests[2].resps == [] and all(len(r.resps) == 1 for i, r in enumerate(requests) if i != 2)


def test_sleep_wakes_at_once_when_the_run_stops() -> None:
    import threading

    gate = RequestGate()
    threading.Timer(0.05, gate.stop).start()
    assert gate.sleep(30) is False  # False: woken by the stop, not after the 30 s
    assert gate.stopped and "interrupted" in (gate.admit(retry=True) or "")


def test_ctrl_c_keeps_finished_tasks_with_status_interrupted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class Interrupted(_Reporting):
        def answer(self, request: Instance) -> Any:
            if request.task_name == "demo_shapes":
                raise KeyboardInterrupt
            return super().answer(request)

    register_model_class("gate_interrupted_model", Interrupted)
    args = ["--model", "gate_interrupted_model", "--tasks", "demo_qa,demo_shapes", "--limit", "4"]
    assert main([*args, "--output_path", str(tmp_path), "--log_samples", "--verbosity", "ERROR"]) == 130
    captured = capsys.readouterr()
    assert "demo_qa" in captured.out  # the finished task's scores are printed
    assert "interrupted during task demo_shapes" in captured.err
    results = json.loads(next(tmp_path.rglob("*_results.json")).read_text())
    assert results["status"] == "interrupted" and results["interrupted_task"] == "demo_shapes"
    assert results["results"]["demo_qa"]["samples"] == 4 and "demo_shapes" not in results["results"]
    assert results["end_time"] and results["output_files"]["samples"]["demo_qa"].endswith(".jsonl")
    with pytest.raises(EvaluationInterrupted):
        lmms_eval.simple_evaluate(model=Interrupted(), tasks=["demo_shapes"], limit=2, show_progress=False)
