"""EvalClient and AsyncEvalClient against a small FastAPI app that follows the server's contract.

The fake server runs with uvicorn on 127.0.0.1 (a free port, in a thread). Each ``GET /jobs/{id}``
moves a job one step (queued -> running -> completed), so polling is deterministic; model ``slow``
never finishes and model ``boom`` fails.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from lmms_eval.entrypoints.client import TOKEN_ENV, AsyncEvalClient, EvalClient, EvalServerError
from lmms_eval.errors import LmmsEvalError

TOKEN = "s3cret-token-for-tests-0123456789"
LOG_LINES = ["starting job", "50% done", "finished"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = Field(min_length=1)
    tasks: list[str] | str
    model_args: dict[str, Any] | str | None = None
    num_fewshot: int | None = None
    batch_size: int | str | None = None
    device: str | None = None
    limit: int | None = Field(default=None, ge=0)
    log_samples: bool = False
    num_gpus: int = 0


class _Merge(BaseModel):
    checkpoint_path: str
    output_path: str


@dataclass
class _State:
    token: str | None = None
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    auth_headers: list[str] = field(default_factory=list)


def _fake_app(state: _State) -> FastAPI:
    app = FastAPI()

    def auth(request: Request) -> None:
        header = request.headers.get("authorization", "")
        state.auth_headers.append(header)
        if state.token and header != f"Bearer {state.token}":
            raise HTTPException(401, "missing or invalid bearer token")

    _job_routes(app, state, auth)
    _catalog_routes(app, state, auth)
    return app


def _job_routes(app: FastAPI, state: _State, auth: Any) -> None:
    def job_or_404(job_id: str) -> dict[str, Any]:
        if job_id not in state.jobs:
            raise HTTPException(404, f"no job {job_id}")
        return state.jobs[job_id]

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "jobs": len(state.jobs)}

    @app.post("/evaluate", dependencies=[Depends(auth)])
    def evaluate(req: _Request) -> dict[str, Any]:
        if req.model == "echo-token":
            raise HTTPException(422, f"bad model arg: {state.token}")
        job_id = uuid.uuid4().hex
        state.jobs[job_id] = {
            "job_id": job_id,
            "status": "queued",
            "created_at": time.time(),
            "started_at": None,
            "finished_at": None,
            "request": req.model_dump(),
            "result": None,
            "error": None,
            "progress": {"done": 0, "total": 4, "eta_s": None},
        }
        return state.jobs[job_id]

    @app.get("/jobs/{job_id}", dependencies=[Depends(auth)])
    def get_job(job_id: str) -> dict[str, Any]:
        job = job_or_404(job_id)
        model = job["request"]["model"]
        if job["status"] == "queued":
            job.update(status="running", started_at=time.time())
        elif job["status"] == "running" and model == "boom":
            job.update(status="failed", error="model crashed", finished_at=time.time())
        elif job["status"] == "running" and model != "slow":
            job.update(status="completed", finished_at=time.time(), result={"results": {"demo_qa": {}}})
            job["progress"] = {"done": 4, "total": 4, "eta_s": 0.0}
        return job

    @app.delete("/jobs/{job_id}", dependencies=[Depends(auth)])
    def cancel(job_id: str) -> dict[str, Any]:
        job = job_or_404(job_id)
        job.update(status="cancelled", finished_at=time.time())
        return job

    @app.get("/jobs/{job_id}/logs", dependencies=[Depends(auth)])
    def logs(job_id: str, follow: bool = False) -> Any:
        job_or_404(job_id)
        if not follow:
            return PlainTextResponse("\n".join(LOG_LINES) + "\n")

        async def stream() -> Any:
            for line in LOG_LINES:
                yield line + "\n"
                await asyncio.sleep(0.01)

        return StreamingResponse(stream(), media_type="text/plain")


def _catalog_routes(app: FastAPI, state: _State, auth: Any) -> None:
    @app.get("/queue", dependencies=[Depends(auth)])
    def queue() -> dict[str, Any]:
        queued = [j["job_id"] for j in state.jobs.values() if j["status"] == "queued"]
        running = [j["job_id"] for j in state.jobs.values() if j["status"] == "running"]
        return {"queued": queued, "running": running}

    @app.get("/tasks", dependencies=[Depends(auth)])
    def tasks(detail: bool = False) -> dict[str, Any]:
        names = {"tasks": ["demo_qa", "demo_shapes"]}
        return {**names, "groups": ["demo"], "tags": []} if detail else names

    @app.get("/models", dependencies=[Depends(auth)])
    def models(detail: bool = False) -> dict[str, Any]:
        ids = ["dummy", "huggingface"]
        return {"models": [{"model_id": m, "aliases": []} for m in ids] if detail else ids}

    @app.post("/merge", dependencies=[Depends(auth)])
    def merge(req: _Merge) -> dict[str, Any]:
        return {"checkpoint_path": req.checkpoint_path, "output_path": req.output_path, "status": "merged"}


@dataclass
class _Server:
    url: str
    state: _State


def _serve(app: FastAPI) -> Iterator[str]:
    """Run ``app`` with uvicorn on a free 127.0.0.1 port in a thread; yield its URL (bounded)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the test server did not start within 10 s"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def fake() -> Iterator[_Server]:
    state = _State()
    for url in _serve(_fake_app(state)):
        yield _Server(url, state)


