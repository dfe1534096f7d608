"""Opt-in (``-m compat``): the published ``EvalClient`` works against our server unchanged.

The client runs in the published package's own venv (``tests/published_venv.py``), in a subprocess
(``tests/published_client_probe.py``), against ``lmms-eval serve`` on 127.0.0.1 with no token.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
from published_venv import published_python
from test_eval_server import Server, free_port

pytestmark = pytest.mark.compat

PROBE = Path(__file__).resolve().parent / "published_client_probe.py"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("published_client"), free_port(), token=None)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def seen(server: Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    python = published_python(("lmms_eval.entrypoints.client",), ("httpx",))
    done = subprocess.run(
        [str(python), str(PROBE), server.url],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path_factory.mktemp("probe"),  # so that this repository's lmms_eval is not on the path
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "", "HOME": str(server.root)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_probe_runs_the_published_client(seen: dict[str, Any]) -> None:
    assert "/lmms_eval_published_" in seen["package"]


def test_health_and_listings(seen: dict[str, Any]) -> None:
    assert seen["healthy"] is True
    assert "demo_qa" in seen["tasks"] and all(isinstance(name, str) for name in seen["tasks"])
    assert "dummy" in seen["models"] and all(isinstance(name, str) for name in seen["models"])


def test_evaluate_wait_and_job_fields(seen: dict[str, Any], server: Server) -> None:
    assert seen["submitted"]["status"] == "queued"
    done = seen["done"]
    assert done["status"] == "completed", done.get("error")
    assert any(key.startswith("exact_match") for key in done["result"]["results"]["demo_qa"])
    output = Path(seen["job"]["request"]["output_path"])
    assert output.name == "published_out" and output.is_relative_to(server.root / "out")
    assert seen["job"]["completed_at"] and seen["job"]["position_in_queue"] is None


def test_cancel_queue_and_merge(seen: dict[str, Any]) -> None:
    assert seen["cancel"]["ok"]["job_id"] == seen["cancelled"]["job_id"]  # cancelling is asynchronous
    assert seen["cancelled"]["status"] == "cancelled"
    assert {"queued", "running"} <= set(seen["queue"])
    # the published body (output_path null, checkpoint_type) is accepted; merging a real sharded
    # checkpoint is tests/test_merge.py's: here the one refusal is the missing checkpoint folder
    merge = seen["merge"]
    assert merge["error"] == 422 and "no_such_checkpoint: folder does not exist" in merge["text"], merge
