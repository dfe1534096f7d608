"""The HTTP guard of the eval server and the web UI (:mod:`lmms_eval.http_guard`): Host allow-list,
cross-site refusals, the token before the body, the counted body limit and the token rules; on its
own, through both apps at the ASGI level (so that the bytes an app pulls can be counted), and
through a real uvicorn for chunked bodies."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from lmms_eval.errors import ConfigError
from lmms_eval.http_guard import HttpGuard, allowed_names, check_token, host_name, parse_hosts

TOKEN = "guard-test-token-0123456789"
JOB = json.dumps({"model": "dummy", "tasks": ["demo_qa"], "limit": 1}).encode()
CHUNK = b"x" * 65536


class Reply:
    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    app: Any,
    method: str = "GET",
    path: str = "/",
    headers: dict[str, str] | None = None,
    body: Iterable[bytes] = (),
    query: str = "",
) -> tuple[Reply, int]:
    """One request at the ASGI level: the reply and how many body chunks the app pulled."""
    given = {"host": "127.0.0.1:8000", **{k.lower(): v for k, v in (headers or {}).items()}}
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": query.encode(), "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
        "headers": [(k.encode(), v.encode()) for k, v in given.items()],
    }  # fmt: skip
    chunks = iter(body)
    pulled = 0
    reply = Reply()

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        chunk = next(chunks, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        pulled += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            assert reply.status == 0, "two responses"
            reply.status = message["status"]
            reply.headers = {k.decode().lower(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            reply.body += message.get("body", b"")

    asyncio.run(app(scope, receive, send))
    return reply, pulled


def stream(total: int) -> Iterator[bytes]:
    """``total`` bytes in 64 KiB chunks, made as they are pulled (never held at once)."""
    for _ in range(total // len(CHUNK)):
        yield CHUNK


class Echo:
    """An app that reads the whole body and says how long it was."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        size, more = 0, True
        while more:
            message = await receive()
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        data = json.dumps({"size": size}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": data})


def guarded(**kwargs: Any) -> tuple[HttpGuard, Echo]:
    echo = Echo()
    options: dict[str, Any] = {"hosts": allowed_names("127.0.0.1"), "max_body": 100_000, **kwargs}
    return HttpGuard(echo, **options), echo


# -- the rules on their own ---------------------------------------------------------------------------


def test_host_names_and_allowed_hosts_are_parsed_strictly() -> None:
    assert host_name("LocalHost:8765") == "localhost"
    assert host_name("[::1]:8000") == "::1"
    assert host_name("gpu-box") == "gpu-box"
    for bad in ("", "a:b", "[::1", "x:80:81", "[::1]x"):
        assert host_name(bad) is None
    assert parse_hosts("gpu-box, GPU-box.lan,,10.0.0.5,[fe80::1]") == [
        "gpu-box", "gpu-box.lan", "10.0.0.5", "fe80::1",
    ]  # fmt: skip
    for bad in ("http://gpu-box", "gpu-box:8000", "a/b", "-x.lan", "a b"):
        with pytest.raises(ValueError, match="not a host name"):
            parse_hosts(bad)


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8000", "localhost", "LOCALHOST:1", "[::1]:9", "127.0.0.2", "gpu-box:80"]
)
def test_loopback_and_configured_hosts_pass(host: str) -> None:
    guard, echo = guarded(hosts=allowed_names("127.0.0.1", ["gpu-box"]))
    reply, _ = call(guard, headers={"Host": host})
    assert reply.status == 200 and echo.calls == 1


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "localhost.evil.example", "", "a:b:c"])
def test_other_hosts_get_400_before_the_app(host: str) -> None:
    guard, echo = guarded()
    reply, _ = call(guard, "POST", headers={"Host": host, "Content-Type": "application/json"}, body=[JOB])
    assert reply.status == 400 and echo.calls == 0
    assert "allowed_hosts" in reply.json()["detail"]


def test_a_second_host_header_is_refused() -> None:
    guard, echo = guarded()
    scope_headers = {"Host": "127.0.0.1"}
    app: Any = guard

    async def twice(scope: Any, receive: Any, send: Any) -> None:
        scope["headers"].append((b"host", b"evil.example"))
        await app(scope, receive, send)

    reply, _ = call(twice, headers=scope_headers)
    assert reply.status == 400 and "twice" in reply.json()["detail"] and echo.calls == 0