@pytest.fixture
def authed() -> Iterator[_Server]:
    state = _State(token=TOKEN)
    for url in _serve(_fake_app(state)):
        yield _Server(url, state)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- sync client -------------------------------------------------------------------------------


def test_sync_client_submits_polls_and_lists(fake: _Server) -> None:
    with EvalClient(fake.url) as client:
        assert client.health()["status"] == "ok"
        job = client.evaluate(
            model="dummy", tasks=["demo_qa"], model_args={"accuracy": 0.5}, limit=4, batch_size=1
        )
        assert job["status"] == "queued"
        assert job["request"]["model_args"] == {"accuracy": 0.5}
        assert job["request"]["limit"] == 4
        assert client.get_queue()["queued"] == [job["job_id"]]
        done = client.wait_for_job(job["job_id"], poll_interval=0.01, timeout=10)
        assert done["status"] == "completed"
        assert done["result"] == {"results": {"demo_qa": {}}}
        assert done["progress"]["done"] == 4
        assert client.list_tasks()["groups"] == ["demo"]  # the full listing by default
        assert client.list_tasks(detail=False) == {"tasks": ["demo_qa", "demo_shapes"]}
        assert client.list_models()["models"][0] == {"model_id": "dummy", "aliases": []}
        assert client.list_models(detail=False)["models"] == ["dummy", "huggingface"]


def test_sync_wait_returns_failed_and_cancelled_jobs(fake: _Server) -> None:
    with EvalClient(fake.url) as client:
        failed = client.evaluate("boom", "demo_qa")
        assert (
            client.wait_for_job(failed["job_id"], poll_interval=0.01, timeout=10)["error"] == "model crashed"
        )
        slow = client.evaluate("slow", "demo_qa")
        assert client.cancel_job(slow["job_id"])["status"] == "cancelled"
        assert client.wait_for_job(slow["job_id"], poll_interval=0.01, timeout=10)["status"] == "cancelled"


def test_sync_wait_for_job_times_out_naming_job_and_status(fake: _Server) -> None:
    with EvalClient(fake.url) as client:
        job = client.evaluate("slow", ["demo_qa"])
        with pytest.raises(TimeoutError) as info:
            client.wait_for_job(job["job_id"], poll_interval=0.05, timeout=0.3)
        message = str(info.value)
        assert job["job_id"] in message and "running" in message and "\n" not in message


