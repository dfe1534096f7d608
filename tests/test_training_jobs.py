"""Jobs that know their training run: ``POST /evaluate`` with ``training_run``, ``step`` and
``metadata``, stored with the job and in its results file, and ``GET /jobs?training_run=``."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from lmms_eval.entrypoints.client import EvalClient, EvalServerError  # noqa: E402
from lmms_eval.entrypoints.store import JobStore  # noqa: E402


def serve(tmp_path: Path, **options: Any) -> Iterator[str]:
    """The real eval server (uvicorn on 127.0.0.1, a free port, in a thread); yields its URL."""
    from lmms_eval.entrypoints.server import create_app
    from lmms_eval.entrypoints.server_args import ServerArgs

    args = ServerArgs(port=0, state_dir=str(tmp_path / "state"), cpu_slots=1, **options)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(args), log_level="warning"))
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
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("LMMS_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LMMS_EVAL_SERVER_TOKEN", raising=False)
    yield from serve(tmp_path)


def test_jobs_of_a_training_run_are_listed_by_step_with_scores(url: str) -> None:
    with EvalClient(url) as client:
        submitted = [
            client.evaluate(
                "dummy",
                ["demo_qa"],
                {"accuracy": 1.0},
                limit=4,
                training_run="run-a",
                step=step,
                metadata={"lr": 0.001, "tags": ["tiny"]},
            )
            for step in (4, 2)
        ]
        other = client.evaluate(
            "dummy", ["demo_qa"], {"accuracy": 1.0}, limit=4, training_run="run-b", step=1
        )
        assert submitted[0]["training_run"] == "run-a" and submitted[0]["step"] == 4
        for job in [*submitted, other]:
            done = client.wait_for_job(job["job_id"], poll_interval=0.2, timeout=120)
            assert done["status"] == "completed", done.get("error")
        listed = client.list_jobs("run-a")
        everything = client.list_jobs()
        result = client.get_job(submitted[0]["job_id"])["result"]

    assert [j["step"] for j in listed] == [2, 4]  # by step, not by submission
    assert {j["job_id"] for j in listed} == {j["job_id"] for j in submitted}
    assert len(everything) == 3
    scores = {(s["task"], s["metric"]): s for s in listed[0]["scores"]}
    row = scores[("demo_qa", "exact_match")]
    assert 0.0 <= row["ci_lower"] <= row["value"] <= row["ci_upper"] <= 1.0 and row["stderr"] is not None
    assert listed[0]["metadata"] == {"lr": 0.001, "tags": ["tiny"]}
    assert listed[0]["model"] == "dummy" and listed[0]["tasks"] == "demo_qa"
    # the results file records the training run
    assert result["training"] == {
        "training_run": "run-a",
        "step": 4,
        "metadata": {"lr": 0.001, "tags": ["tiny"]},
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"step": -1}, "step: Input should be greater than or equal to 0"),
        (
            {"metadata": {"x": "y" * 9000}},
            "metadata: Value error, 9009 bytes of JSON, over the limit of 8192",
        ),
        ({"metadata": [1, 2]}, "metadata: Input should be a valid dictionary"),
        ({"metadata": {"a": [[[[[[[[[1]]]]]]]]]}}, "metadata: Value error, nested deeper than 8 levels"),
        ({"training_run": "a\nb"}, "training_run: String should match pattern"),
    ],
)
def test_bad_training_fields_are_one_line_422s(url: str, body: dict[str, Any], expected: str) -> None:
    with EvalClient(url) as client, pytest.raises(EvalServerError) as info:
        client._call("POST", "/evaluate", json={"model": "dummy", "tasks": "demo_qa", **body})
    assert info.value.status_code == 422
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_a_store_made_before_the_training_columns_opens_and_keeps_its_jobs(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    db = sqlite3.connect(path)
    db.executescript(
        """CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT UNIQUE NOT NULL,
        status TEXT NOT NULL, created_at REAL NOT NULL, started_at REAL, finished_at REAL,
        request TEXT NOT NULL, num_gpus INTEGER NOT NULL DEFAULT 0, output_path TEXT NOT NULL,
        error TEXT, pid INTEGER, attempts INTEGER NOT NULL DEFAULT 0);"""
    )
    db.execute(
        "INSERT INTO jobs (job_id, status, created_at, request, output_path) VALUES (?, 'completed', 1.0, ?, ?)",
        ("old1", json.dumps({"model": "dummy"}), str(tmp_path / "out")),
    )
    db.commit()
    db.close()

    store = JobStore(path)
    try:
        (old,) = store.list()
        assert old.job_id == "old1" and old.training_run is None and old.training() is None
        assert old.job_document() == {"model": "dummy"}
        assert store.insert("new1", {"model": "dummy"}, 0, "out", 10, {"training_run": "r", "step": 3})
        (new,) = store.list_training("r")
        assert new.step == 3 and new.job_document()["__training__"] == {"training_run": "r", "step": 3}
    finally:
        store.close()
    JobStore(path).close()  # opened again: the columns are there, nothing added twice
