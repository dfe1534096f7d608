"""Property test: random bodies posted to ``POST /evaluate`` never get a 500, and an invalid body
never queues a job.

A seeded generator of our own (deterministic: the same cases on every run) starts from a valid
body and changes one to four fields: known field names and unknown ones, values of every JSON type
and size (huge and negative numbers, NaN, long strings, NUL bytes, lone surrogates, deep nesting),
and a share of raw bodies that are not JSON, not UTF-8 or not an object. The server app runs in
process (no scheduler: queued jobs stay queued) with its folders under ``tmp_path``.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from lmms_eval.entrypoints.protocol import EvaluateRequest
from lmms_eval.entrypoints.server import create_app
from lmms_eval.entrypoints.server_args import ServerArgs

SEED = 20250125
CASES = 600
FIELDS = sorted(EvaluateRequest.model_fields)
VALID = {"model": "dummy", "tasks": "demo_qa", "limit": 2}
ODD_TEXT = ["", " ", "\x00", "a\x00b", "\ud800", "x\udcffy", "../../etc/passwd", "/etc/passwd", "~root/x",
            "demo_qa,,", "api_key=K,K", 'k="unclosed', "k={[", "auto:99999999999999999999", "é✓𝄞", "NaN",
            "1e400", "-1", "null", "{}", "[]", "k=v" * 200]  # fmt: skip
ODD_NUMBERS = [0, -1, 1, 2**31, 2**63, 2**64 + 1, -(2**63) - 1, 2**70, 10**30, 10**300, 0.5, -0.0, 1e308,
               float("nan"), float("inf"), float("-inf"), 3.0]  # fmt: skip


class Fuzz:
    """Random JSON values, from one seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def text(self) -> str:
        rng = self.rng
        if rng.random() < 0.5:
            return rng.choice(ODD_TEXT)
        alphabet = "ab_=,{}[]\"' /.\\:\x00\x01\n\t\u00e9\u2603\ud83d" + "\U0001f600"
        return "".join(rng.choice(alphabet) for _ in range(rng.choice([1, 5, 40, 2000])))

    def value(self, depth: int = 0) -> Any:
        rng = self.rng
        kind = rng.choice(["none", "bool", "number", "number", "text", "text", "list", "dict", "deep"])
        if kind == "none":
            return None
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "number":
            return rng.choice(ODD_NUMBERS) if rng.random() < 0.7 else rng.randint(-(10**6), 10**6)
        if kind == "text":
            return self.text()
        if depth > 3:
            return self.text()
        if kind == "list":
            return [self.value(depth + 1) for _ in range(rng.randint(0, 4))]
        if kind == "dict":
            return {self.key(): self.value(depth + 1) for _ in range(rng.randint(0, 4))}
        nested: Any = self.value(4)
        for _ in range(rng.choice([10, 40, 200, 400])):  # deeper: the raw bodies below
            nested = [nested] if rng.random() < 0.5 else {"a": nested}
        return nested

    def key(self) -> str:
        rng = self.rng
        return rng.choice([*FIELDS, "api_key", "modle", "", "\x00", "a" * 300, "\ud800", "num_gpus"])

    def body(self) -> tuple[bytes, dict[str, Any] | None]:
        """A raw body, and the object it encodes (None when it is not a JSON object)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.08:
            raw = rng.choice([b"", b"{", b"\xff\xfe{}", b'{"model": "\xff"}', b"[]", b"42", b"null",
                              b'{"model": "dummy", "tasks": "demo_qa"', b"\x00" * 10,
                              b'{"model": "dummy", "tasks": "demo_qa", "limit": 1' + b"0" * 5000 + b"}"])  # fmt: skip
            return raw, None
        if roll < 0.12:
            raw = "[" * 100_000 + "]" * 100_000
            return raw.encode(), None
        body: dict[str, Any] = dict(VALID)
        for _ in range(rng.randint(1, 4)):
            name = self.key() if rng.random() < 0.9 else rng.choice(FIELDS)
            if rng.random() < 0.1:
                body.pop(name, None)
            else:
                body[name] = self.value()
        return json.dumps(body).encode(), body  # NaN/Infinity as JS literals; surrogates as \\ud800


@pytest.fixture
def client(tmp_path: Path) -> Any:
    args = ServerArgs(
        state_dir=str(tmp_path / "state"),
        output_root=str(tmp_path / "out"),
        cache_dir=str(tmp_path / "cache"),
        data_root=str(tmp_path / "data"),
        max_queued=100_000,
    )
    app = create_app(args)
    yield TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
    app.state.service.store.close()


def _queued(client: Any) -> int:
    return int(client.get("/queue").json()["counts"].get("queued", 0))


def _is_valid(body: dict[str, Any]) -> bool:
    """Whether the settings model takes the body (what the server must check before queueing)."""
    try:
        EvaluateRequest.model_validate(body).to_settings()
    except Exception:
        return False
    return True


def test_random_bodies_never_get_a_500_nor_queue_an_invalid_job(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    fuzz = Fuzz(SEED)
    statuses: dict[int, int] = {}
    queued = _queued(client)
    with caplog.at_level(logging.ERROR):
        for case in range(CASES):
            raw, body = fuzz.body()
            answer = client.post("/evaluate", content=raw, headers={"content-type": "application/json"})
            statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
            assert answer.status_code < 500, (case, raw[:300], answer.text[:300])
            detail = answer.json().get("detail") if answer.status_code != 200 else None
            assert detail is None or (isinstance(detail, str) and "Traceback" not in detail), detail
            now = _queued(client)
            if answer.status_code == 200:
                assert body is not None and _is_valid(body), (case, raw[:300])
                assert now == queued + 1
            else:
                assert now == queued, (case, raw[:300], answer.text[:300])
            queued = now
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[-2000:]
    # the generator reaches every outcome: queued, refused as invalid, and unparseable
    assert statuses.get(200, 0) >= 20 and statuses.get(422, 0) >= 300 and statuses.get(400, 0) >= 10, statuses
