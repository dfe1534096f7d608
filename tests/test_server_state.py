"""The eval server never loses its state silently: one server per state folder, a damaged or
truncated job store refuses to start (and is kept), a full disk refuses submissions but never a
running job, a job that finished while no server watched it is not run again, and no job's
temporary folder outlives the server."""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
from test_eval_server import Server, free_port, submit, wait

from lmms_eval.entrypoints.server_args import ServerArgs
from lmms_eval.entrypoints.store import JobStore, StateError, StateLock, StoreError

SLOW = {"latency": 0.1, "answer_field": "answer"}
PREFIX = "lmms_state_test_"


def _serve(tmp_path: Path, state: Path) -> subprocess.CompletedProcess[str]:
    """``lmms-eval serve`` run to its end (it is expected to refuse to start)."""
    argv = [sys.executable, "-m", "lmms_eval", "serve", "--host", "127.0.0.1", "--port", str(free_port()),
            "--state_dir", str(state), "--output_root", str(tmp_path / "out2")]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "LMMS_EVAL_SERVER_TOKEN"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("lmms-eval: error: "), text
    return lines[0]


def _filled_store(path: Path, jobs: int = 40) -> None:
    """A store of several pages (each request about 2 kB), closed as a stopped server leaves it."""
    store = JobStore(path)
    for i in range(jobs):
        assert store.insert(f"job{i:03d}", {"note": "x" * 2000}, 0, f"/out/{i}", max_queued=1000)
    store.close()


def _args(tmp_path: Path, state: Path | None = None) -> ServerArgs:
    return ServerArgs(state_dir=str(state or tmp_path / "state"), output_root=str(tmp_path / "out"))


def _results(folder: Path) -> list[Path]:
    return list(folder.rglob("*_results.json"))