@pytest.mark.parametrize("method", ["POST", "DELETE", "PUT", "PATCH"])
@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # another port of the same host
        {"Origin": "http://127.0.0.1:9999"},
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
    ],
)
def test_cross_site_state_changes_get_403(method: str, headers: dict[str, str]) -> None:
    guard, echo = guarded()
    reply, pulled = call(guard, method, headers={**headers, "Content-Type": "application/json"}, body=[JOB])
    assert reply.status == 403 and echo.calls == 0 and pulled == 0


def test_same_origin_and_scripts_pass() -> None:
    guard, echo = guarded()
    page = {"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"}
    json_body = {"Content-Type": "application/json; charset=utf-8", "Content-Length": str(len(JOB))}
    assert call(guard, "POST", headers={**page, **json_body}, body=[JOB])[0].json() == {"size": len(JOB)}
    assert call(guard, "POST", headers=json_body, body=[JOB])[0].status == 200  # a script: no Origin
    assert call(guard, "DELETE", headers=page)[0].status == 200  # no body: no Content-Type needed
    assert echo.calls == 3


@pytest.mark.parametrize(
    "kind",
    ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b", ""],
)
def test_bodies_other_than_json_get_415(kind: str) -> None:
    guard, echo = guarded()
    headers = {"Content-Length": str(len(JOB)), **({"Content-Type": kind} if kind else {})}
    reply, pulled = call(guard, "POST", headers=headers, body=[JOB])
    assert reply.status == 415 and "application/json" in reply.json()["detail"]
    assert echo.calls == 0 and pulled == 0


def test_reads_embedded_by_another_site_are_refused_but_navigation_passes() -> None:
    guard, _ = guarded()
    embedded = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
    assert call(guard, headers=embedded)[0].status == 403
    assert (
        call(guard, headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})[0].status == 200
    )


def test_the_token_is_checked_before_the_body_is_read() -> None:
    def auth(headers: Any, _scope: Any) -> Any:
        from lmms_eval.http_guard import Answer

        return None if headers.get("authorization") == f"Bearer {TOKEN}" else Answer(401, "token")

    guard, echo = guarded(auth=auth, public=("/health",))
    chunked = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    reply, pulled = call(guard, "POST", "/evaluate", headers=chunked, body=stream(50_000_000))
    assert reply.status == 401 and pulled == 0 and echo.calls == 0
    assert call(guard, path="/health")[0].status == 200
    ok = {**chunked, "Authorization": f"Bearer {TOKEN}"}
    assert call(guard, "POST", "/evaluate", headers=ok, body=[JOB])[0].json() == {"size": len(JOB)}


def test_a_chunked_body_over_the_limit_gets_413_and_is_not_read_further() -> None:
    guard, echo = guarded(max_body=1_000_000)
    chunked = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    reply, pulled = call(guard, "POST", headers=chunked, body=stream(50_000_000))
    assert reply.status == 413 and "1000000 bytes" in reply.json()["detail"]
    assert pulled * len(CHUNK) <= 1_000_000 + len(CHUNK)  # one chunk past the limit, not 50 MB
    assert echo.calls == 1 and reply.headers["connection"] == "close"
    declared = {"Content-Type": "application/json", "Content-Length": "50000000"}
    reply, pulled = call(guard, "POST", headers=declared, body=stream(50_000_000))
    assert reply.status == 413 and pulled == 0 and echo.calls == 1


def test_weak_tokens_are_refused_without_showing_them() -> None:
    for weak in ("", "   ", "short-token", "a" * 15, "sixteen chars ok", "tab\there-is-long-enough"):
        with pytest.raises(ConfigError) as caught:
            check_token(weak, "--token")
        assert str(caught.value).startswith("--token: ") and (
            not weak.strip() or weak not in str(caught.value)
        )
    assert check_token("a" * 16, "--token") == "a" * 16


# -- the eval server ----------------------------------------------------------------------------------


@pytest.fixture
def server_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from lmms_eval.entrypoints.server import create_app
    from lmms_eval.entrypoints.server_args import ServerArgs

    monkeypatch.delenv("LMMS_EVAL_SERVER_TOKEN", raising=False)
    apps: list[Any] = []

    def make(token: str | None = None) -> Any:
        app = create_app(ServerArgs(state_dir=str(tmp_path / f"state{len(apps)}")), token=token)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.state.service.close()


def jobs(app: Any) -> int:
    return sum(app.state.service.store.counts().values())