def test_sync_logs_and_follow_logs(fake: _Server) -> None:
    with EvalClient(fake.url) as client:
        job = client.evaluate("dummy", "demo_qa")
        assert client.logs(job["job_id"]).splitlines() == LOG_LINES
        assert list(client.follow_logs(job["job_id"])) == LOG_LINES
        with pytest.raises(EvalServerError, match="HTTP 404"):
            list(client.follow_logs("nope"))


def test_sync_merge_sends_both_paths(fake: _Server) -> None:
    with EvalClient(fake.url) as client:
        merged = client.merge("ckpt/epoch_5", "merged/epoch_5")
        assert merged == {
            "checkpoint_path": "ckpt/epoch_5",
            "output_path": "merged/epoch_5",
            "status": "merged",
        }


def test_errors_are_one_line_with_status_and_detail(fake: _Server) -> None:
    with EvalClient(fake.url) as client:
        with pytest.raises(EvalServerError) as info:
            client.get_job("does-not-exist")
        assert info.value.status_code == 404
        assert (
            str(info.value) == "eval server GET /jobs/does-not-exist failed: HTTP 404: no job does-not-exist"
        )
        with pytest.raises(EvalServerError) as info:
            client.evaluate("dummy", "demo_qa", limit=-1, bogus=1)
        message = str(info.value)
        assert isinstance(info.value, LmmsEvalError)
        assert "HTTP 422" in message and "limit" in message and "bogus" in message and "\n" not in message


# --- auth ---------------------------------------------------------------------------------------


