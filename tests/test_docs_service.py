"""Every snippet of docs/service.md runs, in order, against the servers the guide itself starts.

The bash blocks start ``lmms-eval serve`` (each replaces the one before); the ``launch_server``
block runs in a child process, since it blocks; the other Python blocks run in one namespace, as a
reader would paste them into one session. Port 8000 becomes a free port; the working directory is
a temporary folder, where the test first puts the checkpoints the guide names.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from lmms_eval.demo import TINY_VLM_DIR  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "service.md"
HAS_HF = all(importlib.util.find_spec(n) for n in ("torch", "transformers", "safetensors"))
FENCE = re.compile(r"^```(bash|python)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(GUIDE.read_text(encoding="utf-8"))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError(log.read_text())


def stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


def bash_block(code: str, env: dict[str, str]) -> list[str]:
    """Apply the block's ``export`` lines to ``env``; return the ``lmms-eval serve`` argv."""
    argv: list[str] = []
    for line in code.strip().splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value
        else:
            assert line.startswith("lmms-eval serve "), f"docs/service.md runs an unexpected command: {line}"
            argv = [sys.executable, "-m", "lmms_eval", *line.split()[1:]]
    return argv


def make_checkpoints(folder: Path) -> None:
    """``epoch_0``: a Hugging Face folder; ``epoch_5``: the same model saved with ``dcp.save``."""
    shutil.copytree(TINY_VLM_DIR, folder / "epoch_0")
    import transformers
    from torch.distributed.checkpoint.state_dict_saver import save

    sharded = folder / "epoch_5"
    model: Any = transformers.AutoModelForImageTextToText.from_pretrained(str(TINY_VLM_DIR))
    save({"model": dict(model.state_dict())}, checkpoint_id=str(sharded), no_dist=True)
    for item in TINY_VLM_DIR.iterdir():
        if item.name != "model.safetensors":
            shutil.copy(item, sharded / item.name)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LMMS_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LMMS_EVAL_SERVER_TOKEN", raising=False)
    yield tmp_path


@pytest.mark.skipif(not HAS_HF, reason="the guide evaluates Hugging Face checkpoints (hf extra)")
@pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")
def test_every_snippet_of_the_service_guide_runs(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_checkpoints(workdir / "checkpoints")
    port = free_port()
    env = dict(os.environ)
    namespace: dict[str, Any] = {"__name__": "service_guide"}
    server: subprocess.Popen[bytes] | None = None
    log = workdir / "server.log"
    printed = io.StringIO()
    try:
        for kind, code in blocks():
            code = code.replace("8000", str(port))
            if kind == "bash":
                stop(server)
                argv = bash_block(code, env)
                server = subprocess.Popen(argv, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env)
                wait_healthy(port, server, log)
                for name in ("LMMS_EVAL_SERVER_TOKEN",):
                    if name in env:
                        monkeypatch.setenv(name, env[name])
            elif "launch_server(" in code:
                stop(server)
                server = subprocess.Popen([sys.executable, "-c", code], stdout=log.open("ab"),
                                          stderr=subprocess.STDOUT, env=env)  # fmt: skip
                wait_healthy(port, server, log)
            else:
                with contextlib.redirect_stdout(printed):
                    exec(compile(code, str(GUIDE), "exec"), namespace)
    finally:
        stop(server)
        if "client" in namespace:
            namespace["client"].close()
    out = printed.getvalue()
    assert "healthy" in out.splitlines()[0]  # client.health()["status"]
    assert out.count("completed") >= 3 and "failed" not in out, out[-3000:]
    assert "'done': 4, 'total': 4" in out  # the progress of the finished job
    # the training-loop jobs print demo_qa's scores: the dummy's oracle gets every answer right
    assert out.count("'exact_match,none': 1.0") == 3, out[-3000:]
    assert "cancelled" in out
    # the training section's TrainingEvaluator: the checkpoint's step evaluated and logged
    assert "completed ['eval/demo_shapes/accuracy', 'eval/demo_shapes/accuracy_stderr'" in out, out[-3000:]
    assert "[(100, 'completed')]" in out
    assert (workdir / "eval-server" / "outputs" / "merged" / "epoch_5" / "model.safetensors").is_file()
    assert "change-me-to-a-long-random-string" not in log.read_text()


def test_cli_reference_lists_every_serve_option() -> None:
    from lmms_eval.entrypoints.server_args import ServerArgs

    cli_md = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = cli_md.split("## `lmms-eval serve`", 1)[1].split("\n## ", 1)[0]
    for name, field in ServerArgs.model_fields.items():
        row = next((line for line in section.splitlines() if line.startswith(f"| `--{name}` |")), None)
        assert row is not None, f"docs/cli.md does not list lmms-eval serve --{name}"
        assert str(field.description) in row, f"docs/cli.md: --{name} says something else than ServerArgs"
