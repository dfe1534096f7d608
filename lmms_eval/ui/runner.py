"""Serve the UI: bind, say where, open a browser (the blocking part of ``lmms-eval ui``)."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import webbrowser
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lmms_eval.entrypoints.server_args import TOKEN_ENV
from lmms_eval.ui.security import ui_token
from lmms_eval.utils import is_loopback_host

logger = logging.getLogger(__name__)

PORT_ENV = "LMMS_SERVER_PORT"
DEFAULT_PORT = 8765


def default_port() -> int:
    """``$LMMS_SERVER_PORT``, else 8765."""
    text = os.environ.get(PORT_ENV, "")
    if not text:
        return DEFAULT_PORT
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ValueError(f"${PORT_ENV} must be a port number (0-65535), got '{text}'")
    return int(text)


def serve_ui(
    logs: Path,
    host: str = "127.0.0.1",
    port: int | None = None,
    server_url: str | None = None,
    server_token: str | None = None,
    token: str | None = None,
    open_browser: bool = True,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve until interrupted. The remote server's token: ``server_token`` or ``$LMMS_EVAL_SERVER_TOKEN``."""
    import uvicorn

    from lmms_eval.ui.app import UiOptions, create_ui_app

    logs.mkdir(parents=True, exist_ok=True)
    ui_secret, generated = ui_token(host, token)
    remote_token = (server_token or os.environ.get(TOKEN_ENV) or None) if server_url else None
    options = UiOptions(
        logs, server_url, remote_token, ui_secret, host=host, allowed_hosts=tuple(allowed_hosts)
    )
    app = create_ui_app(options)
    config = uvicorn.Config(
        app, host=host, port=default_port() if port is None else port, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    threading.Thread(target=_announce, args=(server, host, ui_secret, open_browser), daemon=True).start()
    if generated:  # shown once, on the terminal of the person who started the UI (logs redact it)
        print(f"lmms-eval ui: no token configured; open the UI with ?token={ui_secret}", file=sys.stderr)
    if not is_loopback_host(host):
        logger.warning("the UI is bound to %s (beyond loopback); every request needs its token", host)
    server.run()


def address(server: Any, host: str) -> str:
    """The URL a started uvicorn server listens on (a wildcard host shown as loopback)."""
    servers = getattr(server, "servers", None) or []
    port = next((s.sockets[0].getsockname()[1] for s in servers if s.sockets), None)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"http://{shown}:{port}/"


def _announce(server: Any, host: str, token: str | None, open_browser: bool) -> None:
    deadline = time.monotonic() + 60
    while not getattr(server, "started", False):
        if time.monotonic() > deadline or getattr(server, "should_exit", False):
            return
        time.sleep(0.05)
    url = address(server, host)
    logger.info("lmms-eval UI on %s (logs folder and eval server: see the page)", url)
    if open_browser:
        webbrowser.open(url + (f"?token={token}" if token else ""))