def test_token_is_sent_and_never_leaked(
    authed: _Server, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    caplog.set_level(logging.DEBUG)
    with EvalClient(authed.url) as anonymous:
        assert anonymous.health()["status"] == "ok"  # /health needs no token
        with pytest.raises(EvalServerError) as info:
            anonymous.list_tasks()
        assert info.value.status_code == 401 and TOKEN_ENV in str(info.value)
    with EvalClient(authed.url, token=TOKEN) as client:
        assert TOKEN not in repr(client) and "token=set" in repr(client)
        job = client.evaluate("dummy", "demo_qa")
        assert client.wait_for_job(job["job_id"], poll_interval=0.01, timeout=10)["status"] == "completed"
        with pytest.raises(EvalServerError) as info:
            client.evaluate("echo-token", "demo_qa")  # the server echoes the token in its detail
        assert TOKEN not in str(info.value) and "[REDACTED]" in str(info.value)
    assert f"Bearer {TOKEN}" in authed.state.auth_headers
    assert TOKEN not in caplog.text


def test_token_from_environment(authed: _Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with EvalClient(authed.url) as client:
        assert "dummy" in client.list_models(detail=False)["models"]
    monkeypatch.setenv(TOKEN_ENV, "wrong-token-value")
    with EvalClient(authed.url) as client, pytest.raises(EvalServerError, match="HTTP 401"):
        client.list_models()


# --- connection refused ----------------------------------------------------------------------------


def test_connection_refused_names_url_and_how_to_start(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with EvalClient(url, token=TOKEN, timeout=2) as client:
        with pytest.raises(EvalServerError) as info:
            client.health()  # a GET: retried with a short backoff, then one line
        with pytest.raises(EvalServerError) as submit:
            client.evaluate("dummy", "demo_qa")  # a POST: never retried
    for message in (str(info.value), str(submit.value)):
        assert url in message and "is the server running? start it with: lmms-eval serve" in message
        assert "\n" not in message and TOKEN not in message
    assert TOKEN not in caplog.text


# --- async client ------------------------------------------------------------------------------------


def test_async_client_full_cycle(authed: _Server) -> None:
    async def main() -> None:
        async with AsyncEvalClient(authed.url, token=TOKEN) as client:
            assert (await client.health())["status"] == "ok"
            job = await client.evaluate(model="dummy", tasks=["demo_qa"], model_args={"accuracy": 1.0})
            done = await client.wait_for_job(job["job_id"], poll_interval=0.01, timeout=10)
            assert done["status"] == "completed" and done["result"] is not None
            assert "demo" in (await client.list_tasks())["groups"]
            assert (await client.list_models())["models"][0]["model_id"] == "dummy"
            assert (await client.list_models(detail=False))["models"] == ["dummy", "huggingface"]
            assert (await client.logs(job["job_id"])).splitlines() == LOG_LINES
            assert [line async for line in client.follow_logs(job["job_id"])] == LOG_LINES
            slow = await client.evaluate("slow", "demo_qa")
            assert (await client.get_queue())["queued"] == [slow["job_id"]]
            with pytest.raises(TimeoutError, match=slow["job_id"]):
                await client.wait_for_job(slow["job_id"], poll_interval=0.05, timeout=0.2)
            assert (await client.cancel_job(slow["job_id"]))["status"] == "cancelled"
            assert (await client.merge("a", "b"))["status"] == "merged"
            with pytest.raises(EvalServerError, match="HTTP 404"):
                await client.get_job("nope")
            with pytest.raises(EvalServerError, match="HTTP 422"):
                await client.evaluate("", "demo_qa")
        async with AsyncEvalClient(authed.url, token="not-the-token") as wrong:
            with pytest.raises(EvalServerError, match="HTTP 401"):
                await wrong.get_queue()

    asyncio.run(asyncio.wait_for(main(), timeout=30))


def test_async_connection_refused() -> None:
    url = f"http://127.0.0.1:{_free_port()}"

    async def main() -> str:
        async with AsyncEvalClient(url, timeout=2) as client:
            try:
                await client.get_queue()
            except EvalServerError as exc:
                return str(exc)
        return ""

    message = asyncio.run(asyncio.wait_for(main(), timeout=15))
    assert url in message and "lmms-eval serve" in message


# --- the real server ---------------------------------------------------------------------------------


def _real_server(tmp_path: Any, token: str | None) -> Iterator[str]:
    server_mod = pytest.importorskip("lmms_eval.entrypoints.server")
    from lmms_eval.entrypoints.server_args import ServerArgs

    args = ServerArgs(port=0, state_dir=str(tmp_path / "state"), token=token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(server_mod.create_app(args), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the eval server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture
def real(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("LMMS_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(TOKEN_ENV, TOKEN)  # both the server and the clients read it
    yield from _real_server(tmp_path, None)


def test_seed_examples_run_against_the_real_server(real: str, capsys: pytest.CaptureFixture[str]) -> None:
    from lmms_eval.entrypoints import AsyncEvalClient, EvalClient

    # seed 000, "Synchronous" (model/task names changed, limit 4)
    client = EvalClient(real)

    # Submit evaluation (non-blocking, returns immediately)
    job = client.evaluate(
        model="dummy",
        tasks=["demo_qa"],
        model_args={"accuracy": 1.0},
        batch_size=1,
        device="cuda:0",
        limit=4,
    )
    print(f"Job submitted: {job['job_id']}")

    # Poll for completion
    result = client.wait_for_job(job["job_id"], poll_interval=5.0, timeout=3600.0)
    print(result["result"])

    assert result["status"] == "completed", result.get("error")
    assert "demo_qa" in result["result"]["results"]
    assert f"Job submitted: {job['job_id']}" in capsys.readouterr().out
    client.close()

    # seed 000, "Asynchronous"
    async def example() -> dict[str, Any]:
        async with AsyncEvalClient(real) as client:
            job = await client.evaluate(
                model="dummy",
                tasks=["demo_qa"],
                model_args={"accuracy": 1.0},
                limit=4,
            )
            result = await client.wait_for_job(job["job_id"])
        return result

    done = asyncio.run(asyncio.wait_for(example(), timeout=300))
    assert done["status"] == "completed", done.get("error")
    assert "demo_qa" in done["result"]["results"]
