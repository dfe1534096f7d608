"""Drives the published ``EvalClient`` against a running server; prints one JSON line of what it saw.

Run by tests/test_published_client.py with the python of a virtual environment that holds the
published lmms-eval (``python published_client_probe.py URL``); it must not import this repository.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def _status(call: Any) -> Any:
    """The call's result, or the HTTP status (or exception name) it failed with."""
    try:
        return {"ok": call()}
    except Exception as exc:  # the published client raises httpx errors
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None) or type(exc).__name__
        return {"error": status, "text": getattr(response, "text", str(exc))[:500]}


def _settled(client: Any, job_id: str, timeout: float = 120) -> dict[str, Any]:
    """The job once it has ended (the published ``wait_for_job`` waits for completed or failed only)."""
    deadline = time.monotonic() + timeout
    job = client.get_job(job_id)
    while job["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        job = client.get_job(job_id)
    return job


def main(url: str) -> None:
    import importlib

    import lmms_eval

    # the published client (typed Any: this repository's EvalClient has other methods)
    EvalClient: Any = importlib.import_module("lmms_eval.entrypoints.client").EvalClient

    seen: dict[str, Any] = {"package": lmms_eval.__file__}
    with EvalClient(url, timeout=60) as client:
        seen["healthy"] = client.is_healthy()
        seen["tasks"] = client.list_tasks()
        seen["models"] = client.list_models()
        job = client.evaluate(model="dummy", tasks=["demo_qa"], limit=2, output_dir="published_out")
        seen["submitted"] = job
        seen["done"] = client.wait_for_job(job["job_id"], poll_interval=0.2, timeout=120, verbose=False)
        seen["job"] = client.get_job(job["job_id"])
        later = client.evaluate(model="dummy", tasks=["demo_qa"])
        seen["cancel"] = _status(lambda: client.cancel_job(later["job_id"]))
        seen["cancelled"] = _settled(client, later["job_id"])
        seen["queue"] = client.get_queue_status()
        seen["merge"] = _status(lambda: client.merge_checkpoint("no_such_checkpoint", checkpoint_type="ema"))
    print(json.dumps(seen, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