def _worker_gone(job_id: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = False
        for proc in Path("/proc").iterdir():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            alive = alive or (b"lmms_eval.entrypoints.worker" in cmdline and job_id.encode() in cmdline)
        if not alive:
            return
        time.sleep(0.1)
    raise AssertionError(f"the worker of job {job_id} still runs")


def _until(check: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


# -- one server per state folder -------------------------------------------------------------------


def test_a_second_server_on_the_same_state_dir_refuses_and_the_first_job_runs_on(tmp_path: Path) -> None:
    from lmms_eval.entrypoints.server import create_app

    first = Server(tmp_path, free_port(), token=None)
    first.start()
    try:
        with first.client() as client:
            job = submit(client, model_args=SLOW, limit=20)
            wait(client, job["job_id"], ("running",))
            line = _one_error_line(_serve(tmp_path, tmp_path / "state"))
            assert "in use by another eval server" in line
            assert first.proc is not None and f"pid {first.proc.pid}" in line
            assert f"http://127.0.0.1:{first.port}" in line and "--state_dir" in line
            with pytest.raises(StateError, match="in use by another eval server"):
                create_app(_args(tmp_path))  # in a process too: refused before anything is touched
            done = wait(client, job["job_id"], timeout=60)
            assert done["status"] == "completed", done["error"]
            assert client.get(f"/jobs/{job['job_id']}/logs").text.count("--- job") == 1
    finally:
        first.stop()
    app = create_app(_args(tmp_path))  # the lock went with the first server
    app.state.service.close()


# -- a store that is not what it was -------------------------------------------------------------


@pytest.mark.parametrize("damage", ["empty", "truncated", "overwritten"])
def test_a_damaged_store_refuses_to_start_says_how_to_recover_and_is_kept(
    tmp_path: Path, damage: str
) -> None:
    from lmms_eval.entrypoints.server import create_app

    db = tmp_path / "state" / "jobs.db"
    _filled_store(db)
    data = db.read_bytes()
    assert len(data) >= 8 * 4096
    if damage == "empty":
        db.write_bytes(b"")
    elif damage == "truncated":
        db.write_bytes(data[: len(data) // 2])
    else:  # one page in the middle overwritten
        middle = (len(data) // 4096 // 2) * 4096
        db.write_bytes(data[:middle] + b"\xa5" * 4096 + data[middle + 4096 :])
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with pytest.raises(StateError) as refused:
        create_app(_args(tmp_path))
    message = str(refused.value)
    assert "\n" not in message and str(db) in message
    assert {"empty": "empty (0 bytes)", "truncated": "truncated", "overwritten": "damaged"}[damage] in message
    assert f"mv {db} {db}.damaged" in message and ".recover" in message
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # never started empty over it
    if damage == "empty":  # the command line: one line, non-zero exit, the file still there
        line = _one_error_line(_serve(tmp_path, db.parent))
        assert "empty (0 bytes)" in line and db.stat().st_size == 0
    lock = StateLock(db.parent)  # the refusal released the state folder
    lock.acquire("127.0.0.1", 0)
    lock.release()


def test_a_missing_store_is_created_atomically_and_private(tmp_path: Path) -> None:
    db = tmp_path / "state" / "jobs.db"
    JobStore(db).close()
    assert db.read_bytes()[:16] == b"SQLite format 3\x00"
    assert oct(db.stat().st_mode & 0o777) == oct(0o600)
    assert sorted(p.name for p in db.parent.iterdir()) == ["jobs.db"]  # no half-made file beside it


def test_a_store_damaged_while_running_answers_503_and_logs_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from fastapi.testclient import TestClient

    from lmms_eval.entrypoints.server import create_app

    app = create_app(_args(tmp_path))
    service = app.state.service
    try:
        client = TestClient(app, base_url="http://127.0.0.1")  # no lifespan: the test runs the steps
        assert service.store.insert("j1", {}, 0, str(tmp_path / "out" / "j1"), max_queued=10)
        assert client.get("/health").json()["status"] == "healthy"
        other = sqlite3.connect(service.store.path, isolation_level=None)  # damage through SQLite itself
        other.execute("PRAGMA writable_schema=ON")
        (version,) = other.execute("PRAGMA schema_version").fetchone()
        other.execute("UPDATE sqlite_master SET rootpage=9999 WHERE name='jobs'")
        other.execute(f"PRAGMA schema_version={version + 1}")
        other.close()
        caplog.set_level(logging.INFO, logger="lmms_eval")
        health = client.get("/health")
        assert health.status_code == 503 and health.json()["status"] == "error"
        for path in ("/queue", "/jobs/j1", "/jobs/j1/events"):
            response = client.get(path)
            assert response.status_code == 503, path
            detail = response.json()["detail"]
            assert "damaged" in detail and ".recover" in detail and "\n" not in detail
        refused = client.post("/evaluate", json={"model": "dummy", "tasks": ["demo_qa"]})
        assert refused.status_code == 503
        for _ in range(20):  # what the scheduler's loop does ten times a second
            with pytest.raises(StoreError, match="damaged"):
                service.scheduler._step()
    finally:
        service.close()
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1 and "damaged" in errors[0].getMessage(), [r.getMessage() for r in errors]
    assert errors[0].exc_info is None  # one line, no traceback


# -- a full disk -----------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs (needs root and a mount namespace that permits it)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode(errors='replace').strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> Path:
    """Write zeros into ``folder`` until its disk is full."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as f:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass
    return filler


def test_a_full_state_disk_refuses_submissions_and_never_fails_a_running_job(
    tmp_path: Path, small_disk: Path
) -> None:
    srv = Server(tmp_path, free_port(), token=None)
    srv.start("--state_dir", str(small_disk / "state"))  # outputs and cache on another disk
    try:
        with srv.client() as client:
            job = submit(client, model_args=SLOW, limit=20)
            wait(client, job["job_id"], ("running",))
            filler = _fill(small_disk)
            refused = client.post("/evaluate", json={"model": "dummy", "tasks": ["demo_qa"], "limit": 1})
            assert refused.status_code == 507
            assert "no space left" in refused.json()["detail"] and "\n" not in refused.json()["detail"]
            health = client.get("/health").json()
            assert health["status"] == "degraded" and "no space" in health["detail"]
            _worker_gone(job["job_id"])  # the job ended while the disk was full
            assert len(_results(tmp_path / "out")) == 1
            assert client.get(f"/jobs/{job['job_id']}").json()["status"] == "running"  # not recorded yet
            filler.unlink()
            done = wait(client, job["job_id"], timeout=30)
            assert done["status"] == "completed", done["error"]
            assert done["result"]["results"]["demo_qa"]
            assert client.get("/health").json()["status"] == "healthy"
            assert submit(client, limit=1)["status"] == "queued"
    finally:
        srv.stop()
    assert "Traceback" not in (tmp_path / "server.log").read_text()


# -- crashes and stops -----------------------------------------------------------------------------


def test_an_orphan_that_finished_before_the_restart_is_completed_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    srv = Server(tmp_path, free_port(), token=None)
    srv.start("--temp_dir_prefix", PREFIX)
    try:
        with srv.client() as client:
            job = submit(client, model_args=SLOW, limit=20)
            wait(client, job["job_id"], ("running",))
            srv.stop(signal.SIGKILL)  # its worker runs on, with nobody watching
            _worker_gone(job["job_id"])
            assert len(_results(tmp_path / "out")) == 1
            assert list(temp.glob(f"{PREFIX}*"))  # what the killed server left
            srv.start("--temp_dir_prefix", PREFIX)
            done = wait(client, job["job_id"])
            assert done["status"] == "completed", done["error"]
            assert done["result"]["results"]["demo_qa"]
            log = client.get(f"/jobs/{job['job_id']}/logs").text
            assert log.count("attempt") == 1 and "its results are kept" in log
        assert len(_results(tmp_path / "out")) == 1  # not run a second time
        assert list(temp.glob(f"{PREFIX}*")) == []
    finally:
        srv.stop()


def test_sigterm_removes_the_temporary_folders_of_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    srv = Server(tmp_path, free_port(), token=None)
    srv.start("--temp_dir_prefix", PREFIX)
    try:
        with srv.client() as client:
            quick = submit(client, limit=2)
            assert wait(client, quick["job_id"])["status"] == "completed"
            assert list(temp.glob(f"{PREFIX}*")) == []  # removed when the job ended
            slow = submit(client, model_args=SLOW, limit=40)
            wait(client, slow["job_id"], ("running",))
            _until(lambda: list(temp.glob(f"{PREFIX}{slow['job_id']}_*")), "no temporary folder")
    finally:
        srv.stop(signal.SIGTERM)
    assert list(temp.glob(f"{PREFIX}*")) == []
