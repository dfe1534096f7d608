"""Secrets never leave the process: a full CLI run against a local fake server, with a fake key in
``--model_args``, a password in the base URL, secrets in a ``--config`` ``env:`` block and a server
that echoes the key in its error bodies; every byte the run printed or wrote is searched for them."""

from __future__ import annotations

import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from openai_server import OpenAIServer, last_user_text

from lmms_eval.secrets import (
    REDACTED,
    RedactingFilter,
    forget_secrets,
    redact,
    redact_text,
    register_secret,
)

pytest.importorskip("httpx")


@pytest.fixture(autouse=True)
def _forget() -> None:
    forget_secrets()


def _everything_written(*folders: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                out[str(path)] = path.read_bytes()
    return out


def _leaks(blobs: dict[str, bytes], needles: list[str]) -> list[str]:
    forms = {n for needle in needles for n in (needle, quote(needle, safe=""))}
    return [
        f"{name} contains {needle!r}"
        for name, blob in blobs.items()
        for needle in forms
        if needle.encode() in blob
    ]


def test_no_secret_reaches_any_output_of_a_full_run(tmp_path: Path) -> None:
    key = "sk-fake-" + secrets.token_hex(12)
    env_key = "sk-envkey-" + secrets.token_hex(12)
    password = "pw-" + secrets.token_hex(8)
    with OpenAIServer() as server:
        # the server echoes the key back in error bodies, as some providers do
        server.add_fault(
            "status",
            match="What is 13 + 2?",
            status=401,
            times=None,
            message=f"Incorrect API key provided: {key}",
        )
        server.add_fault("status", match="What is 4 - 5?", status=500, times=None, message=f"upstream said: Bearer {key}")  # fmt: skip
        base_url = server.base_url.replace("http://", f"http://evaluator:{password}@")
        config = tmp_path / "run.yaml"
        config.write_text(
            "model: openai\n"
            "tasks: [demo_qa]\n"
            "limit: 10\n"
            f"env:\n  OPENAI_API_KEY: {env_key}\n  DB_PASSWORD: {password}\n",
            encoding="utf-8",
        )
        model_args = f"model=gpt-4o-mini,base_url={base_url},api_key={key},max_retries=1,retry_backoff_s=0.01"
        home = tmp_path / "home"
        env = {**os.environ, "LMMS_EVAL_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
        command = [sys.executable, "-m", "lmms_eval", "--config", str(config), "--model_args", model_args]
        command += [
            "--output_path",
            str(tmp_path / "out"),
            "--log_samples",
            "--use_cache",
            str(tmp_path / "cache"),
        ]
        command += ["--verbosity", "DEBUG", "--write_out"]
        run = subprocess.run(command, capture_output=True, env=env, timeout=120)
        assert run.returncode == 3, run.stderr.decode()[-2000:]  # two documents failed
        bad_args = model_args.replace("model=gpt-4o-mini", 'model="gpt-4o-mini')  # unbalanced quote
        parse_error = subprocess.run(
            [
                sys.executable,
                "-m",
                "lmms_eval",
                "--model",
                "openai",
                "--model_args",
                bad_args,
                "--tasks",
                "demo_qa",
            ],
            capture_output=True,
            env=env,
            timeout=60,
        )
        received = len(server.requests)
    assert received >= 10  # the run really talked to the server
    assert parse_error.returncode == 1 and b"lmms-eval: error:" in parse_error.stderr
    blobs = {
        "stdout": run.stdout,
        "stderr": run.stderr,
        "parse error": parse_error.stdout + parse_error.stderr,
    }
    blobs.update(_everything_written(tmp_path / "out", tmp_path / "cache", home))
    assert len(blobs) > 5 and any(b"_samples_demo_qa.jsonl" in name.encode() for name in blobs)
    assert _leaks(blobs, [key, env_key, password]) == []
    assert REDACTED.encode() in run.stdout + run.stderr  # they were there, and were redacted


def test_redaction_covers_keys_urls_tokens_and_registered_values() -> None:
    register_secret("s3cret-value-123")
    text = "HTTP 401: key s3cret-value-123 rejected; url https://bob:hunter2@host/v1; Bearer abcdefghijkl"
    cleaned = redact_text(text)
    assert "s3cret-value-123" not in cleaned and "hunter2" not in cleaned and "abcdefghijkl" not in cleaned
    assert cleaned.count(REDACTED) == 3 and "https://bob:" in cleaned and "HTTP 401" in cleaned
    nested = {"config": {"model_args": "model=m,api_key=xyz12345", "env": {"HF_TOKEN": "hf_x"}}, "n": [1]}
    out = redact(nested)
    assert out == {
        "config": {"model_args": f"model=m,api_key={REDACTED}", "env": {"HF_TOKEN": REDACTED}},
        "n": [1],
    }
    for harmless in ("accuracy=0.8,answer_field=answer", "time 12:30", "max_tokens=5", "cluster_key=videoID"):
        assert redact_text(harmless) == harmless


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    register_secret("sk-logged-abcdef0123456789")
    logger = logging.getLogger("lmms_eval.test_secrets")
    record = logger.makeRecord(
        logger.name, logging.WARNING, __file__, 1, "request failed: %s", ("sk-logged-abcdef0123456789",), None
    )
    assert RedactingFilter().filter(record) is True
    assert record.getMessage() == f"request failed: {REDACTED}"


def test_config_env_secrets_are_registered(tmp_path: Path) -> None:
    from lmms_eval.cli.eval import register_env_secrets

    register_env_secrets(
        {"AZURE_OPENAI_KEY": "azure-secret-1", "MY_DB_PASS": "db-secret-22", "HF_HOME": "/data/hf"}
    )
    assert redact_text("azure-secret-1 db-secret-22 /data/hf") == f"{REDACTED} {REDACTED} /data/hf"


def test_echoing_server_answer_is_redacted_in_samples(tmp_path: Path) -> None:
    import json

    import lmms_eval

    key = "sk-echo-" + secrets.token_hex(10)
    with OpenAIServer(responder=lambda payload: f"{key} {last_user_text(payload)}") as server:
        lmms_eval.simple_evaluate(
            model="openai",
            model_args={"model": "m", "base_url": server.base_url, "api_key": key},
            tasks=["demo_qa"],
            limit=3,
            output_path=str(tmp_path),
            log_samples=True,
            show_progress=False,
        )
    lines = next(tmp_path.rglob("*_samples_demo_qa.jsonl")).read_text().splitlines()
    assert len(lines) == 3 and all(key not in line for line in lines)
    assert REDACTED in json.loads(lines[0])["resps"][0][0]
