"""The response cache (``--use_cache``), its CLI (``lmms-eval cache``) and ``--cache_requests``."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import lmms_eval
from lmms_eval import inference
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.caching import (
    CacheEntry,
    CacheError,
    RequestCache,
    ResponseCache,
    ResponseCacheSession,
    _files,
    keys,
    resolve_cache_path,
)
from lmms_eval.cli import SUBCOMMANDS, main
from lmms_eval.errors import ConfigError
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.tasks import TaskManager

# -- helpers ----------------------------------------------------------------------------------------


class Counting(DummyChat):
    """The oracle dummy, counting the requests it is sent; every third doc can be made to fail."""

    def __init__(self, fail_every: int = 0, empty: bool = False, **kwargs: Any) -> None:
        super().__init__(answer_field="answer", **kwargs)
        self.fail_every = fail_every
        self.empty = empty
        self.sent: list[tuple[str, int]] = []

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult | RequestFailure]:  # type: ignore[override]
        self.sent += [(r.task_name, r.doc_id) for r in requests]
        out: list[str | GenerationResult | RequestFailure] = []
        for request, answer in zip(requests, super().generate_until(requests)):
            if self.fail_every and request.doc_id % self.fail_every == 0:
                out.append(RequestFailure("HTTP 500", attempts=3))
            elif self.empty:
                out.append("  ")
            else:
                out.append(answer)
        return out

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        self.sent += [(r.task_name, r.doc_id) for r in requests]
        return super().loglikelihood(requests)


def load_task(name: str, manager: TaskManager | None = None) -> ConfigurableTask:
    task = (manager or TaskManager()).load_task_or_group([name])[name]
    assert isinstance(task, ConfigurableTask)
    return task


def evaluate(model: Any, cache: Path | None, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("tasks", ["demo_qa"])
    kwargs.setdefault("limit", 12)
    return lmms_eval.simple_evaluate(
        model=model,
        use_cache=str(cache) if cache else None,
        show_progress=False,
        bootstrap_iters=0,
        **kwargs,
    )


def scores(results: dict[str, Any]) -> dict[str, Any]:
    return {task: dict(values) for task, values in results["results"].items()}


def mc_manager(write_files: Any, root: Path, prompt: str = "q") -> TaskManager:
    rows = [
        {"q": f"q{i}", "opts": ["red", "green", "blue"], "answer": ["red", "green", "blue"][i % 3]}
        for i in range(6)
    ]
    yaml_text = (
        "task: mc\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: d.jsonl\ntest_split: test\n"
        f"output_type: multiple_choice\ndoc_to_text: {prompt}\ndoc_to_choice: opts\ndoc_to_target: answer\n"
    )
    write_files({"mc/d.jsonl": "\n".join(map(json.dumps, rows)), "mc/mc.yaml": yaml_text}, root)
    return TaskManager(include_path=str(root), include_defaults=False)


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


# -- keys -------------------------------------------------------------------------------------------


def _request(**changes: Any) -> tuple[Instance, dict[str, Any]]:
    doc = {"q": "What is 2 + 2?", "image": changes.pop("image", Image.new("RGB", (4, 4), "red"))}
    gen_kwargs = changes.pop("gen_kwargs", {"temperature": 0, "until": ["\n"], "max_new_tokens": 8})
    context = changes.pop("context", "What is 2 + 2?")
    meta = {"task": "t", "doc_id": 3, "repeats": 1, "split": "test", **changes.pop("meta", {})}
    request = Instance(
        "generate_until",
        (context, gen_kwargs, lambda d: [d["image"]], meta["doc_id"], meta["task"], "test"),
        changes.pop("idx", 0),
        meta,
    )
    return request, doc


def _key(
    request: Instance, doc: dict[str, Any], repeat: int = 0, task_fp: str = "tf", model_fp: str = "mf"
) -> str:
    return keys.request_key(request, repeat, keys.content_hash(request, doc), task_fp, model_fp)


def test_key_changes_with_every_component() -> None:
    base_request, base_doc = _request()
    base = _key(base_request, base_doc)
    assert _key(*_request()) == base  # stable: rebuilt from scratch, same key
    assert _key(*_request(gen_kwargs={"temperature": 0.0, "until": "\n", "max_new_tokens": 8.0})) == base
    variants = {
        "doc id": _key(*_request(meta={"doc_id": 4})),
        "task": _key(*_request(meta={"task": "u"})),
        "choice index": _key(*_request(idx=1)),
        "repeat": _key(base_request, base_doc, repeat=1),
        "gen kwargs": _key(*_request(gen_kwargs={"temperature": 0, "until": ["\n"], "max_new_tokens": 9})),
        "prompt": _key(*_request(context="What is 2 + 3?")),
        "image": _key(*_request(image=Image.new("RGB", (4, 4), "blue"))),
        "image size": _key(*_request(image=Image.new("RGB", (4, 5), "red"))),
        "task fingerprint": _key(base_request, base_doc, task_fp="tf2"),
        "model fingerprint": _key(base_request, base_doc, model_fp="mf2"),
    }
    ll = Instance(
        "loglikelihood", ("ctx", " red", lambda d: [], 3, "t", "test"), 0, {"task": "t", "doc_id": 3}
    )
    ll_other = Instance(
        "loglikelihood", ("ctx", " blue", lambda d: [], 3, "t", "test"), 0, {"task": "t", "doc_id": 3}
    )
    variants["request type"] = _key(ll, base_doc)
    variants["continuation"] = _key(ll_other, base_doc)
    assert len(set(variants.values())) == len(variants) and base not in variants.values()


def test_media_references_are_stable_and_content_based(tmp_path: Path) -> None:
    red, red_again = Image.new("RGB", (8, 8), "red"), Image.new("RGB", (8, 8), "red")
    assert keys.media_reference(red) == keys.media_reference(red_again)
    assert keys.media_reference(red) != keys.media_reference(Image.new("RGB", (8, 8), "green"))
    assert keys.media_reference("videos/a.mp4") == "videos/a.mp4"  # paths and URLs as given
    assert keys.media_reference(tmp_path / "a.png") == str(tmp_path / "a.png")
    assert keys.media_reference(b"abc") == keys.media_reference(bytearray(b"abc"))
    import numpy as np

    audio = {"array": np.zeros(4, dtype=np.float32), "sampling_rate": 16000}
    assert keys.media_reference(audio) == keys.media_reference(
        {"array": np.zeros(4, dtype=np.float32), "sampling_rate": 16000}
    )
    assert keys.media_reference(audio) != keys.media_reference(
        {**audio, "array": np.ones(4, dtype=np.float32)}
    )
    # chat messages: media replaced inside the structure, text kept
    messages = [{"role": "user", "content": [{"type": "image", "url": red}, {"type": "text", "text": "hi"}]}]
    ref = keys.media_reference(messages)
    assert ref[0]["content"][1]["text"] == "hi" and "image_sha256" in ref[0]["content"][0]["url"]


def test_model_fingerprint_ignores_batch_size_device_and_secret_values() -> None:
    fp = keys.model_fingerprint("openai", {"model_version": "gpt-x", "batch_size": 8, "device": "cuda:0"})
    assert fp == keys.model_fingerprint("openai", {"model_version": "gpt-x"})
    assert fp == keys.model_fingerprint("openai", {"model_version": "gpt-x", "max_batch_size": 4})
    assert keys.model_fingerprint(
        "openai", {"model_version": "gpt-x", "api_key": "sk-1"}
    ) == keys.model_fingerprint("openai", {"model_version": "gpt-x", "api_key": "sk-2"})
    assert fp != keys.model_fingerprint("openai", {"model_version": "gpt-y"})
    assert fp != keys.model_fingerprint("vllm", {"model_version": "gpt-x"})


@pytest.mark.parametrize(
    ("request_type", "gen_kwargs", "expected"),
    [
        ("loglikelihood", None, True),
        ("generate_until", {}, True),
        ("generate_until", {"temperature": 0}, True),
        ("generate_until", {"temperature": None, "do_sample": False}, True),
        ("generate_until", {"temperature": 0.0, "n": 1}, True),
        ("generate_until", {"temperature": 0.7}, False),
        ("generate_until", {"temperature": 0, "do_sample": True}, False),
        ("generate_until", {"temperature": 0, "n": 4}, False),
        ("generate_until", {"best_of": 2}, False),
        ("generate_until_multi_round", {"num_return_sequences": 3}, False),
    ],
)
def test_only_deterministic_requests_are_cacheable(
    request_type: str, gen_kwargs: Any, expected: bool
) -> None:
    assert keys.is_deterministic(request_type, gen_kwargs) is expected


def test_failed_empty_and_malformed_answers_are_never_encoded() -> None:
    assert keys.encode_response("generate_until", RequestFailure("timeout")) is None
    assert keys.encode_response("generate_until", None) is None
    assert keys.encode_response("generate_until", "") is None
    assert keys.encode_response("generate_until", " \n") is None
    assert keys.encode_response("generate_until", GenerationResult("")) is None
    assert keys.encode_response("loglikelihood", (float("nan"), True)) is None
    assert keys.encode_response("loglikelihood", (-1.0,)) is None
    assert keys.encode_response("loglikelihood", ("x", True)) is None
    assert keys.encode_response("loglikelihood", "-1.0") is None
    record = keys.encode_response(
        "generate_until", GenerationResult("16", TokenCounts(input_tokens=9, output_tokens=1), latency_s=0.3)
    )
    assert record == {"text": "16", "token_counts": {"input_tokens": 9, "output_tokens": 1}}  # no timings
    decoded = keys.decode_response("generate_until", record)
    assert isinstance(decoded, GenerationResult) and decoded.text == "16"
    assert decoded.token_counts == TokenCounts(input_tokens=9, output_tokens=1)
    assert keys.decode_response("loglikelihood", keys.encode_response("loglikelihood", (-0.5, True))) == (
        -0.5,
        True,
    )
    assert keys.decode_response("generate_until", {"text": ""}) is None  # a bad stored record is a miss
    assert keys.decode_response("loglikelihood", {"loglikelihood": "x"}) is None


# -- hits and misses through the evaluator ---------------------------------------------------------


def test_second_run_is_answered_from_the_cache_with_identical_results(
    cache_dir: Path, tmp_path: Path
) -> None:
    first_model = Counting()
    first = evaluate(first_model, cache_dir, output_path=str(tmp_path / "a"), log_samples=True)
    assert len(first_model.sent) == 12
    assert first["cache"]["misses"] == 12
    assert first["cache"]["stored"] == 12 and first["cache"]["hits"] == 0
    assert first["config"]["use_cache"] == str(cache_dir)

    second_model = Counting()
    second = evaluate(second_model, cache_dir, output_path=str(tmp_path / "b"), log_samples=True)
    assert second_model.sent == []
    assert second["cache"]["hits"] == 12 and second["cache"]["model_calls"] == 0
    assert scores(second) == scores(first)
    assert second["usage"]["total"] == first["usage"]["total"]  # token counts are restored

    def samples(root: Path) -> list[dict[str, Any]]:
        return [json.loads(x) for x in next(root.rglob("*_samples_demo_qa.jsonl")).read_text().splitlines()]

    assert samples(tmp_path / "a") == samples(tmp_path / "b")


def test_changed_settings_miss_the_cache(cache_dir: Path, write_files: Any, tmp_path: Path) -> None:
    evaluate(Counting(), cache_dir)
    cases: dict[str, tuple[Any, dict[str, Any]]] = {
        "generation kwargs": (Counting(), {"gen_kwargs": "max_new_tokens=4"}),
        "model args": (Counting(), {"model_args": "variant=b"}),
        "system instruction": (Counting(), {"system_instruction": "Be brief."}),
    }
    for name, (model, extra) in cases.items():
        evaluate(model, cache_dir, **extra)
        assert len(model.sent) == 12, name
    # batch size and device do not change answers: still hits
    model = Counting()
    evaluate(model, cache_dir, batch_size=4, device="cpu")
    assert model.sent == []
    # a different task config (same name, different prompt) changes the task fingerprint
    manager_a, manager_b = (
        mc_manager(write_files, tmp_path / "a"),
        mc_manager(write_files, tmp_path / "b", "'Q: {{q}}'"),
    )
    model = Counting()
    evaluate(model, cache_dir, tasks=["mc"], task_manager=manager_a)
    assert len(model.sent) == 18  # 6 docs x 3 choices
    model = Counting()
    again = evaluate(model, cache_dir, tasks=["mc"], task_manager=manager_a)
    assert model.sent == [] and again["cache"]["hits"] == 18
    model = Counting()
    evaluate(model, cache_dir, tasks=["mc"], task_manager=manager_b)
    assert len(model.sent) == 18


def test_loglikelihood_answers_are_reused(cache_dir: Path, write_files: Any, tmp_path: Path) -> None:
    manager = mc_manager(write_files, tmp_path / "mc")
    first = evaluate(Counting(), cache_dir, tasks=["mc"], task_manager=manager)
    model = Counting()
    second = evaluate(model, cache_dir, tasks=["mc"], task_manager=manager)
    assert model.sent == [] and scores(first) == scores(second)
    assert second["results"]["mc"]["acc,none"] == 1.0


def test_sampled_generations_are_cached_only_with_cache_sampling(cache_dir: Path) -> None:
    sampled = {"gen_kwargs": "temperature=0.8,do_sample=true", "repeats": 2}
    first = evaluate(Counting(), cache_dir, **sampled)
    assert first["cache"]["uncacheable"] == 24 and first["cache"]["stored"] == 0
    model = Counting()
    evaluate(model, cache_dir, **sampled)
    assert len(model.sent) == 24
    model = Counting()
    with_sampling = evaluate(model, cache_dir, cache_sampling=True, **sampled)
    assert with_sampling["cache"]["stored"] == 24  # each repeat has its own key
    model = Counting()
    evaluate(model, cache_dir, cache_sampling=True, **sampled)
    assert model.sent == []
    model = Counting()
    evaluate(model, cache_dir, cache_sampling=True, **{**sampled, "repeats": 3})
    # the task fingerprint includes repeats, so a changed repeat count asks again
    assert len(model.sent) == 36


def test_failed_requests_are_not_cached_and_a_rerun_retries_only_them(cache_dir: Path) -> None:
    flaky = Counting(fail_every=3)
    first = evaluate(flaky, cache_dir)
    assert first["cache"]["rejected"] == 4 and first["cache"]["stored"] == 8
    assert first["status"] == "completed_with_failures"
    healthy = Counting()
    second = evaluate(healthy, cache_dir)
    assert sorted(doc for _, doc in healthy.sent) == [0, 3, 6, 9]
    assert second["status"] == "completed" and second["results"]["demo_qa"]["exact_match,none"] == 1.0


def test_openai_backend_failures_are_retried_on_rerun_and_answers_reused(cache_dir: Path) -> None:
    """A real backend (HTTP to a local OpenAI-compatible server): the cache needs no backend code."""
    pytest.importorskip("httpx")
    from openai_server import OpenAIServer, last_user_text

    path = Path(lmms_eval.__file__).parent / "tasks" / "demo_qa" / "demo_qa.jsonl"
    answers = {r["question"]: str(r["answer"]) for r in map(json.loads, path.read_text().splitlines())}
    model_args = {
        "model": "gpt-4o-mini",
        "max_retries": 1,
        "retry_backoff_s": 0.01,
        "num_concurrent": 4,
        "api_key": "sk-test",
    }
    with OpenAIServer(responder=lambda p: answers[last_user_text(p).split("\n")[0]]) as server:
        server.add_fault("status", match="What is 13 + 2?", status=500, times=None)  # doc 3
        model_args["base_url"] = server.base_url
        first = evaluate("openai_compatible", cache_dir, model_args=model_args)
        assert first["failures"]["demo_qa"]["doc_ids"] == [3]
        assert first["cache"]["stored"] == 11 and first["cache"]["rejected"] == 1
        server.reset()  # the server recovers
        second = evaluate("openai_compatible", cache_dir, model_args={**model_args, "api_key": "sk-rotated"})
        assert [last_user_text(p).split("\n")[0] for p in server.payloads] == ["What is 13 + 2?"]
        assert second["status"] == "completed" and second["results"]["demo_qa"]["exact_match,none"] == 1.0
        assert second["cache"]["hits"] == 11
        server.reset()
        evaluate("openai_compatible", cache_dir, model_args=model_args)
        assert server.payloads == []


def test_empty_answers_are_not_cached(cache_dir: Path) -> None:
    first = evaluate(Counting(empty=True), cache_dir)
    assert first["cache"]["rejected"] == 12 and first["cache"]["stored"] == 0
    model = Counting()
    evaluate(model, cache_dir)
    assert len(model.sent) == 12


def test_each_model_batch_is_committed_as_it_arrives(cache_dir: Path) -> None:
    """A model that dies after some batches leaves those answers in the cache."""

    class Dying(Counting):
        def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult | RequestFailure]:  # type: ignore[override]
            if len(self.sent) >= 5:
                raise KeyboardInterrupt
            return super().generate_until(requests)

    dying = Dying()
    dying._model_name = "Counting"  # the same model id, so the same model fingerprint
    with pytest.raises(KeyboardInterrupt):
        evaluate(dying, cache_dir)
    model = Counting()
    result = evaluate(model, cache_dir)
    assert result["cache"]["hits"] == 5 and len(model.sent) == 7


def test_model_call_wrapper_keeps_order_and_sends_misses_in_order(cache_dir: Path) -> None:
    task = load_task("demo_qa")
    model = Counting(batch_size=3)
    model.task_dict["demo_qa"] = task.model_docs()
    requests = task.build_all_requests(chat=True, limit=10)
    with ResponseCache(cache_dir) as cache:
        session = ResponseCacheSession(cache, "dummy")
        inference.run_requests(
            model, requests[::2], model_call=session.model_call(model, {"demo_qa": task.fingerprint()})
        )
        model.sent.clear()
        inference.run_requests(
            model,
            requests,
            model_call=session.model_call(model, {"demo_qa": task.fingerprint()}),
            chunk_size=4,
        )
    assert [doc for _, doc in model.sent] == [1, 3, 5, 7, 9]  # only misses, in request order
    assert [r.resps[0] for r in requests] == [str(task.eval_docs[i]["answer"]) for i in range(10)]
    assert session.counters.hits == 5 and session.counters.misses == 10


def test_wrapper_rejects_a_model_that_returns_the_wrong_number_of_answers(cache_dir: Path) -> None:
    class Short(DummyChat):
        def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:  # type: ignore[override]
            return ["1"] * (len(requests) - 1)

    task = load_task("demo_qa")
    model = Short(batch_size=4)
    model.task_dict["demo_qa"] = task.model_docs()
    with ResponseCache(cache_dir) as cache:
        call = ResponseCacheSession(cache, "dummy").model_call(model, {"demo_qa": task.fingerprint()})
        with pytest.raises(RuntimeError, match="returned 3 results for 4 requests"):
            call("generate_until", task.build_all_requests(chat=True, limit=4))


def test_use_cache_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LMMS_EVAL_USE_CACHE", raising=False)
    assert resolve_cache_path(None) is None
    assert resolve_cache_path(str(tmp_path / "x")) == tmp_path / "x"
    monkeypatch.setenv("LMMS_EVAL_USE_CACHE", "True")
    assert resolve_cache_path(None) == Path(os.environ["LMMS_EVAL_HOME"]) / "eval_cache"
    monkeypatch.setenv("LMMS_EVAL_USE_CACHE", str(tmp_path / "env_cache"))
    assert resolve_cache_path(None) == tmp_path / "env_cache"
    result = evaluate(Counting(), None)
    assert result["cache"]["path"] == str(tmp_path / "env_cache") and result["cache"]["stored"] == 12
    monkeypatch.setenv("LMMS_EVAL_USE_CACHE", "false")
    assert "cache" not in evaluate(Counting(), None)


# -- kill -9 and resume through the real CLI --------------------------------------------------------


def _cli(cache: Path, out: Path, latency: float = 0.01) -> list[str]:
    return [
        sys.executable, "-m", "lmms_eval", "--model", "dummy",
        "--model_args", f"answer_field=answer,accuracy=0.7,latency={latency}",
        "--tasks", "demo_qa", "--use_cache", str(cache), "--output_path", str(out), "--log_samples",
    ]  # fmt: skip


def _results(out: Path) -> dict[str, Any]:
    files = [p for p in out.rglob("*_results.json") if json.loads(p.read_text()).get("status") == "completed"]
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def _samples(out: Path) -> list[dict[str, Any]]:
    files = sorted(out.rglob("*_samples_demo_qa.jsonl"), key=lambda p: p.stat().st_mtime)
    return [json.loads(x) for x in files[-1].read_text().splitlines()]


def test_kill_9_mid_run_then_rerun_resumes_with_identical_results(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # reference: one uninterrupted run with its own cache
    reference = subprocess.run(
        [*_cli(tmp_path / "ref_cache", tmp_path / "ref"), "--verbosity", "WARNING"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "120 answers stored" in reference.stderr

    cache, out = tmp_path / "cache", tmp_path / "out"
    proc = subprocess.Popen(
        [*_cli(cache, out), "--verbosity", "DEBUG"], env=env, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    committed = 0
    deadline = time.monotonic() + 120
    for line in proc.stderr:
        if "committed" in line and "in this run" in line:
            committed = int(line.split(", ")[-1].split()[0])
            if committed >= 30:
                proc.send_signal(signal.SIGKILL)
                break
        assert time.monotonic() < deadline
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert 30 <= committed < 120
    run_files = list((cache / "runs").glob("*.db"))
    assert len(run_files) == 1  # the killed process's answers are in its run file

    resumed = subprocess.run(
        [*_cli(cache, out), "--verbosity", "WARNING"], env=env, capture_output=True, text=True, check=True
    )
    result = _results(out)
    # everything committed before the kill is reused (the run went on for a moment after the
    # line we read); only the rest, including the answer in flight at the kill, is asked again
    assert committed <= result["cache"]["hits"] < 120
    assert result["cache"]["model_calls"] == 120 - result["cache"]["hits"]
    assert f"{result['cache']['hits']} hits" in resumed.stderr
    expected = _results(tmp_path / "ref")
    assert result["results"] == expected["results"]
    assert _samples(out) == _samples(tmp_path / "ref")
    assert not list((cache / "runs").glob("*.db"))  # merged into cache.db and removed

    again = subprocess.run(
        [*_cli(cache, tmp_path / "again", latency=0.01), "--verbosity", "WARNING"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "120 hits, 0 requests sent to the model" in again.stderr


# -- several processes --------------------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys, time
    from lmms_eval.caching import CacheEntry, ResponseCache
    path, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    cache = ResponseCache(path)
    for i in range(count):
        key = f"shared-{i}" if i % 4 == 0 else f"w{worker}-{i}"  # some keys written by every worker
        entry = CacheEntry(key, "generate_until", f"task{worker % 2}", i, 0, 0, "m", "fp", {"text": f"a{i}"})
        cache.put(entry)
        assert cache.get_many([key])[key] == {"text": f"a{i}"}
    if len(sys.argv) > 4:
        print("ready", flush=True)
        time.sleep(60)  # killed by the test
    cache.close()
    """
)


