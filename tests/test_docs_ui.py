"""docs/ui.md runs as written: every command of its bash blocks (the UI ones are started, answer,
and are stopped), and every screenshot it shows exists."""

from __future__ import annotations

import re
import shlex
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from lmms_eval.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "ui.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def _commands() -> list[list[str]]:
    blocks = [body for lang, body in FENCE.findall(PAGE) if lang == "bash"]
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.strip()]


def _serve_ui(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``lmms-eval ui ARGS`` (``lmms_eval.cli.ui.main``) until it answers, then stop it."""
    import uvicorn

    from lmms_eval.cli.ui import main

    servers: list[uvicorn.Server] = []
    real_run = uvicorn.Server.run

    def run(self: uvicorn.Server, sockets: Any = None) -> None:
        app: Any = self.config.app
        if getattr(app, "title", "") == "lmms-eval UI":
            servers.append(self)
        real_run(self, sockets)

    opened: list[str] = []
    monkeypatch.setattr(uvicorn.Server, "run", run)
    monkeypatch.setattr("webbrowser.open", opened.append)
    monkeypatch.setenv("LMMS_SERVER_PORT", "0")
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(main(argv)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not (servers and servers[0].started) and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.05)
    assert servers and servers[0].started, f"lmms-eval ui {' '.join(argv)} did not start (exit {codes})"
    try:
        port = servers[0].servers[0].sockets[0].getsockname()[1]
        runs = httpx.get(f"http://127.0.0.1:{port}/api/runs", timeout=10).json()["runs"]
        assert len(runs) == 2
        wanted = "--no-browser" not in argv
        deadline = time.monotonic() + 10  # the browser opens from a thread once the server is up
        while wanted and not opened and time.monotonic() < deadline:
            time.sleep(0.05)
        assert wanted == bool(opened)
    finally:
        servers[0].should_exit = True
        thread.join(20)
    assert codes == [0]


def test_every_command_of_the_page_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    commands = _commands()
    assert [c[:2] for c in commands].count(["lmms-eval", "ui"]) == 2
    for words in commands:
        assert words[0] == "lmms-eval", words
        if words[1] == "ui":
            _serve_ui(words[2:], monkeypatch)
        else:
            assert cli_main([*words[1:], "--verbosity", "ERROR"]) == 0, words


def test_the_screenshots_exist() -> None:
    shown = re.findall(r"\]\((images/ui-[a-z]+\.png)\)", PAGE)
    assert len(shown) == 7
    for image in shown:
        assert (ROOT / "docs" / image).is_file(), (
            f"{image} is missing: LMMS_EVAL_UI_SCREENSHOTS=1 pytest tests/test_ui_browser.py "
            "tests/test_ui_board_browser.py"
        )
