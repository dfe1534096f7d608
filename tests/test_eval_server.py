"""The eval server, started for real (uvicorn on 127.0.0.1 in a subprocess) and driven over HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

TERMINAL = ("completed", "failed", "cancelled")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    root: Path
    port: int
    token: str | None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *extra: str) -> None:
        argv = [sys.executable, "-m", "lmms_eval", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                "--state_dir", str(self.root / "state"), "--output_root", str(self.root / "out"),
                "--cache_dir", str(self.root / "cache"), "--cpu_slots", "1", *extra]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k != "LMMS_EVAL_SERVER_TOKEN"}
        if self.token:
            env["LMMS_EVAL_SERVER_TOKEN"] = self.token
        log = (self.root / "server.log").open("ab")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError((self.root / "server.log").read_text())

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(15)

    def client(self) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=10)


def wait(client: Any, job_id: str, states: tuple[str, ...] = TERMINAL, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = client.get(f"/jobs/{job_id}").json()
        if job["status"] in states:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} still {job.get('status')}")


def submit(client: Any, **body: Any) -> dict[str, Any]:
    body = {"model": "dummy", "tasks": ["demo_qa"], "limit": 4, **body}
    response = client.post("/evaluate", json=body)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("server"), free_port(), token="test-token-123456")
    srv.start()
    yield srv
    srv.stop()


def test_job_completes_with_metrics_and_logs(server: Server) -> None:
    with server.client() as client:
        job = submit(client)
        assert job["status"] == "queued"  # answered at once; the run happens in the background
        done = wait(client, job["job_id"])
        assert done["status"] == "completed", done["error"]
        scores = done["result"]["results"]["demo_qa"]
        assert any(key.startswith("exact_match") for key in scores)
        logs = client.get(f"/jobs/{job['job_id']}/logs", params={"follow": "true"})
        assert "job finished" in logs.text
        events = client.get(f"/jobs/{job['job_id']}/events").text
        assert "completed" in events
        assert client.get("/queue").json()["counts"].get("completed", 0) >= 1


def test_listings(server: Server) -> None:
    with server.client() as client:
        plain = client.get("/tasks").json()  # the published shape: lists of names
        assert "demo_qa" in plain["tasks"] and set(plain) == {"tasks"}
        assert "dummy" in client.get("/models").json()["models"]
        full = client.get("/tasks", params={"detail": "1"}).json()  # ours, which the UI asks for
        assert full["tasks"] == plain["tasks"] and {"groups", "tags"} <= set(full)
        models = client.get("/models", params={"detail": "1"}).json()["models"]
        assert any(m["model_id"] == "dummy" and "aliases" in m for m in models)
        assert client.get("/openapi.json").status_code == 200


def wait_progress(client: Any, job_id: str, at_least: int, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = client.get(f"/jobs/{job_id}").json()["progress"]
        if progress and progress["done"] >= at_least:
            return progress
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} reported no progress of {at_least} requests")


def first_event(client: Any, job_id: str, kind: str) -> str:
    with client.stream("GET", f"/jobs/{job_id}/events") as response:
        lines = response.iter_lines()
        for line in lines:
            if line == f"event: {kind}":
                return next(lines)
    raise AssertionError(f"no {kind} event")


def test_progress_then_cancel_queued_and_running(server: Server) -> None:
    with server.client() as client:
        slow = submit(client, model_args={"latency": 0.3}, limit=40)
        queued = submit(client)
        assert client.get(f"/jobs/{queued['job_id']}").json()["position"] == 0
        progress = wait_progress(client, slow["job_id"], at_least=3)
        assert (progress["task"], progress["task_number"], progress["task_count"]) == ("demo_qa", 1, 1)
        assert progress["total"] == 40 and progress["request_type"] == "generate_until"
        assert progress["eta_s"] is not None and 0 < progress["eta_s"] < 40 * 0.3 * 3
        data = json.loads(first_event(client, slow["job_id"], "progress").removeprefix("data: "))
        assert data["status"] == "running" and data["progress"]["done"] >= 3
        assert client.delete(f"/jobs/{queued['job_id']}").json()["status"] == "cancelled"
        client.delete(f"/jobs/{slow['job_id']}")
        assert wait(client, slow["job_id"])["status"] == "cancelled"
        assert client.delete(f"/jobs/{slow['job_id']}").status_code == 409


def test_auth(server: Server) -> None:
    assert httpx.get(f"{server.url}/health").status_code == 200
    assert httpx.get(f"{server.url}/queue").status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert httpx.get(f"{server.url}/queue", headers=wrong).status_code == 401


def test_bad_requests(server: Server) -> None:
    with server.client() as client:
        response = client.post("/evaluate", json={"model": "dummy", "tasks": "demo_qa", "limt": 3})
        assert response.status_code == 422
        assert "limt" in response.json()["detail"] and "limit" in response.json()["detail"]
        response = client.post("/evaluate", json={"model": "dummy", "tasks": "demo_qa", "limit": -2})
        assert response.status_code == 422 and "limit" in response.json()["detail"]
        response = client.post("/evaluate", json={"model": "dummy", "tasks": "x", "output_path": "../../etc"})
        assert response.status_code == 422 and "outside" in response.json()["detail"]
        response = client.post("/evaluate", json={"model": "dummy", "tasks": "x", "output_path": "/etc"})
        assert response.status_code == 422
        assert client.get("/jobs/nope").status_code == 404
        huge = {"model": "dummy", "tasks": "demo_qa", "system_instruction": "x" * 1_100_000}
        response = client.post("/evaluate", json=huge)
        assert response.status_code == 413 and "1000000 bytes" in response.json()["detail"]


def test_no_token_on_loopback(tmp_path: Path) -> None:
    srv = Server(tmp_path, free_port(), token=None)
    srv.start()
    try:
        with srv.client() as client:
            assert client.get("/queue").status_code == 200
    finally:
        srv.stop()


def test_kill_9_requeues_and_resumes_from_cache(tmp_path: Path) -> None:
    srv = Server(tmp_path, free_port(), token=None)
    srv.start()
    try:
        with srv.client() as client:
            job = submit(client, model_args={"latency": 0.3}, limit=30)
            wait_progress(client, job["job_id"], at_least=3)  # some answers reach the cache
            srv.stop(signal.SIGKILL)  # its worker, still running, is stopped by the next server
            srv.start()
            done = wait(client, job["job_id"], timeout=40)
            assert done["status"] == "completed", done["error"]
            cache = done["result"].get("cache") or {}
            # the answers given before the kill come from the cache; only the rest reach the model
            assert cache["hits"] > 0 and cache["hits"] + cache["misses"] == 30, cache
            assert cache["model_calls"] == cache["misses"] < 30, cache
            log = client.get(f"/jobs/{job['job_id']}/logs").text
            assert log.count("--- job") == 2
    finally:
        srv.stop()


def test_token_made_beyond_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    from lmms_eval.entrypoints.server import resolve_token
    from lmms_eval.entrypoints.server_args import ServerArgs
    from lmms_eval.secrets import redact_text

    os.environ.pop("LMMS_EVAL_SERVER_TOKEN", None)
    assert resolve_token(ServerArgs()) is None
    token = resolve_token(ServerArgs(host="0.0.0.0"))
    assert token and token in capsys.readouterr().err
    assert token not in redact_text(f"key {token}")
    assert resolve_token(ServerArgs(host="0.0.0.0", token="given-token-0123456")) == "given-token-0123456"


def test_store_claims_once_and_prunes_history_only(tmp_path: Path) -> None:
    from lmms_eval.entrypoints.store import JobStore

    store = JobStore(tmp_path / "jobs.db")
    other = JobStore(tmp_path / "jobs.db")  # a second connection, as a second process would have
    for i in range(5):
        assert store.insert(f"j{i}", {}, 0, str(tmp_path / f"j{i}"), max_queued=5)
    assert not store.insert("j5", {}, 0, "x", max_queued=5)
    assert store.claim("j0") and not other.claim("j0")
    assert [r.job_id for r in other.requeue_running()] == ["j0"]
    for i in range(4):
        store.claim(f"j{i}")
        store.finish(f"j{i}", "completed")
    assert store.prune(2) == 2
    assert [r.job_id for r in store.list()] == ["j2", "j3", "j4"]


def test_request_paths_are_confined_to_the_server_roots(tmp_path: Path) -> None:
    from fastapi import HTTPException

    from lmms_eval.entrypoints.paths import confine_request
    from lmms_eval.entrypoints.server_args import ServerArgs

    args = ServerArgs(state_dir=str(tmp_path / "state"), checkpoint_root=str(tmp_path / "ckpt"))
    (tmp_path / "ckpt" / "checkpoints" / "epoch_0").mkdir(parents=True)
    (tmp_path / "state" / "data" / "my_tasks").mkdir(parents=True)
    (tmp_path / "ckpt" / "escape").symlink_to("/etc")
    done = confine_request(
        args,
        "job1",
        {
            "model_args": {"pretrained": "checkpoints/epoch_0", "tokenizer": "Qwen/Qwen2-VL-2B-Instruct"},
            "include_path": "my_tasks",
            "output_path": "runs/a",
        },
    )
    assert done["model_args"]["pretrained"] == str(tmp_path / "ckpt" / "checkpoints" / "epoch_0")
    assert done["model_args"]["tokenizer"] == "Qwen/Qwen2-VL-2B-Instruct"  # a Hub id passes unchanged
    assert done["include_path"] == str(tmp_path / "state" / "data" / "my_tasks")
    assert done["output_path"] == str(tmp_path / "state" / "outputs" / "runs" / "a")
    assert done["use_cache"] == str(tmp_path / "state" / "cache")
    refused = {
        "model_args": {"pretrained": "/etc"},
        "include_path": "my_tasks,../../x",
        "dataset_root": "/tmp",
        "baseline": "../state/jobs.db",
        "use_cache": "/var/tmp",
        "apply_chat_template": "../../secret.jinja",
    }
    for field, value in refused.items():
        with pytest.raises(HTTPException) as caught:
            confine_request(args, "job2", {field: value})
        assert caught.value.status_code == 422 and str(caught.value.detail).startswith(field)
    with pytest.raises(HTTPException, match=r"model_args\.pretrained"):
        confine_request(args, "job3", {"model_args": "pretrained=escape/passwd"})


def test_load_of_200_submissions_from_20_clients_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """The submissions race each other and the scheduler; the jobs still queued are then cancelled
    to bound the test (bench/bench_server.py runs all of them to completion)."""
    from concurrent.futures import ThreadPoolExecutor

    srv = Server(tmp_path, free_port(), token="load-token-0123456789")
    srv.start("--cpu_slots", "2", "--max_queued", "1000")
    try:

        def share(n: int) -> list[str]:
            with srv.client() as client:
                return [submit(client, limit=1)["job_id"] for _ in range(n)]

        with ThreadPoolExecutor(20) as pool:
            ids = [job_id for chunk in pool.map(share, [10] * 20) for job_id in chunk]
        assert len(ids) == len(set(ids)) == 200
        with srv.client() as client:
            queue = client.get("/queue").json()
            assert sum(queue["counts"].values()) == 200
            listed = queue["queued"] + queue["running"]
            assert len(listed) == len(set(listed))
            for job_id in queue["queued"]:
                client.delete(f"/jobs/{job_id}")
            jobs = [wait(client, job_id, timeout=60) for job_id in ids]
            logs = {job_id: client.get(f"/jobs/{job_id}/logs").text for job_id in ids}
        states = {job["status"] for job in jobs}
        assert states <= {"completed", "cancelled"}, [j["error"] for j in jobs if j["status"] == "failed"][:1]
        assert any(job["status"] == "completed" for job in jobs)
        for job in jobs:
            attempts = logs[job["job_id"]].count("--- job")
            assert attempts == (1 if job["status"] == "completed" else attempts) and attempts <= 1
            if job["status"] == "completed":
                assert job["result"]["results"]["demo_qa"]
    finally:
        srv.stop()


def _worker_pid(job_id: str) -> int:
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "lmms_eval.entrypoints.worker" in cmdline and job_id in cmdline:
                return int(proc.name)
    raise AssertionError(f"no worker process for job {job_id}")


def test_a_job_that_fails_or_dies_is_failed_with_the_tail_of_its_log(server: Server) -> None:
    with server.client() as client:
        bad = submit(client, model_args={"no_such_argument": 1})
        failed = wait(client, bad["job_id"])
        assert failed["status"] == "failed" and "no_such_argument" in failed["error"]
        assert failed["error"].startswith("exit status 1")
        slow = submit(client, model_args={"latency": 0.3}, limit=40)
        wait_progress(client, slow["job_id"], at_least=1)
        os.kill(_worker_pid(slow["job_id"]), signal.SIGKILL)
        died = wait(client, slow["job_id"])
        assert died["status"] == "failed" and died["error"].startswith("exit status -9")
        assert f"--- job {slow['job_id']}: attempt 1" in died["error"]  # the log's tail


def test_a_multi_gpu_job_runs_under_the_distributed_launcher(tmp_path: Path) -> None:
    """``--devices`` on a machine without GPUs: the job still gets two device ids and two ranks
    (gloo on CPU), and rank 0 writes one results file for both."""
    pytest.importorskip("torch")
    srv = Server(tmp_path, free_port(), token=None)
    srv.start("--devices", "0,1")
    try:
        with srv.client() as client:
            too_many = client.post("/evaluate", json={"model": "dummy", "tasks": "demo_qa", "num_gpus": 3})
            assert too_many.status_code == 422 and "num_gpus" in too_many.json()["detail"]
            job = submit(client, num_gpus=2, limit=6, model_args={"answer_field": "answer"})
            done = wait(client, job["job_id"], timeout=120)
            assert done["status"] == "completed", done["error"]
            assert done["result"]["distributed"]["world_size"] == 2
            assert done["result"]["n-samples"]["demo_qa"]["effective"] == 6
            log = client.get(f"/jobs/{job['job_id']}/logs").text
            assert log.count("job finished") == 1  # rank 0 alone reports
        assert len(list((tmp_path / "out").rglob("*_results.json"))) == 1
    finally:
        srv.stop()


def test_a_secret_in_a_request_is_gone_from_the_server_state_once_the_job_ends(tmp_path: Path) -> None:
    """Queued jobs keep the API key they need (in a private job store); once a job ends, the
    stored request is redacted, its job file removed and the SQLite WAL emptied."""
    secret = "sk-test-7f3a9c2e5b1d4a6f8e0c"
    srv = Server(tmp_path, free_port(), token=None)
    srv.start()
    try:
        with srv.client() as client:
            job = submit(client, model_args={"api_key": secret, "accuracy": 1.0})
            assert secret not in json.dumps(job)
            assert wait(client, job["job_id"])["status"] == "failed"  # dummy takes no api_key
            queued = submit(client, model_args={"api_key": secret}, limit=1)
            client.delete(f"/jobs/{queued['job_id']}")
            wait(client, queued["job_id"])
    finally:
        srv.stop()
    state = tmp_path / "state"
    assert oct((state / "jobs.db").stat().st_mode & 0o777) == oct(0o600)
    leaks = [p for p in state.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leaks == []
