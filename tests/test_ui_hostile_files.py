"""The web UI survives any file in its logs folder (issue 25): FIFOs, devices, dangling links,
huge, deeply nested, binary, non-UTF-8 and truncated results files, bad samples lines and folders
nested too deep are skipped with a note (never a 500 or a hang); files of the logs folder are served
with ``nosniff``, ``Content-Security-Policy: sandbox`` and as attachments unless they are images,
audio or video; every page carries the UI's strict CSP."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from lmms_eval.ui.app import UiOptions, create_ui_app
from lmms_eval.ui.runs import MAX_DEPTH, MAX_RESULTS_BYTES

STAMP = "20260101_000000"
RUN = f"m/{STAMP}"
GOOD = {
    "results": {"t": {"acc,none": 0.5, "samples": 4}},
    "configs": {"t": {"task": "t", "metric_list": [{"metric": "acc"}]}},
    "status": "completed",
    "schema_version": "2.2",
}
STATIC = Path(__file__).resolve().parents[1] / "lmms_eval" / "ui" / "static"


def _client(logs: Path) -> TestClient:
    app = create_ui_app(UiOptions(logs, server_url="http://127.0.0.1:9", server_token="s" * 20))
    return TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)


def _get(client: TestClient, route: str, /, **params: Any) -> httpx.Response:
    """GET in a thread: a request still running after 30 s is a hang (the thread is left behind)."""
    answer: list[Any] = []

    def call() -> None:
        try:
            answer.append(client.get(route, params=params))
        except BaseException as exc:  # reported below
            answer.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), f"GET {route} {params} hung"
    [got] = answer
    assert not isinstance(got, BaseException), repr(got)
    assert got.status_code != 500, got.text
    return got


def _logs(tmp_path: Path) -> tuple[Path, Path]:
    logs = tmp_path / "logs"
    folder = logs / "m"
    folder.mkdir(parents=True)
    return logs, folder


def _mknod_zero(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # like /dev/zero: endless bytes
    except PermissionError:
        pytest.skip("creating a device file needs CAP_MKNOD")


def _sparse(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(MAX_RESULTS_BYTES + 1)  # no disk used; the size is what counts


HOSTILE_RESULTS: dict[str, tuple[Callable[[Path], object], str]] = {
    "fifo": (os.mkfifo, "not a regular file (FIFO)"),
    "device": (_mknod_zero, "not a regular file (device)"),
    "dangling link": (lambda p: p.symlink_to(p.parent / "nowhere"), "cannot read"),
    "too large": (_sparse, "over the limit"),
    "nested 200k deep": (lambda p: p.write_text("[" * 200_000 + "]" * 200_000), "nested deeper than"),
    "nested 100 deep": (lambda p: p.write_text('{"results": ' + "[" * 100 + "]" * 100 + "}"), "nested"),
    "binary": (lambda p: p.write_bytes(bytes(range(256)) * 8), "not UTF-8"),
    "non-UTF-8": (lambda p: p.write_bytes(b'{"results": "\xff\xfe"}'), "not UTF-8"),
    "truncated": (lambda p: p.write_text(json.dumps(GOOD)[:40]), "not JSON or truncated"),
    "not an object": (lambda p: p.write_text("[1, 2]"), "not a results file"),
    "wrong shape": (lambda p: p.write_text('{"results": {"t": 3}}'), "not a results file"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_RESULTS))
def test_a_hostile_results_file_is_skipped_with_a_note(tmp_path: Path, kind: str) -> None:
    logs, folder = _logs(tmp_path)
    make, reason = HOSTILE_RESULTS[kind]
    make(folder / f"{STAMP}_results.json")
    good = logs / "good"
    good.mkdir()
    (good / "20260102_000000_results.json").write_text(json.dumps(GOOD))
    client = _client(logs)
    listing = _get(client, "/api/runs")
    assert listing.status_code == 200
    body = listing.json()
    assert "good/20260102_000000" in [r["id"] for r in body["runs"]], "the other runs are still listed"
    [skipped] = body["skipped"]
    assert skipped["path"] == f"m/{STAMP}_results.json" and reason in skipped["reason"], skipped
    # the run view, compare and the file route answer too
    for path, params in (
        ("/api/run", {"id": RUN}),
        ("/api/compare", {"a": RUN, "b": "good/20260102_000000"}),
        ("/api/file", {"path": f"m/{STAMP}_results.json"}),
    ):
        assert _get(client, path, **params).status_code in (200, 404, 422), path


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_a_results_file_without_read_permission_is_skipped(tmp_path: Path) -> None:
    logs, folder = _logs(tmp_path)
    results = folder / f"{STAMP}_results.json"
    results.write_text(json.dumps(GOOD))
    results.chmod(0)
    [skipped] = _get(_client(logs), "/api/runs").json()["skipped"]
    assert "cannot read" in skipped["reason"]


def test_folders_nested_too_deep_are_not_searched(tmp_path: Path) -> None:
    logs, folder = _logs(tmp_path)
    deep = folder
    for _ in range(MAX_DEPTH + 3):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / f"{STAMP}_results.json").write_text(json.dumps(GOOD))
    (folder / f"{STAMP}_results.json").write_text(json.dumps(GOOD))
    body = _get(_client(logs), "/api/runs").json()
    assert [r["id"] for r in body["runs"]] == [RUN]
    [skipped] = body["skipped"]
    assert f"more than {MAX_DEPTH} folders deep" in skipped["reason"]


BAD_LINES = {
    "not JSON": b"this is not json",
    "non-UTF-8": b'{"doc_id": 1, "target": "\xff"}',
    "nested 200k deep": b'{"doc_id": 1, "doc": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    "a JSON list": b"[1, 2, 3]",
    "wrong types": b'{"doc_id": "x", "resps": 5}',
    "truncated": b'{"doc_id": 1, "target": "abc',
}


@pytest.fixture
def bad_samples(tmp_path: Path) -> tuple[TestClient, list[str]]:
    """A run whose samples file has good lines around each kind of bad line."""
    logs, folder = _logs(tmp_path)
    (folder / f"{STAMP}_results.json").write_text(json.dumps(GOOD))
    good = {"doc_id": 0, "target": "a", "resps": [["a"]], "filtered_resps": ["a"], "filter": "none"}
    lines = [json.dumps(good | {"acc": 1.0, "doc": {"colour": "red"}}).encode()]
    kinds = list(BAD_LINES)
    for i, kind in enumerate(kinds):
        lines.append(BAD_LINES[kind])
        lines.append(json.dumps(good | {"doc_id": i + 1, "acc": 0.0, "doc": {"colour": "blue"}}).encode())
    (folder / f"{STAMP}_samples_t.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return _client(logs), kinds


def test_bad_samples_lines_are_marked_rows_and_one_line_422s(
    bad_samples: tuple[TestClient, list[str]],
) -> None:
    client, kinds = bad_samples
    page = _get(client, "/api/samples", run=RUN, task="t")
    assert page.status_code == 200
    rows = page.json()["rows"]
    marked = [r for r in rows if r["status"] == "unreadable"]
    assert [r["line"] for r in marked] == [1 + 2 * i for i in range(len(kinds))]
    for row in marked:
        assert re.fullmatch(
            rf"{STAMP}_samples_t\.jsonl: line {row['line'] + 1} is not a samples record \(.+\)", row["error"]
        )
    for row in marked:
        one = _get(client, "/api/sample", run=RUN, task="t", line=row["line"])
        assert one.status_code == 422 and "\n" not in one.json()["detail"]
        assert one.json()["detail"].startswith(f"{STAMP}_samples_t.jsonl: line {row['line'] + 1} ")
    assert _get(client, "/api/sample", run=RUN, task="t", line=0).json()["status"] == "correct"
    # filters, facets, the per-category breakdown and search read every line: they answer too
    failed = _get(client, "/api/samples", run=RUN, task="t", status="failed").json()
    assert failed["total"] == len(kinds)
    assert _get(client, "/api/samples", run=RUN, task="t", status="wrong").json()["total"] == len(kinds)
    assert _get(client, "/api/facets", run=RUN, task="t").json()["facets"] == {"colour": ["blue", "red"]}
    assert _get(client, "/api/breakdown", run=RUN, task="t").status_code == 200
    assert _get(client, "/api/samples", run=RUN, task="t", q="not json").json()["total"] == 1
    assert _get(client, "/api/media", run=RUN, task="t", line=1, n=0).status_code == 422


def test_a_fifo_samples_file_is_skipped_not_opened(tmp_path: Path) -> None:
    logs, folder = _logs(tmp_path)
    (folder / f"{STAMP}_results.json").write_text(json.dumps(GOOD))
    os.mkfifo(folder / f"{STAMP}_samples_t.jsonl")
    client = _client(logs)
    body = _get(client, "/api/runs").json()
    assert body["skipped"] == [
        {"path": f"m/{STAMP}_samples_t.jsonl", "reason": "not a regular file (FIFO); skipped"}
    ]
    assert _get(client, "/api/samples", run=RUN, task="t").status_code == 404
    assert _get(client, "/api/run", id=RUN).json()["task_results"]["t"]["has_samples"] is False


def test_the_file_route_refuses_bad_paths_and_special_files(tmp_path: Path) -> None:
    logs, folder = _logs(tmp_path)
    os.mkfifo(folder / "pipe.json")
    (folder / "sub").mkdir()
    client = _client(logs)
    for path, status in (("a\x00b", 422), ("m/pipe.json", 404), ("m/sub", 404), ("m/" + "x" * 5000, 422)):
        answer = _get(client, "/api/file", path=path)
        assert answer.status_code in {status, 404}, (path, answer.text)
        assert "\n" not in answer.json()["detail"]
    assert _get(client, "/api/file", path="a\x00b").status_code == 422


def test_the_file_route_refuses_a_device(tmp_path: Path) -> None:
    logs, folder = _logs(tmp_path)
    _mknod_zero(folder / "zero.png")
    assert _get(_client(logs), "/api/file", path="m/zero.png").status_code == 404


SERVED = {
    "page.html": ("attachment", "application/octet-stream"),
    "drawing.svg": ("attachment", "application/octet-stream"),
    "blob.unknown": ("attachment", "application/octet-stream"),
    "noext": ("attachment", "application/octet-stream"),
    "notes.json": ("attachment", "text/plain; charset=utf-8"),
    "pic.png": ("inline", "image/png"),
    "tone.mp3": ("inline", "audio/mpeg"),
    "clip.mp4": ("inline", "video/mp4"),
    "PIC.JPG": ("inline", "image/jpeg"),
}


def _check_file_headers(answer: httpx.Response, name: str) -> None:
    disposition, kind = SERVED[name]
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["content-security-policy"] == "sandbox"
    assert answer.headers["content-type"] == kind
    assert answer.headers["content-disposition"].split(";")[0] == disposition


def test_files_are_served_with_nosniff_sandbox_and_as_attachments(tmp_path: Path) -> None:
    logs, folder = _logs(tmp_path)
    for name in SERVED:
        # the content does not decide the type: an HTML page named .png is still served as image/png
        (folder / name).write_text("<html><script>alert(1)</script></html>")
    client = _client(logs)
    for name in SERVED:
        _check_file_headers(_get(client, "/api/file", path=f"m/{name}"), name)
    odd = folder / 'x"; filename=evil.html'
    odd.write_text("<script>alert(1)</script>")
    answer = _get(client, "/api/file", path=f"m/{odd.name}")
    assert answer.headers["content-disposition"].startswith("attachment; filename*=utf-8''x%22")


def test_media_are_served_by_the_same_rule(tmp_path: Path) -> None:
    logs, folder = _logs(tmp_path)
    (folder / f"{STAMP}_results.json").write_text(json.dumps(GOOD))
    names = ["page.html", "drawing.svg", "pic.png", "tone.mp3", "clip.mp4"]
    for name in names:
        (folder / name).write_text("<svg onload=alert(1)>")
    doc = {name: {"_media": "image", "path": name} for name in names}
    line = {"doc_id": 0, "target": "a", "resps": [["a"]], "filtered_resps": ["a"], "doc": doc}
    (folder / f"{STAMP}_samples_t.jsonl").write_text(json.dumps(line) + "\n")
    client = _client(logs)
    for n, name in enumerate(names):
        _check_file_headers(_get(client, "/api/media", run=RUN, task="t", line=0, n=n), name)


def test_every_ui_response_carries_the_strict_csp(tmp_path: Path) -> None:
    logs, _ = _logs(tmp_path)
    client = _client(logs)
    for path in ("/", "/static/app.js", "/static/style.css", "/api/runs", "/api/run?id=nothing"):
        headers = client.get(path).headers
        policy = dict(part.strip().split(" ", 1) for part in headers["content-security-policy"].split(";"))
        assert policy["default-src"] == "'self'" and policy["script-src"] == "'self'", path
        assert policy["style-src"] == "'self'" and policy["object-src"] == "'none'", path
        assert policy["base-uri"] == "'none'" and policy["frame-ancestors"] == "'none'", path
        assert policy["form-action"] == "'self'", path
        assert "unsafe" not in headers["content-security-policy"], path
        assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"


def test_the_front_end_has_no_inline_script_handler_or_style() -> None:
    """What the CSP would refuse is not written: no inline script, ``on...=`` handler or ``style=``
    attribute, and every HTML string goes through ``html`...``` and ``setHtml``."""
    for path in [STATIC / "index.html", *STATIC.glob("*.js"), *STATIC.glob("views/*.js")]:
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", source), path
        assert not re.search(r"""\son[a-z]+\s*=\s*["'`$]""", source, re.I), path
        assert not re.search(r"""\sstyle\s*=\s*["'`$]""", source, re.I), path
        assert "javascript:" not in source, path
        if path.name != "api.js":
            assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", source), path
