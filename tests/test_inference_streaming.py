"""The inference stage streams: no barrier between requests, answers kept as they arrive.

Every test is ordered by events, never by a clock: a fake backend (or the test server's responder)
holds one request back until the others have been recorded, which only a stage without barriers
allows.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, last_user_text
from test_openai_backends import BACKENDS, make_model, make_requests

from lmms_eval import inference
from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from lmms_eval.caching import ResponseCache, ResponseCacheSession

GEN_KWARGS = {"max_new_tokens": 8, "temperature": 0, "until": ["\n"]}


def _requests(n: int, repeats: int = 1) -> list[Instance]:
    def doc_to_messages(doc: dict[str, str]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": doc["q"]}]}]

    return [
        Instance(
            "generate_until",
            (doc_to_messages, GEN_KWARGS, i, "t", "test"),
            0,
            {"task": "t", "doc_id": i, "split": "test", "repeats": repeats},
        )
        for i in range(n)
    ]


class _Streaming(lmms):
    """Answers the last requests first and the first one last, reporting each through the gate.

    Before answering the first request it looks at what the stage recorded for the others.
    """

    streams_answers = True

    def __init__(self, crash_after: int | None = None) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.seen_before_first: list[list[str | None]] = []
        self.crash_after = crash_after
        self.on_reported: Any = None
        self.task_dict = {"t": {"test": [{"q": f"question {i}"} for i in range(1000)]}}

    def generate_until(self, requests: list[Instance]) -> list[str]:  # type: ignore[override]
        self.calls.append(len(requests))
        answers = [f"answer {r.doc_id}" for r in requests]
        for count, (request, answer) in enumerate(zip(requests[1:], answers[1:]), start=1):
            self.gate.done(answer, request)
            if self.on_reported is not None:
                self.on_reported(count)
            if self.crash_after is not None and count == self.crash_after:
                raise RuntimeError("backend crashed")
        self.seen_before_first.append([r.resps[0] if r.resps else None for r in requests])
        self.gate.done(answers[0], requests[0])
        return answers


class _Chunked(_Streaming):
    streams_answers = False


def test_a_slow_request_does_not_delay_recording_of_the_others() -> None:
    model, requests = _Streaming(), _requests(5)
    inference.run_requests(model, requests, show_progress=False)
    assert model.seen_before_first == [[None, "answer 1", "answer 2", "answer 3", "answer 4"]]
    assert [r.resps for r in requests] == [[f"answer {i}"] for i in range(5)]


def test_a_streaming_backend_gets_all_requests_of_a_type_in_one_call() -> None:
    streaming, chunked = _Streaming(), _Chunked()
    inference.run_requests(streaming, _requests(600), show_progress=False)
    inference.run_requests(chunked, _requests(600), show_progress=False)
    assert streaming.calls == [600]
    assert chunked.calls == [256, 256, 88]  # local backends keep their chunks
    # a chunked backend's answers are recorded when its call returns
    assert chunked.seen_before_first[0][1:4] == [None, None, None]


def test_repeats_are_recorded_in_request_order_when_the_call_returns() -> None:
    model, requests = _Streaming(), _requests(3, repeats=2)
    inference.run_requests(model, requests, show_progress=False)
    assert model.calls == [6]
    assert [r.resps for r in requests] == [[f"answer {i}"] * 2 for i in range(3)]


def test_the_returned_answer_wins_over_the_reported_one() -> None:
    class Corrects(_Streaming):
        def generate_until(self, requests: list[Instance]) -> list[str]:  # type: ignore[override]
            super().generate_until(requests)
            return [f"final {r.doc_id}" for r in requests]

    requests = _requests(3)
    inference.run_requests(Corrects(), requests, show_progress=False)
    assert [r.resps for r in requests] == [[f"final {i}"] for i in range(3)]


def test_answers_are_cached_as_they_arrive_and_a_crash_loses_none(tmp_path: Path) -> None:
    model = _Streaming(crash_after=4)
    stored_when_reported: list[int] = []
    requests = _requests(8)
    with ResponseCache(tmp_path / "cache") as cache:
        session = ResponseCacheSession(cache, "fake")
        model.on_reported = lambda _count: stored_when_reported.append(session.counters.stored)
        call = session.model_call(model, {"t": "fp"})
        with pytest.raises(RuntimeError, match="backend crashed"):
            inference.run_requests(model, requests, model_call=call, show_progress=False)
        assert stored_when_reported == [1, 2, 3, 4]  # each stored before the next was answered
        assert model.calls == [8]  # the cache sent all misses of a streaming backend at once
        session.close()
    with ResponseCache(tmp_path / "cache") as cache:
        rerun = ResponseCacheSession(cache, "fake")
        model = _Streaming()
        inference.run_requests(model, _requests(8), model_call=rerun.model_call(model, {"t": "fp"}))
        rerun.close()
    assert rerun.counters.hits == 4 and model.calls == [4]


def test_budget_and_progress_move_per_answer() -> None:
    model = _Streaming()
    heard: list[int] = []
    gate = RequestGate(breaker_after=None)
    model.on_reported = lambda _count: heard.append(gate.state().reported)
    done: list[int] = []
    inference.run_requests(
        model, _requests(4), show_progress=False, gate=gate, listener=lambda _t, n, _all: done.append(n)
    )
    assert heard == [1, 2, 3] and done == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("backend", BACKENDS)
def test_api_backends_answer_the_others_while_one_request_is_held(backend: str) -> None:
    """The server holds the first question until every other answer was recorded by the stage."""
    others_recorded = threading.Event()
    texts = [f"question {i}" for i in range(40)]

    def responder(payload: dict[str, Any]) -> str:
        text = last_user_text(payload)
        if text == texts[0]:
            others_recorded.wait(timeout=10)
        return text[::-1]

    with OpenAIServer(responder=responder) as server:
        model = make_model(backend, server, num_concurrent=4)
        requests = make_requests(model, texts)

        def watch(request: Any, _answer: Any) -> None:  # heard before the stage records `request`
            if request is not requests[0] and all(r.resps for r in requests[1:] if r is not request):
                others_recorded.set()

        gate = RequestGate(breaker_after=None)
        with gate.listen(watch):
            inference.run_requests(model, requests, show_progress=False, gate=gate)
    assert others_recorded.is_set()
    assert [r.resps[0] for r in requests] == [t[::-1] for t in texts]