def test_a_token_less_server_refuses_a_rebound_host_and_queues_nothing(server_app: Any) -> None:
    app = server_app()
    json_body = {"Content-Type": "application/json"}
    reply, _ = call(app, "POST", "/evaluate", {"Host": "evil.example", **json_body}, [JOB])
    assert reply.status == 400 and jobs(app) == 0
    assert call(app, path="/queue", headers={"Host": "evil.example:8000"})[0].status == 400
    reply, _ = call(app, "POST", "/evaluate", json_body, [JOB])
    assert reply.status == 200 and jobs(app) == 1  # the same request with a loopback Host


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "text/plain;charset=UTF-8"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "multipart/form-data; boundary=b"},
        {"Content-Type": "application/json", "Origin": "http://127.0.0.1:9999"},
        {"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"},
    ],
)
def test_the_server_takes_no_job_from_a_form_or_another_origin(
    server_app: Any, headers: dict[str, str]
) -> None:
    app = server_app()
    reply, pulled = call(app, "POST", "/evaluate", headers, [JOB])
    assert reply.status in (403, 415) and pulled == 0 and jobs(app) == 0


def test_server_token_comes_before_the_body_and_guards_the_docs(server_app: Any) -> None:
    app = server_app(TOKEN)
    chunked = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    reply, pulled = call(app, "POST", "/evaluate", chunked, stream(50_000_000))
    assert reply.status == 401 and pulled == 0 and reply.headers["www-authenticate"] == "Bearer"
    for path in ("/docs", "/redoc", "/openapi.json", "/queue"):
        assert call(app, path=path)[0].status == 401, path
        assert call(app, path=path, headers={"Authorization": f"Bearer {TOKEN}"})[0].status == 200, path
    assert call(app, path="/health")[0].status == 200
    authorized = {**chunked, "Authorization": f"Bearer {TOKEN}"}
    reply, pulled = call(app, "POST", "/evaluate", authorized, stream(50_000_000))
    assert reply.status == 413 and pulled * len(CHUNK) <= 1_000_000 + len(CHUNK) and jobs(app) == 0


def test_weak_server_tokens_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from lmms_eval.entrypoints.server import create_app
    from lmms_eval.entrypoints.server_args import TOKEN_ENV, ServerArgs

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    for weak in ("", "  ", "short"):
        with pytest.raises(ValidationError) as caught:
            ServerArgs(token=weak)
        assert "token" in str(caught.value) and "input_value" not in str(caught.value)
        with pytest.raises(ConfigError, match=r"^token: "):
            create_app(ServerArgs(state_dir=str(tmp_path)), token=weak)
    monkeypatch.setenv(TOKEN_ENV, "   ")
    with pytest.raises(ConfigError, match=r"^\$LMMS_EVAL_SERVER_TOKEN: the token is blank"):
        ServerArgs().configured_token()
    monkeypatch.delenv(TOKEN_ENV)
    (tmp_path / "token").write_text("abc\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"token_file .*: the token has 3 characters"):
        ServerArgs(token_file=str(tmp_path / "token")).configured_token()
    (tmp_path / "token").write_text(TOKEN + "\n", encoding="utf-8")
    assert ServerArgs(token_file=str(tmp_path / "token")).configured_token() == TOKEN
    with pytest.raises(ValidationError, match="not a host name"):
        ServerArgs.model_validate({"allowed_hosts": "http://x"})
    assert ServerArgs.model_validate({"allowed_hosts": "gpu-box,gpu-box.lan"}).allowed_hosts == [
        "gpu-box",
        "gpu-box.lan",
    ]


def test_serve_refuses_a_short_token_with_one_line(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "lmms_eval",
        "serve",
        "--state_dir",
        str(tmp_path),
        "--token",
        "tiny-secret",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--token" in done.stderr and "16" in done.stderr and "tiny-secret" not in done.stderr + done.stdout


# -- the web UI ---------------------------------------------------------------------------------------


@pytest.fixture
def ui_app(tmp_path: Path) -> Any:
    from lmms_eval.ui.app import UiOptions, create_ui_app

    (tmp_path / "logs").mkdir()

    def make(token: str | None = None, **options: Any) -> Any:
        # a server URL nobody listens on: a request that got through would answer 502
        return create_ui_app(
            UiOptions(tmp_path / "logs", server_url="http://127.0.0.1:9", token=token, **options)
        )

    return make


@pytest.mark.parametrize("path", ["/api/server/evaluate", "/api/preview"])
@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "text/plain;charset=UTF-8"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "multipart/form-data; boundary=b"},
        {"Content-Type": "application/json", "Origin": "http://127.0.0.1:9999"},
        {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
        {"Content-Type": "application/json", "Host": "evil.example"},
    ],
)
def test_the_ui_refuses_forms_other_origins_and_hosts(
    ui_app: Any, path: str, headers: dict[str, str]
) -> None:
    reply, pulled = call(ui_app(), "POST", path, headers, [JOB])
    assert reply.status in (400, 403, 415) and pulled == 0


