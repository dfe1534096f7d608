"""LLM-as-judge: config, providers, reply parsing, caching, batching and failures."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.api.instance import TokenCounts
from lmms_eval.errors import ConfigError
from lmms_eval.llm_judge import (
    DEFAULT_JUDGE_MODEL,
    AsyncOpenAIJudge,
    DummyJudge,
    JudgeCache,
    OpenAIJudge,
    Request,
    ServerConfig,
    get_server,
    parse_binary,
    parse_score,
    parse_score_pair,
)
from lmms_eval.llm_judge.providers.openai import is_reasoning_model

# -- fakes -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FakeCompletion:
    text: str
    usage: TokenCounts | None = None
    latency_s: float = 0.01
    attempts: int = 1
    finish_reason: str | None = "stop"


class FakeRequestFailed(Exception):
    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


Reply = str | Callable[[dict[str, Any]], str]


def user_text(payload: dict[str, Any]) -> str:
    content = payload["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


class FakeClient:
    """Records payloads and the number of calls in flight; replies with ``reply`` after ``delay``."""

    def __init__(
        self,
        reply: Reply = "1",
        delay: float | Callable[[dict[str, Any]], float] = 0.0,
        fail: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self.reply = reply
        self.delay = delay
        self.fail = fail
        self.payloads: list[dict[str, Any]] = []
        self.in_flight = 0
        self.peak = 0
        self.closed = False
        self._lock = threading.Lock()

    def _enter(self, payload: dict[str, Any]) -> float:
        with self._lock:
            self.payloads.append(payload)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        return self.delay(payload) if callable(self.delay) else self.delay

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _answer(self, payload: dict[str, Any]) -> FakeCompletion:
        if self.fail is not None and self.fail(payload):
            raise FakeRequestFailed("HTTP 500 Internal Server Error: boom", attempts=3)
        text = self.reply(payload) if callable(self.reply) else self.reply
        return FakeCompletion(text=text, usage=TokenCounts(input_tokens=11, output_tokens=1))

    def complete(self, payload: dict[str, Any]) -> FakeCompletion:
        delay = self._enter(payload)
        try:
            time.sleep(delay)
            return self._answer(payload)
        finally:
            self._leave()

    async def acomplete(self, payload: dict[str, Any]) -> FakeCompletion:
        delay = self._enter(payload)
        try:
            await asyncio.sleep(delay)
            return self._answer(payload)
        finally:
            self._leave()

    def close(self) -> None:
        self.closed = True


def openai_judge(client: FakeClient, **config: Any) -> OpenAIJudge:
    server = get_server("openai", ServerConfig(**config), client=client)
    assert isinstance(server, OpenAIJudge)
    return server


# -- config and provider selection ---------------------------------------------------------------------


def test_server_config_defaults_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MODEL_VERSION", raising=False)
    config = ServerConfig()
    assert config.model_name == DEFAULT_JUDGE_MODEL == "gpt-4o-2024-11-20"
    assert config.temperature == 0.0
    assert config.cache_path is None
    monkeypatch.setenv("MODEL_VERSION", "judge-model-x")
    assert ServerConfig().model_name == "judge-model-x"
    assert ServerConfig(model_name="explicit").model_name == "explicit"


def test_server_config_validation_and_secret() -> None:
    with pytest.raises(ValueError, match="num_concurent"):
        ServerConfig(num_concurent=4)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        ServerConfig(num_concurrent=0)
    assert "sk-secret" not in repr(ServerConfig(api_key="sk-secret"))


def test_get_server_uses_api_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TYPE", "dummy")
    assert isinstance(get_server(), DummyJudge)
    monkeypatch.delenv("API_TYPE")
    server = get_server(config=ServerConfig(use_cache=False))
    assert isinstance(server, OpenAIJudge) and server.name == "openai"
    assert isinstance(get_server("async_openai"), AsyncOpenAIJudge)
    assert isinstance(get_server("Dummy"), DummyJudge)


def test_get_server_unknown_name_suggests() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'openai'") as info:
        get_server("opnai")
    assert "async_openai, dummy, openai" in str(info.value)


def test_no_connection_until_first_call() -> None:
    created: list[ServerConfig] = []

    def factory(config: ServerConfig) -> FakeClient:
        created.append(config)
        return FakeClient("1")

    server = get_server("openai", ServerConfig(base_url="http://judge.invalid/v1"), client_factory=factory)
    assert created == []
    assert server.evaluate_binary("q", "a", "a")["result"] == "1"
    assert len(created) == 1 and created[0].base_url == "http://judge.invalid/v1"


# -- dummy provider ------------------------------------------------------------------------------------


def test_dummy_binary_contains_answer() -> None:
    server = get_server("dummy")
    result = server.evaluate_binary(
        question="What color is the sky?",
        answer="blue",
        prediction="The sky appears Blue.",
        output_format="0/1",
    )
    assert result["success"] is True and result["result"] == "1" and result["raw"] == "1"
    assert result["cached"] is False and result["error"] is None
    assert result["judge"]["provider"] == "dummy"
    wrong = server.evaluate_binary("What color is the sky?", "blue", "bluish green")
    assert wrong["result"] == "0"
    assert server.evaluate_binary("q", "blue", "It is blue", output_format="yes/no")["result"] == "yes"
    assert server.evaluate_binary("q", "A", "The answer is (A).")["result"] == "1"  # an option letter
    assert server.evaluate_binary("q", "A", "The answer is B.")["result"] == "0"


def test_dummy_modes_scores_and_comparisons() -> None:
    exact = DummyJudge(mode="exact")
    assert exact.evaluate_binary("q", "The Blue", "blue!")["result"] == "1"
    assert exact.evaluate_binary("q", "blue", "it is blue")["result"] == "0"
    assert DummyJudge(mode="always_wrong").evaluate_binary("q", "x", "x")["result"] == "0"
    assert DummyJudge(mode="always_correct").evaluate_binary("q", "x", "y")["result"] == "1"
    with pytest.raises(ValueError, match="unknown mode"):
        DummyJudge(mode="sometimes")  # type: ignore[arg-type]

    score = get_server("dummy").evaluate_score("q", "paris", "It is Paris", min_score=1, max_score=5)
    assert score["success"] and score["score"] == 5.0 == score["result"]
    assert get_server("dummy").evaluate_score("q", "paris", "Rome", 1, 5)["score"] == 1.0

    pair = get_server("dummy").evaluate_comparative("q", "a red car", "a blue car", min_score=1, max_score=10)
    assert pair["success"] and pair["scores"] == [10.0, 1.0] and pair["winner"] == "a"


def test_dummy_fixed_reply_exercises_parsing() -> None:
    server = DummyJudge(reply="Judgement: Incorrect")
    assert server.evaluate_binary("q", "a", "a")["result"] == "0"
    unclear = DummyJudge(reply="I am not sure about this one.").evaluate_binary("q", "a", "a")
    assert unclear["success"] is False and unclear["result"] is None
    assert "could not read a 0/1 verdict" in unclear["error"]
    assert unclear["raw"] == "I am not sure about this one."


def test_unknown_output_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown judge output_format"):
        get_server("dummy").evaluate_binary("q", "a", "a", output_format="maybe")


# -- reply parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("1", "1"),
        ("0", "0"),
        ("Yes", "1"),
        ("no.", "0"),
        ("[[1]]", "1"),
        ("The model answer matches. [[0]]", "0"),
        ("Judgement: Yes", "1"),
        ("**Verdict:** incorrect", "0"),
        ("Correct.", "1"),
        ("Incorrect", "0"),
        ("Yes, the prediction says blue as well.", "1"),
        ("1.0", "1"),
        ("<think>The reference says 1 apple, so maybe yes</think>\n0", "0"),
        ("Score: 7", None),
        ("The answer is not quite right", None),
        ("", None),
    ],
)
def test_parse_binary(reply: str, expected: str | None) -> None:
    assert parse_binary(reply, "0/1") == expected


def test_parse_binary_labels_follow_output_format() -> None:
    assert parse_binary("1", "yes/no") == "yes"
    assert parse_binary("No", "Yes/No") == "No"
    assert parse_binary("correct", "true/false") == "true"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("7", 7.0),
        ("Score: 7", 7.0),
        ("Rating: 8/10 - mostly right", 8.0),
        ("[[6]]", 6.0),
        ("8/10", 8.0),
        ("9 because it is complete", 9.0),
        ("The answer is complete and correct.\n10", 10.0),
        ("Score: 7.5", 7.5),
        ("Score: 12", None),
        ("no number here", None),
    ],
)
def test_parse_score(reply: str, expected: float | None) -> None:
    assert parse_score(reply, 0, 10) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("8 7\nResponse 1 is more detailed.", (8.0, 7.0)),
        ("8, 6", (8.0, 6.0)),
        ("[[9, 3]]", (9.0, 3.0)),
        ("Assistant 1: 4\nAssistant 2: 9", (4.0, 9.0)),
        ("7/10", None),
        ("11 3", None),
        ("both are fine", None),
    ],
)
def test_parse_score_pair(reply: str, expected: tuple[float, float] | None) -> None:
    assert parse_score_pair(reply, 1, 10) == expected


# -- openai provider with an injected client ------------------------------------------------------------


def test_openai_payload_and_result() -> None:
    client = FakeClient("[[1]]")
    server = openai_judge(
        client, model_name="judge-1", max_tokens=16, system_prompt="You are a strict grader."
    )
    result = server.evaluate_binary("What is 2+2?", "4", "The answer is 4")
    assert result["success"] and result["result"] == "1" and result["raw"] == "[[1]]"
    assert result["judge"]["model"] == "judge-1" and result["judge"]["usage"] == {
        "input_tokens": 11,
        "output_tokens": 1,
    }
    (payload,) = client.payloads
    assert payload["model"] == "judge-1" and payload["temperature"] == 0.0 and payload["max_tokens"] == 16
    assert payload["messages"][0] == {"role": "system", "content": "You are a strict grader."}
    text = user_text(payload)
    assert (
        "What is 2+2?" in text and "Reference answer: 4" in text and "Model answer: The answer is 4" in text
    )


def test_reasoning_models_get_max_completion_tokens() -> None:
    assert is_reasoning_model("o3-mini") and is_reasoning_model("gpt-5") and is_reasoning_model("openai/o1")
    assert not is_reasoning_model("gpt-4o-2024-11-20") and not is_reasoning_model("qwen2.5-vl-72b")
    client = FakeClient("1")
    openai_judge(client, model_name="o4-mini", max_tokens=64).evaluate_binary("q", "a", "a")
    (payload,) = client.payloads
    assert payload["max_completion_tokens"] == 64
    assert "temperature" not in payload and "max_tokens" not in payload


def test_custom_prompt_and_images() -> None:
    client = FakeClient("yes")
    server = openai_judge(client)
    result = server.evaluate_binary(
        "Q?",
        "cat",
        "a cat",
        output_format="yes/no",
        custom_prompt="{question} | {answer} | {prediction} | {other}",
        images=[b"\x89PNG\r\n\x1a\n fake png"],
    )
    assert result["result"] == "yes"
    content = client.payloads[0]["messages"][-1]["content"]
    assert content[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert content[1]["text"] == "Q? | cat | a cat | {other}"


def test_score_and_comparative_through_client() -> None:
    server = openai_judge(FakeClient("Score: 4\nGood but incomplete."))
    score = server.evaluate_score("q", "a", "b", min_score=0, max_score=5)
    assert score["success"] and score["score"] == 4.0
    out_of_range = server.evaluate_score("q", "a", "c", min_score=0, max_score=3)
    assert out_of_range["success"] is False and out_of_range["score"] is None
    pair = openai_judge(FakeClient("6 9\nThe second is better.")).evaluate_comparative("q", "r1", "r2")
    assert pair["scores"] == [6.0, 9.0] and pair["winner"] == "b" and pair["result"] == [6.0, 9.0]


def test_failure_returns_success_false_and_is_not_cached() -> None:
    client = FakeClient("1", fail=lambda payload: True)
    server = openai_judge(client)
    result = server.evaluate_binary("q", "a", "a")
    assert result["success"] is False and result["result"] is None and result["raw"] is None
    assert "HTTP 500" in result["error"] and result["judge"]["attempts"] == 3
    client.fail = None
    again = server.evaluate_binary("q", "a", "a")
    assert again["success"] and again["cached"] is False and len(client.payloads) == 2


def test_missing_client_dependency_is_raised_not_recorded() -> None:
    def factory(config: ServerConfig) -> Any:
        raise ConfigError("no client for you")

    server = get_server("openai", client_factory=factory)
    with pytest.raises(ConfigError, match="no client"):
        server.evaluate_binary_batch([{"question": "q", "answer": "a", "prediction": "a"}] * 2)


# -- caching -------------------------------------------------------------------------------------------


def test_cache_hit_and_misses_on_changed_prompt_model_and_settings() -> None:
    client = FakeClient("1")
    cache = JudgeCache()
    server = OpenAIJudge(ServerConfig(model_name="m1"), cache=cache, client=client)
    first = server.evaluate_binary("q", "a", "pred")
    second = server.evaluate_binary("q", "a", "pred")
    assert first["cached"] is False and second["cached"] is True
    assert second["result"] == "1" and second["raw"] == "1"
    assert second["judge"]["cache_key"] == first["judge"]["cache_key"]
    assert len(client.payloads) == 1

    server.evaluate_binary("q", "a", "another prediction")  # prompt changed
    assert len(client.payloads) == 2
    OpenAIJudge(ServerConfig(model_name="m2"), cache=cache, client=client).evaluate_binary("q", "a", "pred")
    assert len(client.payloads) == 3  # model changed
    OpenAIJudge(ServerConfig(model_name="m1", max_tokens=7), cache=cache, client=client).evaluate_binary(
        "q", "a", "pred"
    )
    assert len(client.payloads) == 4  # settings changed
    assert get_server("dummy", cache=cache).evaluate_binary("q", "a", "pred")["cached"] is False  # provider
    OpenAIJudge(ServerConfig(model_name="m1"), cache=cache, client=client).evaluate_binary("q", "a", "pred")
    assert len(client.payloads) == 4  # same provider, model, prompt and settings: a hit


def test_use_cache_false_always_calls() -> None:
    client = FakeClient("1")
    server = openai_judge(client, use_cache=False)
    server.evaluate_binary("q", "a", "a")
    assert server.evaluate_binary("q", "a", "a")["cached"] is False
    assert len(client.payloads) == 2


@pytest.mark.parametrize("suffix", [".sqlite", ".jsonl"])
def test_cache_file_persists_across_servers(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"judge{suffix}"
    client = FakeClient("0")
    with openai_judge(client, cache_path=str(path)) as server:
        assert server.evaluate_binary("q", "a", "b")["cached"] is False
    assert path.exists()
    other = FakeClient("1")
    with openai_judge(other, cache_path=str(path)) as server:
        result = server.evaluate_binary("q", "a", "b")
    assert result["cached"] is True and result["result"] == "0" and other.payloads == []
    if suffix == ".jsonl":
        (line,) = path.read_text(encoding="utf-8").splitlines()
        assert json.loads(line)["record"]["content"] == "0"
    else:
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0] == 1


def test_jsonl_cache_skips_broken_lines(tmp_path: Path) -> None:
    path = tmp_path / "judge.jsonl"
    path.write_text("not json\n", encoding="utf-8")
    cache = JudgeCache(path)
    assert len(cache) == 0
    cache.put("k", {"content": "1"})
    assert JudgeCache(path).get("k") == {"content": "1"}


# -- batches -------------------------------------------------------------------------------------------


def test_batch_runs_concurrently_and_keeps_order() -> None:
    n, delay = 8, 0.2

    def slow_first(payload: dict[str, Any]) -> float:  # earlier items finish later
        index = int(user_text(payload).split("item-")[1].split()[0])
        return delay + 0.02 * (n - index)

    def reply(payload: dict[str, Any]) -> str:
        index = int(user_text(payload).split("item-")[1].split()[0])
        return "1" if index % 2 == 0 else "0"

    client = FakeClient(reply, delay=slow_first)
    server = openai_judge(client, num_concurrent=4)
    items = [{"question": "q", "answer": "a", "prediction": f"item-{i} says a"} for i in range(n)]
    results = server.evaluate_binary_batch(items)
    assert [r["result"] for r in results] == ["1", "0"] * (n // 2)
    assert client.peak == 4  # bounded by num_concurrent, and actually concurrent


def test_batch_uses_cache_and_sends_duplicates_once() -> None:
    client = FakeClient("1")
    server = openai_judge(client)
    server.evaluate_binary("q", "a", "cached one")
    items = [
        {"question": "q", "answer": "a", "prediction": "cached one"},
        {"question": "q", "answer": "a", "prediction": "new"},
        {"question": "q", "answer": "a", "prediction": "new"},
    ]
    results = server.evaluate_binary_batch(items)
    assert [r["cached"] for r in results] == [True, False, True]
    assert len(client.payloads) == 2  # the first call above and one for "new"


def test_batch_failures_stay_in_place() -> None:
    client = FakeClient("1", fail=lambda payload: "bad" in user_text(payload))
    server = openai_judge(client, num_concurrent=3)
    items = [{"question": "q", "answer": "a", "prediction": p} for p in ("ok 1", "bad", "ok 2")]
    results = server.evaluate_binary_batch(items)
    assert [r["success"] for r in results] == [True, False, True]
    assert results[1]["result"] is None and "boom" in results[1]["error"]


def test_batch_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match="unknown key"):
        get_server("dummy").evaluate_binary_batch([{"question": "q", "answer": "a", "predicton": "a"}])


def test_score_and_comparative_batches() -> None:
    server = get_server("dummy")
    scores = server.evaluate_score_batch(
        [
            {"question": "q", "answer": "x", "prediction": "x", "min_score": 1, "max_score": 3},
            {"question": "q", "answer": "x", "prediction": "y", "min_score": 1, "max_score": 3},
        ]
    )
    assert [s["score"] for s in scores] == [3.0, 1.0]
    pairs = server.evaluate_comparative_batch([{"question": "q", "response_a": "x", "response_b": "x"}])
    assert pairs[0]["winner"] == "tie"


def test_dummy_batch_is_concurrent() -> None:
    server = DummyJudge(ServerConfig(num_concurrent=8))
    all_in_flight = threading.Barrier(8)  # passes only when the 8 calls run at the same time
    invoke = server._invoke  # pyright: ignore[reportPrivateUsage]

    def meet_then_invoke(request: Any) -> Any:
        all_in_flight.wait(timeout=30)  # a hang guard: raises BrokenBarrierError if calls run one by one
        return invoke(request)

    server._invoke = meet_then_invoke  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    results = server.evaluate_binary_batch(
        [{"question": "q", "answer": "a", "prediction": f"a {i}"} for i in range(8)]
    )
    assert all(r["result"] == "1" for r in results) and server.calls == 8


def test_async_openai_batch_concurrency_and_order() -> None:
    def reply(payload: dict[str, Any]) -> str:
        return "Yes" if "even" in user_text(payload) else "No"

    client = FakeClient(reply, delay=0.1)
    server = get_server("async_openai", ServerConfig(num_concurrent=3), client=client)
    items = [
        {"question": "q", "answer": "a", "prediction": f"{'even' if i % 2 == 0 else 'odd'} {i}"}
        for i in range(9)
    ]
    results = server.evaluate_binary_batch(items)
    assert [r["result"] for r in results] == ["1" if i % 2 == 0 else "0" for i in range(9)]
    assert client.peak == 3


def test_async_openai_inside_running_loop() -> None:
    client = FakeClient("1", delay=0.01)
    server = get_server("async_openai", ServerConfig(), client=client)

    async def main() -> tuple[dict[str, Any], list[Any]]:
        single = server.evaluate_binary("q", "a", "a")  # sync call from inside a loop
        batch = await server.acomplete_batch([Request.from_prompt("hello"), Request.from_prompt("world")])
        return single, batch

    single, batch = asyncio.run(main())
    assert single["result"] == "1"
    assert [r.content for r in batch] == ["1", "1"] and all(r.success for r in batch)


def test_close_closes_owned_client_only() -> None:
    injected = FakeClient("1")
    server = openai_judge(injected)
    server.evaluate_binary("q", "a", "a")
    server.close()
    assert injected.closed is False
    owned = FakeClient("1")
    server = get_server("openai", client_factory=lambda config: owned)
    server.evaluate_binary("q", "a", "a")
    server.close()
    assert owned.closed is True


# -- against the fault-injecting OpenAI-compatible test server -------------------------------------------


def _verdict_responder(payload: dict[str, Any]) -> str:
    text = user_text(payload)
    return "[[1]]" if "Model answer: blue" in text else "[[0]]"


@pytest.mark.parametrize("provider", ["openai", "async_openai"])
def test_judge_against_openai_compatible_server(provider: str) -> None:
    from openai_server import OpenAIServer

    with OpenAIServer(latency_s=0.05, responder=_verdict_responder) as server:
        server.add_fault("status", match="retry me", status=503, times=1)
        server.add_fault("status", match="forbidden", status=401, times=None)
        config = ServerConfig(
            model_name="judge-model",
            base_url=server.base_url,
            api_key="sk-test",
            num_concurrent=4,
            max_retries=2,
            retry_backoff_s=0.01,
            timeout=5,
        )
        with get_server(provider, config) as judge:
            items = [
                {"question": f"q{i} retry me" if i == 1 else f"q{i}", "answer": "blue", "prediction": p}
                for i, p in enumerate(["blue", "blue", "red", "blue", "green", "blue", "blue", "red"])
            ]
            items.append({"question": "forbidden", "answer": "blue", "prediction": "blue"})
            results = judge.evaluate_binary_batch(items)
            again = judge.evaluate_binary("q0", "blue", "blue")
    assert [r["result"] for r in results[:8]] == ["1", "1", "0", "1", "0", "1", "1", "0"]
    assert results[1]["judge"]["attempts"] == 2  # the injected 503 was retried
    assert (
        results[8]["success"] is False and "HTTP 401" in results[8]["error"] and results[8]["result"] is None
    )
    assert again["cached"] is True
    assert 1 < server.max_in_flight <= 4
    sent = server.payloads[0]
    assert sent["model"] == "judge-model" and sent["temperature"] == 0.0
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert results[0]["judge"]["usage"]["output_tokens"] == 1
