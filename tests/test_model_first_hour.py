"""The local backends in the first hour of use: missing packages, checkpoints that cannot be had,
per-request progress / budget / stop through the run's gate, and torch's thread count.

Everything runs offline: the Hub is a closed port or a tiny HTTP server in this process, the
checkpoints are built at test time with ``build_tiny_vlm``, and the engines of ``vllm`` / ``sglang``
are stand-in modules.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import types
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, RequestType
from lmms_eval.errors import ConfigError, MissingDependencyError
from lmms_eval.models.hf import hub, runtime
from lmms_eval.models.hf.hub import CheckpointError, resolve_checkpoint, snapshot_complete
from lmms_eval.models.simple.dummy import DummySimple
from lmms_eval.models.simple.from_log import FromLog

REPO = Path(__file__).resolve().parents[1]
TASK, SPLIT = "t", "test"


def run_python(code: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


def clean_env(**extra: str) -> dict[str, str]:
    """The test environment without thread settings, with ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.pop(runtime.THREADS_ENV, None)
    env.pop("LOCAL_WORLD_SIZE", None)
    env.update(extra)
    return env


def problems(stderr: str) -> list[str]:
    """The lines of ``stderr`` that are not routine log lines (``HH:MM:SS I logger: ...``)."""
    routine = re.compile(r"^\d\d:\d\d:\d\d [DI] ")
    return [line for line in stderr.splitlines() if line.strip() and not routine.match(line)]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- 1. the lean install -------------------------------------------------------------------------------

HIDE_AND_RUN = """
import contextlib, importlib.abc, io, json, sys
HIDDEN = {"torch", "transformers", "accelerate", "torchvision", "vllm", "sglang"}

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
from lmms_eval.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except BaseException as exc:  # anything but a clean exit code is a failure of the test
            rc = f"raised {type(exc).__name__}: {exc}"
    out.append([rc, err.getvalue()])
out.append(sorted(m for m in HIDDEN if m in sys.modules))
print(json.dumps(out))
"""


def test_lean_install_names_the_missing_package_in_one_line() -> None:
    runs = [
        ["--model", "huggingface", "--model_args", "pretrained=demo", "--tasks", "demo_shapes"],
        ["--model", "qwen2_5_vl", "--tasks", "demo_shapes"],
        ["--model", "qwen2_vl", "--force_simple", "--tasks", "demo_shapes"],
        ["--model", "llava_hf", "--model_args", "pretrained=demo", "--tasks", "demo_shapes"],
        ["--model", "smolvlm", "--tasks", "demo_shapes"],
        ["--model", "vllm", "--model_args", "pretrained=Org/Model", "--tasks", "demo_shapes"],
        ["--model", "sglang", "--model_args", "pretrained=Org/Model", "--tasks", "demo_shapes"],
    ]
    code = HIDE_AND_RUN.replace("json.loads(sys.argv[1])", repr(runs))
    done = run_python(code, clean_env())
    assert done.returncode == 0, done.stderr
    *results, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert imported == []
    expected = [
        ("huggingface", "torch", "pip install 'lmms_eval[hf]'"),
        ("qwen2_5_vl", "torch", "pip install 'lmms_eval[hf]'"),
        ("qwen2_vl", "torch", "pip install 'lmms_eval[hf]'"),
        ("llava_hf", "torch", "pip install 'lmms_eval[hf]'"),
        ("smolvlm", "torch", "pip install 'lmms_eval[hf]'"),
        ("vllm", "vllm", "pip install vllm"),
        ("sglang", "sglang", 'pip install "sglang[all]"'),
    ]
    for (rc, stderr), (model, package, install) in zip(results, expected):
        assert rc == 1
        assert problems(stderr) == [
            f"lmms-eval: error: model '{model}' needs the '{package}' package, which is not installed. "
            f"Install it with: {install}"
        ]


