"""The ``openai`` / ``async_openai`` backends and their shared HTTP client, against a real local server.

Every test talks HTTP to ``tests/openai_server.py`` on 127.0.0.1 (no mocks of the transport): faults
are injected by the server (latency, 429 + Retry-After, 5xx, timeouts, dropped connections,
malformed JSON), and the server records what it received.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from openai_server import REASONING_TOKENS, OpenAIServer, image_parts, last_user_text
from PIL import Image

import lmms_eval
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure
from lmms_eval.errors import ConfigError, ModelArgsError
from lmms_eval.models import get_model, resolve_model
from lmms_eval.models.api.concurrency import AdaptiveConcurrency
from lmms_eval.models.api.http import (
    ChatCompletionClient,
    RequestFailedError,
    RetryPolicy,
    parse_retry_after,
)
from lmms_eval.models.chat.async_openai import AsyncOpenAIChat
from lmms_eval.models.chat.openai import OpenAICompatible, is_reasoning_model

BACKENDS = ["openai", "async_openai"]
PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hello world"}]}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv


def make_model(backend: str, server: OpenAIServer, **kwargs: Any) -> OpenAICompatible:
    args: dict[str, Any] = {
        "model": "test-model",
        "base_url": server.base_url,
        "api_key": "sk-test",
        "retry_backoff_s": 0.01,
        **kwargs,
    }
    model = get_model(backend)(**args)
    assert isinstance(model, OpenAICompatible)
    return model


def make_requests(
    model: OpenAICompatible,
    texts: list[str],
    gen_kwargs: dict[str, Any] | None = None,
    media: list[dict[str, Any]] | None = None,
) -> list[Instance]:
    """generate_until requests (chat layout) over docs holding ``texts``; fills ``model.task_dict``."""
    docs = [{"text": t} for t in texts]

    def doc_to_messages(doc: dict[str, str]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [*(media or []), {"type": "text", "text": doc["text"]}]}]

    model.task_dict = {"t": {"test": docs}}
    kwargs = gen_kwargs if gen_kwargs is not None else {"max_new_tokens": 32, "until": ["\n\n"]}
    return [
        Instance(
            "generate_until",
            (doc_to_messages, dict(kwargs), i, "t", "test"),
            0,
            {"task": "t", "doc_id": i, "split": "test"},
        )
        for i in range(len(texts))
    ]


def texts_of(answers: list[Any]) -> list[str]:
    assert all(isinstance(a, GenerationResult) for a in answers), answers
    return [a.text for a in answers]


# -- the shared client ----------------------------------------------------------------------------------


def test_client_returns_text_usage_and_sends_the_key(server: OpenAIServer) -> None:
    with ChatCompletionClient(server.base_url, api_key="sk-abc", headers={"X-Trace": "1"}) as client:
        result = client.complete({**PAYLOAD, "max_completion_tokens": 10})
    assert result.text == "dlrow olleh" and result.finish_reason == "stop" and result.attempts == 1
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (2, 2 + REASONING_TOKENS)
    assert result.usage.reasoning_tokens == REASONING_TOKENS
    assert result.raw["choices"][0]["message"]["content"] == "dlrow olleh" and result.latency_s > 0
    received = server.requests[0]
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-abc" and received.headers["x-trace"] == "1"


def test_client_defaults_come_from_the_environment(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    client = ChatCompletionClient()
    assert client.complete(PAYLOAD).text == "dlrow olleh"
    client.close()
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_API_BASE")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert ChatCompletionClient().url == "https://api.openai.com/v1/chat/completions"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("status", {"status": 500}),
        ("status", {"status": 503}),
        ("status", {"status": 429}),
        ("drop", {}),
        ("timeout", {"delay_s": 1.5}),
        ("malformed", {}),
        ("no_choices", {}),
    ],
)
def test_client_retries_transient_faults(
    server: OpenAIServer, mode: str, kind: Any, options: dict[str, Any]
) -> None:
    server.add_fault(kind, times=1, **options)
    client = ChatCompletionClient(server.base_url, timeout=0.4, retry_backoff_s=0.01, max_retries=2)

    async def run_async() -> Any:
        async with client:
            return await client.acomplete(PAYLOAD)

    result = client.complete(PAYLOAD) if mode == "sync" else asyncio.run(run_async())
    client.close()
    assert result.text == "dlrow olleh" and result.attempts == 2
    assert [r.fault for r in server.requests] == [kind, None]


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_are_not_retried(server: OpenAIServer, status: int) -> None:
    server.add_fault("status", status=status, times=None, message=f"nope {status}")
    client = ChatCompletionClient(server.base_url, retry_backoff_s=0.01)
    with pytest.raises(RequestFailedError) as info:
        client.complete(PAYLOAD)
    assert info.value.retryable is False and info.value.attempts == 1 and info.value.status == status
    assert f"HTTP {status}" in str(info.value) and f"nope {status}" in str(info.value)
    assert server.count == 1


def test_client_gives_up_after_max_retries(server: OpenAIServer) -> None:
    server.add_fault("status", status=502, times=None, message="upstream down")
    client = ChatCompletionClient(server.base_url, max_retries=2, retry_backoff_s=0.01)
    with pytest.raises(RequestFailedError) as info:
        client.complete(PAYLOAD)
    assert info.value.attempts == 3 and info.value.retryable is True and info.value.status == 502
    assert "upstream down" in str(info.value) and server.count == 3


def recorded_waits(client: ChatCompletionClient) -> list[float]:
    """The waits ``client`` chooses before each retry, recorded as it runs (no clock is read)."""
    waits: list[float] = []
    choose = client.retry.delay

    def recording(*args: Any) -> float:
        waits.append(choose(*args))
        return waits[-1]

    client.retry.delay = recording  # pyright: ignore[reportAttributeAccessIssue]
    return waits


def test_client_honours_retry_after_seconds(server: OpenAIServer) -> None:
    server.add_fault("status", status=429, retry_after="1", times=1)
    client = ChatCompletionClient(server.base_url, retry_backoff_s=0.001)
    waits = recorded_waits(client)
    result = client.complete(PAYLOAD)
    assert result.attempts == 2 and len(waits) == 1 and 1.0 <= waits[0] <= 1.1  # Retry-After plus jitter
    first, second = server.requests
    assert second.arrived - first.arrived >= 0.95


def test_async_client_honours_retry_after_on_503(server: OpenAIServer) -> None:
    server.add_fault("status", status=503, retry_after="0.5", times=1)
    client = ChatCompletionClient(server.base_url, retry_backoff_s=0.001)
    waits = recorded_waits(client)

    async def run() -> Any:
        async with client:
            return await client.acomplete(PAYLOAD)

    result = asyncio.run(run())
    assert result.attempts == 2 and len(waits) == 1 and 0.5 <= waits[0] <= 0.55
    first, second = server.requests
    assert second.arrived - first.arrived >= 0.45  # the wait happened before the retry was sent


def test_parse_retry_after() -> None:
    now = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5
    assert (
        parse_retry_after({"Retry-After": format_datetime(now + timedelta(seconds=7), usegmt=True)}, now)
        == 7.0
    )
    assert (
        parse_retry_after({"Retry-After": format_datetime(now - timedelta(seconds=7), usegmt=True)}, now)
        == 0.0
    )
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_is_exponential_with_full_jitter() -> None:
    policy = RetryPolicy(max_retries=8, backoff_s=0.5, max_backoff_s=4.0, seed=1)
    samples = {k: [policy.delay(k) for _ in range(200)] for k in range(1, 7)}
    for k, delays in samples.items():
        ceiling = min(4.0, 0.5 * 2 ** (k - 1))
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > 0.8 * ceiling and min(delays) < 0.2 * ceiling  # spread over the range
    assert sum(samples[3]) > 2.5 * sum(samples[1])  # grows with the retry number
    assert [RetryPolicy(seed=5).delay(k) for k in (1, 2, 3)] == [
        RetryPolicy(seed=5).delay(k) for k in (1, 2, 3)
    ]
    honoured = [RetryPolicy(backoff_s=5.0, seed=k).delay(3, retry_after=2.0) for k in range(50)]
    assert all(2.0 <= d <= 2.2 for d in honoured)  # Retry-After plus up to 10%, whatever the backoff
    assert RetryPolicy(backoff_s=0.01, max_backoff_s=1.5, seed=1).delay(1, retry_after=30.0) == 1.5


def test_client_waits_the_jittered_backoff_between_attempts(server: OpenAIServer) -> None:
    server.add_fault("status", status=500, times=3)
    expected_policy = RetryPolicy(backoff_s=0.15, max_backoff_s=60.0, seed=7)
    expected = [expected_policy.delay(k) for k in (1, 2, 3)]
    client = ChatCompletionClient(server.base_url, retry_backoff_s=0.15, seed=7)
    waits = recorded_waits(client)
    result = client.complete(PAYLOAD)
    assert result.attempts == 4 and waits == expected
    gaps = [b.arrived - a.arrived for a, b in zip(server.requests, server.requests[1:])]
    assert all(gap >= delay - 0.01 for gap, delay in zip(gaps, expected))


# -- the backends: answers, order, payloads ------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_answers_come_back_in_request_order(server: OpenAIServer, backend: str) -> None:
    texts = [f"item {i} please" for i in range(30)]
    for i in range(0, 30, 3):  # early requests finish last
        server.add_fault("delay", match=f"item {i} ", delay_s=0.2 - i * 0.005)
    model = make_model(backend, server, num_concurrent=8)
    answers = model.generate_until(make_requests(model, texts))
    assert texts_of(answers) == [t[::-1] for t in texts]
    assert all(isinstance(a, GenerationResult) and a.token_counts for a in answers)
    first = answers[0]
    assert isinstance(first, GenerationResult) and first.token_counts is not None
    assert (first.token_counts.input_tokens, first.token_counts.output_tokens) == (3, 3)
    assert first.latency_s is not None and first.latency_s >= 0.19
    assert 2 <= server.max_in_flight <= 8
    assert {r.headers["authorization"] for r in server.requests} == {"Bearer sk-test"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_payload_maps_generation_kwargs_and_images(
    server: OpenAIServer, backend: str, tmp_path: Path
) -> None:
    server.responder = lambda payload: "the answer STOP and more"
    prompt_file = tmp_path / "system.txt"
    prompt_file.write_text("You are terse.", encoding="utf-8")
    model = make_model(backend, server, system_prompt=str(prompt_file), model="gpt-4o")
    image = Image.new("RGB", (7, 5), (255, 0, 0))
    gen_kwargs = {
        "max_new_tokens": 12,
        "temperature": 0.5,
        "top_p": 0.9,
        "seed": 3,
        "until": ["STOP", "\n\n", "###", "<end>", "<eos>"],
        "num_beams": 4,
        "do_sample": True,
    }
    requests = make_requests(model, ["Describe."], gen_kwargs, media=[{"type": "image", "url": image}])
    [answer] = model.generate_until(requests)
    assert isinstance(answer, GenerationResult) and answer.text == "the answer "  # stop applied here too
    payload = server.payloads[0]
    assert payload["model"] == "gpt-4o" and payload["max_tokens"] == 12
    assert (payload["temperature"], payload["top_p"], payload["seed"]) == (0.5, 0.9, 3)
    assert payload["stop"] == ["STOP", "\n\n", "###", "<end>"]  # the API takes at most 4
    assert (
        "num_beams" not in payload and "do_sample" not in payload and "max_completion_tokens" not in payload
    )
    assert payload["messages"][0] == {"role": "system", "content": "You are terse."}
    assert last_user_text(payload) == "Describe."
    [url] = image_parts(payload)
    assert url.startswith("data:image/png;base64,")
    decoded = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert decoded.size == (7, 5) and decoded.convert("RGB").getpixel((0, 0)) == (255, 0, 0)


def test_greedy_by_default_and_n_must_be_one(server: OpenAIServer) -> None:
    model = make_model("openai", server)
    [answer] = model.generate_until(make_requests(model, ["hi"], {"until": "\n"}))
    payload = server.payloads[0]
    assert payload["temperature"] == 0.0 and payload["max_tokens"] == 1024 and payload["stop"] == ["\n"]
    assert isinstance(answer, GenerationResult) and answer.text == "ih"
    with pytest.raises(ConfigError, match="n=3"):
        model.generate_until(make_requests(model, ["hi"], {"n": 3}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_reasoning_models_get_max_completion_tokens(server: OpenAIServer, backend: str) -> None:
    server.responder = lambda payload: "thought done\n\nextra"
    model = make_model(backend, server, model="o3-mini")
    gen_kwargs = {"max_new_tokens": 50, "temperature": 0.7, "top_p": 0.5, "until": ["\n\n"]}
    [answer] = model.generate_until(make_requests(model, ["q"], gen_kwargs))
    payload = server.payloads[0]
    assert payload["max_completion_tokens"] == 50
    assert not {"max_tokens", "temperature", "top_p", "stop"} & set(payload)
    assert isinstance(answer, GenerationResult) and answer.text == "thought done"  # `until` cut locally
    assert answer.token_counts is not None and answer.token_counts.reasoning_tokens == REASONING_TOKENS


def test_reasoning_model_names() -> None:
    for name in (
        "o1",
        "o1-preview",
        "o3-mini",
        "o4-mini-high",
        "openai/o3",
        "gpt-5",
        "gpt-5-nano",
        "GPT-5.1",
    ):
        assert is_reasoning_model(name), name
    for name in ("gpt-4o", "gpt-4o-2024-11-20", "gpt-4.1-mini", "qwen2-vl-7b", "llama-3.1-70b", "o10x"):
        assert not is_reasoning_model(name), name


@pytest.mark.parametrize("backend", BACKENDS)
def test_video_frames_are_sampled_or_passed_as_url(
    server: OpenAIServer, backend: str, tmp_path: Path
) -> None:
    frames = tmp_path / "clip"
    frames.mkdir()
    for i in range(20):  # frame_2 must sort before frame_10
        Image.new("RGB", (4, 4), (i * 10, 0, 0)).save(frames / f"frame_{i}.png")
    model = make_model(backend, server, max_frames_num=4)
    model.generate_until(
        make_requests(model, ["what happens?"], media=[{"type": "video", "url": str(frames)}])
    )
    urls = image_parts(server.payloads[0])
    pixels = [
        Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))).convert("RGB").getpixel((0, 0))
        for u in urls
    ]
    reds = [p[0] for p in pixels if isinstance(p, tuple)]
    assert reds == [20, 70, 120, 170]  # frames 2, 7, 12, 17: evenly spread, in order

    pil_frames = [Image.new("RGB", (2, 2), (0, i, 0)) for i in range(3)]
    model.generate_until(make_requests(model, ["list"], media=[{"type": "video", "url": pil_frames}]))
    assert len(image_parts(server.payloads[1])) == 3

    by_url = make_model(backend, server, pass_video_url=True)
    by_url.generate_until(
        make_requests(by_url, ["v"], media=[{"type": "video", "url": "https://x.test/v.mp4"}])
    )
    content = server.payloads[2]["messages"][0]["content"]
    assert content[0] == {"type": "video_url", "video_url": {"url": "https://x.test/v.mp4"}}


# -- failures are RequestFailure, never answers ---------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_requests_become_request_failures(server: OpenAIServer, backend: str) -> None:
    server.add_fault("status", match="bad key", status=401, times=None, message="invalid api key")
    server.add_fault("status", match="always down", status=500, times=None, message="boom")
    server.add_fault("drop", match="flaky", times=1)
    server.responder = lambda payload: "" if "empty" in last_user_text(payload) else "ok"
    model = make_model(backend, server, max_retries=2)
    texts = ["fine", "always down", "bad key", "flaky", "empty"]
    answers = model.generate_until(make_requests(model, texts))
    fine, down, bad, flaky, empty = answers
    assert isinstance(fine, GenerationResult) and fine.text == "ok"
    assert isinstance(down, RequestFailure) and down.attempts == 3 and down.retryable
    assert "HTTP 500" in down.error and "boom" in down.error
    assert isinstance(bad, RequestFailure) and bad.attempts == 1 and not bad.retryable
    assert "invalid api key" in bad.error
    assert isinstance(flaky, GenerationResult) and flaky.text == "ok"
    assert isinstance(empty, GenerationResult) and empty.text == ""  # an empty answer is an answer
    assert len(server.requests_matching("always down")) == 3 and len(server.requests_matching("bad key")) == 1


def _demo_answers() -> dict[str, str]:
    path = Path(lmms_eval.__file__).parent / "tasks" / "demo_qa" / "demo_qa.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["question"]: str(row["answer"]) for row in rows}


def test_failures_are_recorded_and_not_scored_in_an_evaluation(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = _demo_answers()

    def responder(payload: dict[str, Any]) -> str:
        question = last_user_text(payload).split("\n")[0]
        return "999" if question == "What is 4 x 3?" else answers[question] + "\nbecause arithmetic"

    server.responder = responder
    server.add_fault("status", match="What is 13 + 2?", status=500, times=None)  # doc 3
    server.add_fault("drop", match="What is 4 - 5?", times=None)  # doc 7
    model_args = {
        "model": "gpt-4o-mini",
        "base_url": server.base_url,
        "api_key": "sk-test",
        "max_retries": 1,
        "retry_backoff_s": 0.01,
        "num_concurrent": 4,
    }
    results = lmms_eval.simple_evaluate(
        model="openai_compatible",
        model_args=model_args,
        tasks=["demo_qa"],
        limit=12,
        output_path=str(tmp_path),
        log_samples=True,
        show_progress=False,
    )
    scores = results["results"]["demo_qa"]
    assert results["failures"]["demo_qa"]["doc_ids"] == [3, 7]
    assert scores["failed"] == 2 and scores["samples"] == 10
    assert scores["exact_match,none"] == pytest.approx(9 / 10)  # doc 2 wrong; failures not counted
    assert results["status"] == "completed_with_failures"
    usage = results["usage"]["total"]
    assert (
        usage["n_api_calls"] == 10 and usage["output_tokens"] == 10 + 2 * 9
    )  # answer + "because arithmetic"
    assert usage["input_tokens"] > 0
    lines = [json.loads(x) for x in next(tmp_path.rglob("*_samples_demo_qa.jsonl")).read_text().splitlines()]
    failed = {x["doc_id"]: x for x in lines if x.get("failed")}
    assert sorted(failed) == [3, 7] and all("exact_match" not in x for x in failed.values())
    assert "HTTP 500" in failed[3]["errors"][0] and "connection" in failed[7]["errors"][0]
    scored = {x["doc_id"]: x for x in lines if not x.get("failed")}
    assert scored[2]["exact_match"] == 0.0 and scored[0]["exact_match"] == 1.0
    assert scored[0]["resps"] == [["16"]]  # `until: ["\n"]` cut the explanation

    from lmms_eval.cli import main

    args = ["--model", "openai", "--tasks", "demo_qa", "--limit", "8", "--verbosity", "ERROR"]
    args += ["--model_args", ",".join(f"{k}={v}" for k, v in model_args.items())]
    package_logger = logging.getLogger("lmms_eval")
    level, handlers = package_logger.level, list(package_logger.handlers)
    try:
        assert main(args) == 3  # failed documents fail the run
    finally:  # the CLI sets the package's log level and a stderr handler (captured here) for good
        package_logger.setLevel(level)
        package_logger.handlers[:] = handlers
    assert "2 document(s) had failed requests" in capsys.readouterr().err


# -- adaptive concurrency ---------------------------------------------------------------------------------


def test_a_wave_of_429s_paces_attempts_and_never_lowers_the_cap() -> None:
    clock_now = [0.0]
    limiter = AdaptiveConcurrency(12, clock=lambda: clock_now[0])
    wave = []
    for _ in range(12):
        slot = limiter.try_acquire()
        assert slot is not None and slot.sent == clock_now[0]  # not paced: starts at once
        wave.append(slot)
        clock_now[0] += 0.002
    clock_now[0] += 0.001
    assert limiter.try_acquire() is None  # the cap: 12 in flight
    for slot in wave[:2]:
        slot.outcome = "ok"
        limiter.release(slot)
    for slot in wave[2:]:  # 10 of 12 answered 429 at once
        slot.outcome = "rate_limited"
        limiter.release(slot)
    clock_now[0] += 0.1
    first, second = limiter.try_acquire(), limiter.try_acquire()  # the first one judges the wave
    stats = limiter.stats()
    assert stats.limit == 12 and stats.rate is not None and stats.decreases == 1 and stats.rate_limited == 10
    assert first is not None and second is not None
    assert second.sent - first.sent == pytest.approx(1.0 / stats.rate)  # paced, one after the other
    fixed = AdaptiveConcurrency(5, adaptive=False)
    slots = [fixed.acquire() for _ in range(5)]
    for slot in slots:
        assert slot is not None
        slot.outcome = "rate_limited"
        fixed.release(slot)
    assert fixed.limit == 5 and fixed.rate is None and fixed.stats().rate_limited == 5


def test_limiter_bounds_threads_and_tasks() -> None:
    limiter = AdaptiveConcurrency(3)
    active, peak = [0], [0]
    lock = threading.Lock()

    def work() -> None:
        with limiter.slot() as slot:
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.01)
            with lock:
                active[0] -= 1
            slot.outcome = "ok"

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 3 and limiter.stats().in_flight == 0

    async def tasks() -> int:
        running, top = 0, 0

        async def one() -> None:
            nonlocal running, top
            async with limiter.aslot() as slot:
                running += 1
                top = max(top, running)
                await asyncio.sleep(0.005)
                running -= 1
                slot.outcome = "ok"

        waiter = asyncio.ensure_future(one())
        await asyncio.gather(*(one() for _ in range(12)))
        await waiter
        blocked = [limiter.acquire() for _ in range(limiter.limit)]
        cancelled = asyncio.ensure_future(one())
        await asyncio.sleep(0.01)
        cancelled.cancel()  # a cancelled waiter must not keep a slot
        for slot in blocked:
            assert slot is not None
            limiter.release(slot)
        await asyncio.gather(cancelled, return_exceptions=True)
        await asyncio.wait_for(one(), timeout=1)
        return top

    assert asyncio.run(tasks()) == 3 and limiter.stats().in_flight == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_server_that_limits_requests_in_flight_gets_paced(backend: str) -> None:
    with OpenAIServer(latency_s=0.05, max_concurrency=4) as server:
        model = make_model(backend, server, num_concurrent=16, max_retries=10, retry_backoff_s=0.02)
        texts = [f"request {i}" for i in range(60)]
        answers = model.generate_until(make_requests(model, texts))
        assert texts_of(answers) == [t[::-1] for t in texts]  # every request got through, in order
        rejected = [r for r in server.requests if r.status == 429]
        stats = model.concurrency.stats()
    assert rejected and stats.rate_limited == len(rejected)
    assert stats.decreases >= 1 and stats.min_rate is not None and stats.limit == 16
    late = server.requests[len(server.requests) // 2 :]
    assert sum(r.status == 429 for r in late) < len(rejected) / 2  # fewer 429s once paced


# -- construction and registration ------------------------------------------------------------------------


def test_model_args_and_registry(server: OpenAIServer) -> None:
    model = OpenAICompatible.create_from_arg_string(
        f"model_version=gpt-4o,base_url={server.base_url},num_concurrent=3,timeout=5,max_retries=1",
        {"batch_size": 8, "device": "cuda:0", "max_batch_size": 16},
    )
    assert model.model_version == "gpt-4o" and model.num_concurrent == 3 and model.client.max_retries == 1
    assert model.batch_size == 8
    with pytest.raises(ModelArgsError, match="Did you mean 'num_concurrent'"):
        OpenAICompatible.create_from_arg_string("model=x,num_concurent=3")
    with pytest.raises(ModelArgsError, match="model=<name>"):
        OpenAICompatible()
    with pytest.raises(ModelArgsError, match="same thing"):
        OpenAICompatible(model="a", pretrained="b")
    for name in ("openai", "openai_compatible", "openai_compatible_chat"):
        assert get_model(name) is OpenAICompatible and resolve_model(name).model_id == "openai"
    for name in ("async_openai", "async_openai_compatible_chat", "async_openai_compatible"):
        assert get_model(name) is AsyncOpenAIChat and resolve_model(name).model_id == "async_openai"


def test_async_backend_works_inside_a_running_event_loop(server: OpenAIServer) -> None:
    model = make_model("async_openai", server)

    async def caller() -> list[Any]:
        return model.generate_until(make_requests(model, ["abc", "de"]))

    assert texts_of(asyncio.run(caller())) == ["cba", "ed"]


def test_importing_lmms_eval_does_not_import_httpx() -> None:
    code = (
        "import sys, lmms_eval, lmms_eval.models, lmms_eval.models.api\n"
        "from lmms_eval.models import resolve_model\n"
        "resolve_model('openai'); resolve_model('async_openai')\n"
        "print(sorted(m for m in ('httpx', 'openai', 'httpcore') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