def test_several_processes_share_one_cache(cache_dir: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(cache_dir), str(w), "200"], stderr=subprocess.PIPE
        )
        for w in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    with ResponseCache(cache_dir) as cache:
        assert len(cache) == 4 * 150 + 50  # 150 own keys per worker + 50 shared
        assert cache.pending_run_files() == []
        by_task = {(r["task"], r["model"]): r["entries"] for r in cache.stats()}
        assert sum(by_task.values()) == 650
        assert cache.get_many(["w3-199", "shared-0"]) == {
            "w3-199": {"text": "a199"},
            "shared-0": {"text": "a0"},
        }
    db = sqlite3.connect(cache_dir / "cache.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_run_file_of_a_live_process_is_left_alone_and_merged_after_it_dies(cache_dir: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(cache_dir), "7", "20", "stay"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    with ResponseCache(cache_dir) as cache:
        assert len(cache.pending_run_files()) == 1  # still running: not merged, not deleted
        assert cache.get_many(["w7-1"]) == {}
    proc.kill()
    proc.wait()
    with ResponseCache(cache_dir) as cache:  # opening merges what the killed process left
        assert cache.get_many(["w7-1"]) == {"w7-1": {"text": "a1"}}
        assert len(cache) == 20 and cache.pending_run_files() == []


def test_stale_merge_lock_of_a_dead_process_is_broken(cache_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    lock = cache_dir / ".merge.lock"
    lock.mkdir(parents=True)
    (lock / "owner").write_text(f"{_files.HOST} {proc.stdout.strip()}\n")
    with ResponseCache(cache_dir, lock_timeout=2) as cache:
        cache.put(CacheEntry("k", "generate_until", "t", 0, 0, 0, "m", "fp", {"text": "x"}))
    assert not lock.exists()
    with ResponseCache(cache_dir) as cache:
        assert len(cache) == 1


# -- storage modes ----------------------------------------------------------------------------------


def test_network_file_system_falls_back_to_delete_journal(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mounts = "server:/export /mnt/shared nfs4 rw 0 0\n/dev/sda1 / ext4 rw 0 0\n"
    assert _files.filesystem_type("/mnt/shared/cache", mounts) == "nfs4"
    assert _files.filesystem_type("/home/me", mounts) == "ext4"
    monkeypatch.setattr("lmms_eval.caching.response_cache.is_network_filesystem", lambda path: True)
    with ResponseCache(cache_dir) as cache:
        assert cache.journal_mode == "delete"
        cache.put(CacheEntry("k", "generate_until", "t", 0, 0, 0, "m", "fp", {"text": "x"}))
    db = sqlite3.connect(cache_dir / "cache.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert db.execute("PRAGMA mmap_size").fetchone()[0] == 0
    db.close()
    monkeypatch.setenv("LMMS_EVAL_CACHE_JOURNAL", "wal")
    with ResponseCache(cache_dir) as cache:
        assert cache.journal_mode == "wal" and len(cache) == 1


# -- damaged files ----------------------------------------------------------------------------------


def test_damaged_cache_file_fails_clearly_and_a_fresh_cache_works(
    cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluate(Counting(), cache_dir)
    (cache_dir / "cache.db").write_bytes(b"this is not an sqlite database" * 200)
    with pytest.raises(CacheError) as info:
        evaluate(Counting(), cache_dir)
    message = str(info.value)
    assert str(cache_dir / "cache.db") in message and "lmms-eval cache clear --path" in message

    args = ["--model", "dummy", "--model_args", "answer_field=answer", "--tasks", "demo_qa", "--limit", "4"]
    assert main([*args, "--use_cache", str(cache_dir), "--verbosity", "ERROR"]) == 1
    err = capsys.readouterr().err
    assert "lmms-eval: error: response cache file" in err and "Traceback" not in err
    # a new folder works at once, and so does the old one after `cache clear`
    assert main([*args, "--use_cache", str(cache_dir.parent / "fresh"), "--verbosity", "ERROR"]) == 0
    assert main(["cache", "clear", "--path", str(cache_dir)]) == 0
    assert main([*args, "--use_cache", str(cache_dir), "--verbosity", "ERROR"]) == 0
    assert "4 answers stored" in capsys.readouterr().err


def test_damaged_page_in_cache_file_is_detected(cache_dir: Path) -> None:
    with ResponseCache(cache_dir) as cache:
        cache.put_many(
            [
                CacheEntry(f"k{i}", "generate_until", "t", i, 0, 0, "m", "fp", {"text": "x" * 300})
                for i in range(300)
            ]
        )
    db = sqlite3.connect(cache_dir / "cache.db")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode=DELETE")
    db.close()
    data = bytearray((cache_dir / "cache.db").read_bytes())
    data[4096 * 3 : 4096 * 6] = os.urandom(4096 * 3)
    (cache_dir / "cache.db").write_bytes(bytes(data))
    with pytest.raises(CacheError, match="damaged"):
        ResponseCache(cache_dir)


def test_damaged_run_file_is_moved_aside_and_the_run_goes_on(
    cache_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (cache_dir / "runs").mkdir(parents=True)
    (cache_dir / "runs" / "otherhost-1-deadbeef.db").write_bytes(b"garbage" * 1000)
    with caplog.at_level("WARNING", logger="lmms_eval.caching"):
        result = evaluate(Counting(), cache_dir)
    assert result["cache"]["stored"] == 12
    assert any("damaged" in r.getMessage() for r in caplog.records)
    assert (cache_dir / "runs" / "otherhost-1-deadbeef.corrupt").exists()


# -- lmms-eval cache -----------------------------------------------------------------------------------


def test_cache_subcommand_stats_prune_clear(
    cache_dir: Path, write_files: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluate(Counting(), cache_dir)
    evaluate(Counting(), cache_dir, tasks=["mc"], task_manager=mc_manager(write_files, tmp_path / "mc"))
    evaluate(Counting(), cache_dir, model_args="variant=b", limit=3)
    capsys.readouterr()
    assert main(["cache", "stats", "--path", str(cache_dir)]) == 0
    out = capsys.readouterr().out
    assert "demo_qa" in out and "mc" in out and "33 entries" in out
    assert main(["cache", "stats", "--path", str(cache_dir), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    rows = {(r["task"], r["model_fingerprint"]): r["entries"] for r in stats["by_task_model"]}
    assert sorted(rows.values()) == [3, 12, 18] and stats["entries"] == 33

    assert main(["cache", "prune", "--path", str(cache_dir), "--task", "mc"]) == 0
    assert "removed 18 entries" in capsys.readouterr().out
    variant_fp = keys.model_fingerprint("Counting", {"variant": "b"})
    assert main(["cache", "prune", "--path", str(cache_dir), "--model", variant_fp]) == 0
    assert "removed 3 entries" in capsys.readouterr().out
    assert main(["cache", "prune", "--path", str(cache_dir), "--model", "Counting", "--task", "demo_qa"]) == 0
    assert "removed 12 entries" in capsys.readouterr().out
    assert main(["cache", "prune", "--path", str(cache_dir)]) == 1  # needs --task or --model
    assert main(["cache", "clear", "--path", str(cache_dir)]) == 0
    assert not (cache_dir / "cache.db").exists()
    assert main(["cache", "stats", "--path", str(cache_dir)]) == 0
    assert "0 entries" in capsys.readouterr().out


def test_cache_subcommand_default_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LMMS_EVAL_USE_CACHE", raising=False)
    assert main(["cache", "stats"]) == 0
    assert (
        f"no response cache at {Path(os.environ['LMMS_EVAL_HOME']) / 'eval_cache'}" in capsys.readouterr().out
    )
    assert "cache" in SUBCOMMANDS
    assert main([]) == 0 and "cache     response cache" in capsys.readouterr().out


def test_cli_flags_reach_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--model", "dummy", "--model_args", "answer_field=answer", "--tasks", "demo_qa", "--limit", "5"]
    out = tmp_path / "out"
    flags = ["--use_cache", str(tmp_path / "c"), "--cache_sampling", "--cache_requests", "true"]
    assert main([*args, *flags, "--output_path", str(out), "--verbosity", "ERROR"]) == 0
    config = _results(out)["config"]
    assert config["use_cache"] == str(tmp_path / "c") and config["cache_sampling"] is True
    assert config["cache_requests"] == "true"
    assert main([*args, "--cache_requests", "sometimes"]) == 1
    assert "expected true, refresh or delete" in capsys.readouterr().err


# -- --cache_requests ------------------------------------------------------------------------------------


def _same_requests(a: list[Instance], b: list[Instance], docs: Any) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.request_type, x.idx, x.metadata) == (y.request_type, y.idx, y.metadata)
        for u, v in zip(x.args, y.args):
            if callable(u):
                assert callable(v) and u(docs[x.doc_id]) == v(docs[x.doc_id])
            else:
                assert u == v


@pytest.mark.parametrize("chat", [True, False])
@pytest.mark.parametrize("task_name", ["demo_qa", "mc"])
def test_request_cache_round_trip(chat: bool, task_name: str, write_files: Any, tmp_path: Path) -> None:
    manager = mc_manager(write_files, tmp_path / "mc") if task_name == "mc" else TaskManager()
    task = load_task(task_name, manager)
    fresh = task.build_all_requests(chat=chat, limit=5, offset=1)
    store = RequestCache("true", tmp_path / "requests")
    assert store.build(task, chat, limit=5, offset=1) and store.stored == [task_name] and store.loaded == []
    again = RequestCache("true", tmp_path / "requests")
    loaded = again.build(task, chat, limit=5, offset=1)
    assert again.loaded == [task_name]
    _same_requests(fresh, loaded, task.eval_docs)
    # other settings do not reuse the file
    other = RequestCache("true", tmp_path / "requests")
    other.build(task, chat, limit=4, offset=1)
    other.build(task, not chat, limit=5, offset=1)
    assert other.loaded == []


def test_cache_requests_modes_through_the_evaluator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LM_HARNESS_CACHE_PATH", str(tmp_path / "requests"))
    first = evaluate(Counting(), None, cache_requests="true")
    assert first["request_cache"]["stored"] == ["demo_qa"]
    second = evaluate(Counting(), None, cache_requests="true")
    assert second["request_cache"]["loaded"] == ["demo_qa"] and scores(second) == scores(first)
    refreshed = evaluate(Counting(), None, cache_requests="refresh")
    assert refreshed["request_cache"]["loaded"] == [] and refreshed["request_cache"]["stored"] == ["demo_qa"]
    assert list((tmp_path / "requests").glob("demo_qa-*.json"))
    deleted = evaluate(Counting(), None, cache_requests="delete")
    assert not list((tmp_path / "requests").glob("demo_qa-*.json")) and scores(deleted) == scores(first)
    with pytest.raises(ConfigError, match="expected true, refresh or delete"):
        evaluate(Counting(), None, cache_requests="maybe")


def test_unreadable_request_cache_file_is_rebuilt(tmp_path: Path) -> None:
    task = load_task("demo_qa")
    RequestCache("true", tmp_path).build(task, True, limit=3)
    (file,) = tmp_path.glob("demo_qa-*.json")
    file.write_text("{not json")
    cache = RequestCache("true", tmp_path)
    assert len(cache.build(task, True, limit=3)) == 3 and cache.loaded == [] and cache.stored == ["demo_qa"]


# -- overhead -------------------------------------------------------------------------------------------


def test_commit_per_answer_is_cheap(cache_dir: Path) -> None:
    with ResponseCache(cache_dir) as cache:
        started = time.perf_counter()
        for i in range(500):
            cache.put(CacheEntry(f"k{i}", "generate_until", "t", i, 0, 0, "m", "fp", {"text": "answer"}))
        per_answer = (time.perf_counter() - started) / 500
    assert per_answer < 0.005  # measured about 55 us on a 2-core machine


OPEN_AT_ONCE = """
import sys, time
from lmms_eval.caching import ResponseCache
start = float(sys.argv[2])
while time.time() < start:
    pass
for folder in sys.argv[3:]:
    ResponseCache(folder).close()
"""


def test_processes_opening_a_new_cache_folder_at_once_all_succeed(tmp_path: Path) -> None:
    """The ranks of a distributed run open one --use_cache folder at the same moment: none may see
    a half-created database (someone else's) or give up on a lock while another switches to WAL."""
    folders = [str(tmp_path / f"cache{i}") for i in range(12)]
    start = time.time() + 2.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AT_ONCE, "x", str(start), *folders], stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