def test_a_broken_optional_package_is_not_called_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "half_installed_pkg.py").write_text("import lmms_missing_inner_dep\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependencyError) as info:
        runtime.import_dependency("half_installed_pkg", runtime.HF_INSTALL, "model 'x'")
    assert "cannot be imported (No module named 'lmms_missing_inner_dep')" in str(info.value)


# -- 2. checkpoints that cannot be had -----------------------------------------------------------------


def test_unreachable_hub_fails_in_seconds_with_one_line(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    env = clean_env(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0")
    env.pop("HF_HUB_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-m", "lmms_eval", "--model", "huggingface", "--model_args",
         "pretrained=Org/Not-Downloaded", "--tasks", "demo_shapes", "--output_path", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = problems(done.stderr)
    assert len(lines) == 1, done.stderr
    cache = str(tmp_path / "hf" / "hub")
    assert lines[0].startswith(
        "lmms-eval: error: model 'huggingface': checkpoint 'Org/Not-Downloaded' is not"
    )
    assert f"not in the local Hugging Face cache ({cache})" in lines[0]
    assert f"the Hub ({endpoint}) cannot be reached" in lines[0]
    assert "hf download Org/Not-Downloaded" in lines[0] and "pretrained=<local folder>" in lines[0]


@pytest.fixture
def hub_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, the Hub online as far as the environment says."""
    import huggingface_hub.constants

    cache = tmp_path / "hf_cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    return cache


class FakeHub(BaseHTTPRequestHandler):
    """Answers file requests the way the Hub does, chosen by the repository's owner name."""

    answers: ClassVar[dict[str, tuple[int, dict[str, str]]]] = {
        "Missing": (401, {"X-Error-Code": "RepoNotFound"}),
        "Gated": (403, {"X-Error-Code": "GatedRepo", "X-Error-Message": "gated"}),
        "NoConfig": (404, {"X-Error-Code": "EntryNotFound"}),
        "Down": (503, {}),
        "Good": (200, {"X-Repo-Commit": "a" * 40, "ETag": '"0123"', "Content-Length": "2"}),
    }

    def do_HEAD(self) -> None:
        status, headers = self.answers[self.path.strip("/").split("/")[0]]
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, hub_env: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    yield endpoint
    server.shutdown()
    server.server_close()


def test_hub_answers_become_one_line_errors(fake_hub: str, hub_env: Path) -> None:
    expected = {
        "Missing/Model": "was not found on the Hub",
        "Gated/Model": f"is gated on the Hub; accept its terms at {fake_hub}/Gated/Model and log in",
        "NoConfig/Model": "has no config.json on the Hub",
        "Down/Model": f"is not in the local Hugging Face cache ({hub_env}), and the Hub ({fake_hub}) answered HTTP 503",
    }
    for repo_id, text in expected.items():
        with pytest.raises(CheckpointError) as info:
            resolve_checkpoint(repo_id, "huggingface")
        message = str(info.value)
        assert "\n" not in message and text in message and f"'{repo_id}'" in message
    assert resolve_checkpoint("Good/Model", "huggingface") == hub.Checkpoint(
        "Good/Model", "Good/Model", "hub"
    )


def test_offline_without_cache_and_bad_paths_fail_without_network(
    hub_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "probe_hub", lambda *a, **k: pytest.fail("the Hub was asked"))
    with pytest.raises(
        CheckpointError, match=r"not in the local Hugging Face cache .* and HF_HUB_OFFLINE is set"
    ):
        resolve_checkpoint("Org/Model", "qwen2_vl")
    for path in ("./missing", "/no/such/folder", "a/b/c", "~/nothing-here"):
        with pytest.raises(CheckpointError, match="neither an existing folder nor a Hub id"):
            resolve_checkpoint(path, "huggingface")


def write_cached(cache: Path, repo_id: str, files: dict[str, str]) -> Path:
    """A cache entry of ``repo_id`` (``main`` -> one snapshot) holding ``files``."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / ("b" * 40)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("b" * 40, encoding="utf-8")
    for name, text in files.items():
        (snapshot / name).write_text(text, encoding="utf-8")
    return snapshot


def test_cached_checkpoints_load_from_the_snapshot_and_partial_ones_do_not(
    hub_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    full = write_cached(hub_env, "Org/Full", {"config.json": "{}", "model.safetensors": "x"})
    assert resolve_checkpoint("Org/Full", "huggingface") == hub.Checkpoint("Org/Full", str(full), "cache")
    write_cached(hub_env, "Org/ConfigOnly", {"config.json": "{}"})
    with pytest.raises(CheckpointError, match="cannot be reached"):
        resolve_checkpoint("Org/ConfigOnly", "huggingface")
    index = json.dumps({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}})
    sharded = write_cached(
        hub_env,
        "Org/Sharded",
        {"config.json": "{}", "model.safetensors.index.json": index, "model-1.safetensors": ""},
    )
    assert not snapshot_complete(sharded)
    (sharded / "model-2.safetensors").write_text("", encoding="utf-8")
    assert snapshot_complete(sharded)


def test_a_cached_hub_id_loads_without_the_network(hub_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from lmms_eval.models import get_model
    from lmms_eval.models.hf.tiny import build_tiny_vlm

    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    snapshot = write_cached(hub_env, "Org/Tiny", {})
    build_tiny_vlm("llava", str(snapshot))
    model = get_model("llava_hf").create_from_arg_string("pretrained=Org/Tiny")
    assert model.pretrained == "Org/Tiny"
    assert model.checkpoint == hub.Checkpoint("Org/Tiny", str(snapshot), "cache")
    assert type(model.model).__name__ == "LlavaForConditionalGeneration"


# -- 3. progress, budget and stop through the gate ---------------------------------------------------


def doc_to_messages(doc: dict[str, Any], **_: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": doc["q"]}]}]


def chat_request(
    doc_id: int, gen_kwargs: dict[str, Any] | None = None, kind: RequestType = "generate_until"
) -> Instance:
    args = (doc_to_messages, gen_kwargs or {"max_new_tokens": 3}, doc_id, TASK, SPLIT)
    return Instance(kind, args, 0, {"task": TASK, "doc_id": doc_id, "split": SPLIT})


def ll_request(doc_id: int, continuation: str) -> Instance:
    args = (doc_to_messages, continuation, None, doc_id, TASK, SPLIT)
    return Instance("loglikelihood", args, 0, {"task": TASK, "doc_id": doc_id, "split": SPLIT})


def texts(outputs: list[Any]) -> list[Any]:
    """What must not change between runs (latencies do)."""
    return [(o.text, o.token_counts) if isinstance(o, GenerationResult) else o for o in outputs]


def with_docs(model: Any, count: int) -> None:
    model.task_dict = {TASK: {SPLIT: [{"q": f"question number {i}", "answer": "B"} for i in range(count)]}}


def watched_gate(max_tokens: int | None = None) -> tuple[RequestGate, list[int]]:
    """A gate whose progress calls are recorded."""
    progress: list[int] = []
    gate = RequestGate(max_tokens=max_tokens, breaker_after=None, on_progress=progress.append)
    return gate, progress


def stopping(gate: RequestGate, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` that stops the run (as Ctrl-C does) after its first call."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            gate.stop("interrupted")

    return wrapped


def split_answers(outputs: list[Any]) -> tuple[list[int], list[int]]:
    """Indices answered, and indices refused as not sent."""
    refused = [i for i, o in enumerate(outputs) if isinstance(o, RequestFailure)]
    assert all(outputs[i].kind == "not_sent" for i in refused)
    return [i for i in range(len(outputs)) if i not in refused], refused


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory: pytest.TempPathFactory) -> Any:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from lmms_eval.models import get_model
    from lmms_eval.models.hf.tiny import build_tiny_vlm

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    folder = build_tiny_vlm("qwen2_vl", str(tmp_path_factory.mktemp("tiny") / "qwen2_vl"))
    yield get_model("huggingface").create_from_arg_string(f"pretrained={folder}")
    torch.set_num_threads(threads)


def test_hf_generation_stops_sending_once_the_budget_is_spent(tiny_hf: Any) -> None:
    model = tiny_hf
    with_docs(model, 5)
    requests = [chat_request(i) for i in range(5)]
    model.batch_size_per_gpu = 1
    model.gate, progress = watched_gate()
    single = model.generate_until(requests)
    assert progress == [1] * 5 and all(isinstance(o, GenerationResult) for o in single)
    model.batch_size_per_gpu = 2
    model.gate, progress = watched_gate()
    assert texts(model.generate_until(requests)) == texts(single)  # batched == one by one, in order
    assert progress == [1] * 5
    model.gate, progress = watched_gate(max_tokens=1)  # spent by the first batch
    outputs = model.generate_until(requests)
    answered, refused = split_answers(outputs)
    assert len(answered) == 2 and len(refused) == 3 and progress == [1, 1]
    assert all(texts([outputs[i]]) == texts([single[i]]) for i in answered)
    assert "token budget of 1" in outputs[refused[0]].error
    assert model.gate.state().budget_exhausted


def test_hf_loglikelihood_and_multi_round_stop_with_the_run(
    tiny_hf: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tiny_hf
    with_docs(model, 4)
    model.batch_size_per_gpu = 2
    requests = [ll_request(i, " red") for i in range(4)]
    model.gate, _ = watched_gate()
    full = model.loglikelihood(requests)
    model.gate, progress = watched_gate()
    monkeypatch.setattr(model, "_loglikelihood_batch", stopping(model.gate, model._loglikelihood_batch))
    answered, refused = split_answers(model.loglikelihood(requests))  # Ctrl-C after the first batch
    assert len(answered) == 2 and len(refused) == 2 and progress == [1, 1]
    assert "interrupted" in model.loglikelihood(requests)[0].error  # a stopped gate admits nothing
    monkeypatch.undo()
    rounds = [
        chat_request(i, {"max_new_tokens": 2, "max_rounds": 2}, "generate_until_multi_round")
        for i in range(3)
    ]
    model.gate, progress = watched_gate(max_tokens=1)
    outputs = model.generate_until_multi_round(rounds)
    answered, refused = split_answers(outputs)
    assert answered == [0, 1] and refused == [2] and progress == [1, 1]
    assert [isinstance(full[i], tuple) for i in range(4)] == [True] * 4


def test_dummy_and_from_log_answer_one_request_at_a_time(tmp_path: Path) -> None:
    for model in (DummySimple(), get_chat_dummy()):
        with_docs(model, 4)
        model.gate, progress = watched_gate(max_tokens=3)  # the first answer has 3 prompt words + 1
        answered, refused = split_answers(list(model.generate_until([chat_request(i) for i in range(4)])))
        assert answered == [0] and refused == [1, 2, 3] and progress == [1]
        model.gate, progress = watched_gate()
        model._loglikelihood_one = stopping(model.gate, model._loglikelihood_one)
        answered, refused = split_answers(model.loglikelihood([ll_request(i, " red") for i in range(3)]))
        assert answered == [0] and refused == [1, 2] and progress == [1]
    slow = DummySimple(latency=30.0)
    with_docs(slow, 2)
    slow.gate, _ = watched_gate()
    threading.Timer(0.2, slow.gate.stop).start()
    answered, refused = split_answers(list(slow.generate_until([chat_request(0), chat_request(1)])))
    assert refused == [0, 1]  # the 30 s sleep of request 0 is cut short by the stop, not sat out
    logs = tmp_path / "x_samples_t.jsonl"
    logs.write_text(
        "".join(json.dumps({"doc_id": i, "resps": [[f"r{i}"]]}) + "\n" for i in range(3)), "utf-8"
    )
    replay = FromLog(logs=str(logs))
    replay.gate, progress = watched_gate()
    replay._text = stopping(replay.gate, replay._text)
    outputs = replay.generate_until([chat_request(i) for i in range(3)])
    assert outputs[0] == "r0" and split_answers(outputs)[1] == [1, 2] and progress == [1]


def get_chat_dummy() -> Any:
    from lmms_eval.models.chat.dummy import DummyChat

    return DummyChat()


class FakeLLM:
    def __init__(self, **kwargs: Any) -> None:
        self.calls = 0

    def chat(self, messages: list[Any], sampling_params: list[Any], **kwargs: Any) -> list[Any]:
        self.calls += 1
        return [
            types.SimpleNamespace(
                prompt_token_ids=[1, 2], outputs=[types.SimpleNamespace(text="x", token_ids=[3])]
            )
            for _ in messages
        ]


class FakeEngine:
    def __init__(self, **kwargs: Any) -> None:
        self.calls = 0

    def generate(self, prompt: list[str], sampling_params: list[Any], image_data: Any = None) -> list[Any]:
        self.calls += 1
        return [{"text": "x", "meta_info": {"prompt_tokens": 2, "completion_tokens": 1}} for _ in prompt]


class Template:
    chat_template = "t"

    def apply_chat_template(self, messages: list[Any], **kwargs: Any) -> str:
        return "prompt"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_engine_backends_stop_sending_once_the_budget_is_spent(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = types.ModuleType(engine)
    module.LLM, module.SamplingParams, module.Engine = FakeLLM, dict, FakeEngine  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, engine, module)
    if engine == "vllm":
        from lmms_eval.models.chat.vllm import VLLM as cls
    else:
        from lmms_eval.models.chat.sglang import SGLang as cls

        monkeypatch.setattr(cls, "_load_template_source", lambda self: Template())
    model: Any = cls(pretrained="Org/Model", batch_size=2)
    with_docs(model, 5)
    model.gate, progress = watched_gate(max_tokens=5)  # each answer counts 3 tokens
    outputs = model.generate_until([chat_request(i) for i in range(5)])
    answered, refused = split_answers(outputs)
    assert answered == [0, 1] and refused == [2, 3, 4] and progress == [1, 1]
    backend = model.llm if engine == "vllm" else model.engine
    assert backend.calls == 1


def test_inference_stage_counts_each_request_once() -> None:
    from lmms_eval.inference import run_requests

    model = DummySimple()
    with_docs(model, 6)
    requests = [chat_request(i) for i in range(6)]
    gate = RequestGate(max_tokens=7)
    run_requests(model, requests, chunk_size=4, show_progress=False, gate=gate)
    assert [bool(r.failures) for r in requests] == [False, False, True, True, True, True]
    assert all("token budget" in r.failures[0] for r in requests[2:])
    assert gate.state().used_tokens == 8  # 2 answers of 3 prompt words + 1, each counted once


# -- 4. torch threads ----------------------------------------------------------------------------------


class FakeTorch:
    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.calls: list[int] = []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.calls.append(n)
        self.threads = n


@pytest.mark.parametrize(
    ("env", "cores", "current", "imported_before", "expected"),
    [
        ({}, 8, 8, False, 8),
        ({"LOCAL_WORLD_SIZE": "2"}, 8, 8, False, 4),
        ({"LOCAL_WORLD_SIZE": "16"}, 8, 8, False, 1),
        ({}, 8, 4, False, 4),  # torch's default (physical cores) is the ceiling
        ({"OMP_NUM_THREADS": "3"}, 8, 3, False, 3),
        ({"MKL_NUM_THREADS": "2", "LOCAL_WORLD_SIZE": "2"}, 8, 8, False, 8),
        ({}, 8, 3, True, 3),  # torch.set_num_threads(3) called by the user before
        ({"LOCAL_WORLD_SIZE": "2"}, 8, 8, True, 4),
        ({"LMMS_EVAL_NUM_THREADS": "6", "OMP_NUM_THREADS": "1"}, 8, 1, True, 6),
    ],
)
def test_thread_rule(
    env: dict[str, str],
    cores: int,
    current: int,
    imported_before: bool,
    expected: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("LOCAL_WORLD_SIZE", "OMP_NUM_THREADS", "MKL_NUM_THREADS", runtime.THREADS_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    torch = FakeTorch(current)
    runtime.configure_torch_threads(torch, imported_before)
    assert torch.threads == expected
    assert torch.calls == ([] if expected == current else [expected])


def test_thread_rule_without_affinity_and_with_a_bad_override(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_affinity(pid: int) -> set[int]:
        raise OSError("not here")

    monkeypatch.setattr(runtime.os, "sched_getaffinity", no_affinity, raising=False)
    monkeypatch.setattr(runtime.os, "cpu_count", lambda: 6)
    assert runtime.usable_cores() == 6
    monkeypatch.setenv(runtime.THREADS_ENV, "many")
    with pytest.raises(ConfigError, match="LMMS_EVAL_NUM_THREADS='many' is not a positive integer"):
        runtime.configure_torch_threads(FakeTorch(6), False)


def test_small_models_run_on_one_thread_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    for name in ("LOCAL_WORLD_SIZE", "OMP_NUM_THREADS", "MKL_NUM_THREADS", runtime.THREADS_ENV):
        monkeypatch.delenv(name, raising=False)
    torch = FakeTorch(8)
    runtime.configure_torch_threads(torch, False)
    runtime.fit_threads_to_model(torch, runtime.SMALL_MODEL_PARAMETERS)
    assert torch.threads == 8  # a large model keeps the rule's count
    runtime.fit_threads_to_model(torch, 700_000)
    assert torch.threads == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    torch = FakeTorch(4)
    runtime.configure_torch_threads(torch, False)
    runtime.fit_threads_to_model(torch, 700_000)
    assert torch.threads == 4  # the user's choice stands


def test_demo_model_loads_with_the_thread_rule() -> None:
    pytest.importorskip("torch")
    code = textwrap.dedent(
        """
        import os, sys
        from lmms_eval.models import get_model
        get_model("huggingface").create_from_arg_string("pretrained=demo")
        import torch
        print(torch.get_num_threads(), len(os.sched_getaffinity(0)))
        """
    )
    done = run_python(code, clean_env(LOCAL_WORLD_SIZE="2"))
    assert done.returncode == 0, done.stderr
    threads, _ = map(int, done.stdout.split()[-2:])
    assert threads == 1  # the 0.7 M-parameter demo model is small
    done = run_python(code, clean_env(OMP_NUM_THREADS="2"))
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-2]) == 2
