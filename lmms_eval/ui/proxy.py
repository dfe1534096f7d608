"""The eval server behind the launch page: a remote one (``--server URL``), or one run in this
process on a free loopback port.

The browser talks only to the UI; :class:`ServerLink` forwards the few calls the launch page makes
(``/models``, ``/tasks``, ``/queue``, ``POST /evaluate``, ``/jobs/{id}`` and its log) with the
server's token, which stays in this process: it is never sent to the browser nor logged.
"""

from __future__ import annotations

import logging
import re
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from lmms_eval.secrets import redact, redact_text, register_secret
from lmms_eval.ui.security import Refused

logger = logging.getLogger(__name__)

JOB_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
FORWARDED = {("GET", "models"), ("GET", "tasks"), ("GET", "queue"), ("GET", "health"), ("POST", "evaluate")}


def check_job_id(job_id: str) -> str:
    if not JOB_ID.match(job_id):
        raise Refused(422, f"job id '{job_id[:80]}' is not valid; ids are letters, digits, '-' and '_'")
    return job_id


class ServerLink:
    """Calls to one eval server, with its token."""

    def __init__(self, url: str, token: str | None, embedded: bool) -> None:
        self.url = url.rstrip("/")
        self.embedded = embedded
        self._token = token
        if token:
            register_secret(token)

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "mode": "same process" if self.embedded else "remote"}

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One JSON call: (status, body); an unreachable server is a 502 naming it."""
        try:
            async with httpx.AsyncClient(timeout=httpx.Timeout(130.0, connect=5.0)) as client:
                response = await client.request(
                    method, f"{self.url}/{path}", json=body, headers=self._headers()
                )
        except httpx.HTTPError as exc:
            raise Refused(
                502, f"eval server at {self.url} unreachable: {redact_text(str(exc)) or type(exc).__name__}"
            ) from None
        try:
            data = response.json()
        except ValueError:
            data = {"detail": redact_text(response.text[:500])}
        return response.status_code, redact(data)

    async def log_stream(self, job_id: str, follow: bool) -> AsyncIterator[bytes]:
        """The job's log, streamed as the server writes it."""
        url = f"{self.url}/jobs/{check_job_id(job_id)}/logs"
        params = {"follow": "true" if follow else "false"}
        timeout = httpx.Timeout(None, connect=5.0)
        try:
            async with (
                httpx.AsyncClient(timeout=timeout) as client,
                client.stream("GET", url, params=params, headers=self._headers()) as response,
            ):
                if response.status_code != 200:
                    yield f"[log unavailable: HTTP {response.status_code}]\n".encode()
                    return
                async for chunk in response.aiter_bytes():
                    yield redact_text(chunk.decode("utf-8", "replace")).encode()
        except httpx.HTTPError as exc:
            yield f"[log stream ended: {type(exc).__name__}]\n".encode()


def free_port(host: str = "127.0.0.1") -> socket.socket:
    """A socket bound to a free port on ``host``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


class EmbeddedServer:
    """An eval server (:func:`lmms_eval.entrypoints.server.create_app`) on a free loopback port, in
    a thread of this process, with a random token; job outputs go to the logs folder."""

    def __init__(self, logs: Path, state_dir: Path | None = None) -> None:
        self.logs = logs
        self.state_dir = state_dir
        self.token = secrets.token_urlsafe(24)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def start(self, wait_s: float = 30.0) -> ServerLink:
        import uvicorn

        from lmms_eval.entrypoints.server import create_app
        from lmms_eval.entrypoints.server_args import ServerArgs

        sock = free_port()
        port = sock.getsockname()[1]
        args = ServerArgs(
            host="127.0.0.1",
            port=port,
            output_root=str(self.logs),
            state_dir=str(self.state_dir) if self.state_dir else None,
        )
        app = create_app(args, token=self.token)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="lmms-eval-ui-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + wait_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the eval server of the UI did not start")
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{port}"
        logger.info("eval server for the launch page on %s (this process)", self.url)
        return ServerLink(self.url, self.token, embedded=True)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