def test_the_ui_page_itself_passes(ui_app: Any) -> None:
    app = ui_app(host="0.0.0.0", allowed_hosts=("gpu-box",))
    page = {"Host": "gpu-box:8765", "Origin": "http://gpu-box:8765", "Sec-Fetch-Site": "same-origin"}
    values = json.dumps({"model": "dummy", "tasks": "demo_qa"}).encode()
    reply, _ = call(app, "POST", "/api/preview", {**page, "Content-Type": "application/json"}, [values])
    assert reply.status == 200 and "lmms-eval" in reply.json()["command"]
    reply, _ = call(app, "POST", "/api/server/evaluate", {**page, "Content-Type": "application/json"}, [JOB])
    assert reply.status == 502  # forwarded (to a server that is not there)
    assert (
        call(app, "POST", "/api/preview", {**page, "Content-Type": "application/json"}, [b"{no"])[0].status
        == 422
    )
    assert call(app, path="/api/info", headers={"Host": "other-box"})[0].status == 400


def test_the_ui_token_is_checked_before_the_body_and_sets_a_strict_cookie(ui_app: Any) -> None:
    app = ui_app(token=TOKEN)
    chunked = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    reply, pulled = call(app, "POST", "/api/preview", chunked, stream(50_000_000))
    assert reply.status == 401 and pulled == 0
    reply, _ = call(app, path="/", query=f"token={TOKEN}")
    assert reply.status == 303 and reply.headers["location"] == "/"
    cookie = reply.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert call(app, path="/api/info", headers={"Cookie": cookie.split(";")[0]})[0].status == 200
    assert call(app, path="/api/info", headers={"Authorization": f"Bearer {TOKEN}"})[0].status == 200
    assert call(app, path="/", query="token=wrong-token-0123456789")[0].status == 401
    reply, pulled = call(
        app, "POST", "/api/preview", {**chunked, "Authorization": f"Bearer {TOKEN}"}, stream(50_000_000)
    )
    assert reply.status == 413 and pulled * len(CHUNK) <= 1_000_000 + len(CHUNK)


def test_weak_ui_tokens_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.ui.security import UI_TOKEN_ENV, ui_token

    monkeypatch.delenv(UI_TOKEN_ENV, raising=False)
    for weak in ("", " ", "short"):
        with pytest.raises(ConfigError, match=r"^--ui_token: "):
            ui_token("127.0.0.1", weak)
    monkeypatch.setenv(UI_TOKEN_ENV, "\t")
    with pytest.raises(ConfigError, match=r"^\$LMMS_EVAL_UI_TOKEN: the token is blank"):
        ui_token("0.0.0.0", None)


def test_ui_refuses_bad_allowed_hosts_with_one_line(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "lmms_eval", "ui", "--logs", str(tmp_path), "--no-browser",
            "--allowed_hosts", "http://gpu-box:80"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--allowed_hosts: 'http://gpu-box:80' is not a host name" in done.stderr


# -- a real uvicorn: the chunked body stops being read ------------------------------------------------


def _chunked_post(port: int, headers: str, total: int = 50_000_000) -> tuple[str, int]:
    """Send a chunked POST of ``total`` bytes until the server answers: (status line, bytes sent)."""
    piece = b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        head = f"POST /evaluate HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\n{headers}\r\n"
        s.sendall(head.encode())
        try:
            while sent < total and not select.select([s], [], [], 0)[0]:
                s.sendall(piece)
                sent += len(CHUNK)
            s.sendall(b"0\r\n\r\n")
        except OSError:  # the server closed the connection after answering
            pass
        return s.recv(4096).split(b"\r\n", 1)[0].decode(), sent


def test_uvicorn_answers_a_chunked_flood_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from lmms_eval.entrypoints.server import create_app
    from lmms_eval.entrypoints.server_args import ServerArgs

    monkeypatch.delenv("LMMS_EVAL_SERVER_TOKEN", raising=False)
    app = create_app(ServerArgs(state_dir=str(tmp_path)), token=TOKEN)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        port = sock.getsockname()[1]
        status, sent = _chunked_post(port, "Content-Type: application/json\r\n")
        assert status.startswith("HTTP/1.1 401") and sent < 25_000_000
        status, sent = _chunked_post(
            port, f"Content-Type: application/json\r\nAuthorization: Bearer {TOKEN}\r\n"
        )
        assert status.startswith("HTTP/1.1 413") and sent < 25_000_000  # socket buffers, not 50 MB
        assert jobs(app) == 0
    finally:
        server.should_exit = True
        thread.join(15)
        app.state.service.close()
