"""The web UI's API (``lmms_eval.ui``) on runs made here with the ``dummy`` model: listing, run
detail, sample pages, filters and search, media, compare (the numbers of ``compare_runs``),
confinement to the logs folder, the token beyond loopback, the launch preview, the CLI."""

from __future__ import annotations

import json
import shlex
import struct
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lmms_eval.compare import compare_runs, load_doc_scores
from lmms_eval.results import ResultsFile, find_runs, read_samples
from lmms_eval.ui.app import UiOptions, create_ui_app

PICS_YAML = """task: ui_pics
dataset_path: json
dataset_kwargs:
  data_files:
    test: ui_pics.jsonl
test_split: test
output_type: generate_until
doc_to_text: question
doc_to_target: answer
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""
COLOURS = ("red", "green", "blue", "yellow", "purple", "orange")


def _media_task(root: Path) -> Path:
    """A task whose documents name image files (and one audio file) inside the logs folder."""
    from PIL import Image

    media, tasks = root / "logs" / "media", root / "tasks"
    media.mkdir(parents=True)
    tasks.mkdir()
    tone = media / "tone.wav"
    with wave.open(str(tone), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"".join(struct.pack("<h", 3000 if (i // 10) % 2 else -3000) for i in range(4000)))
    rows = []
    for i, colour in enumerate(COLOURS):
        Image.new("RGB", (24 + 8 * i, 20), colour).save(media / f"img{i}.png")
        row: dict[str, Any] = {
            "id": i,
            "question": "What colour?",
            "answer": colour,
            "image": str(media / f"img{i}.png"),
        }
        rows.append(row | ({"audio": str(tone)} if i == 0 else {}))
    (tasks / "ui_pics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tasks / "ui_pics.yaml").write_text(PICS_YAML)
    return tasks


def make_logs(root: Path) -> Path:
    """Four runs under root/logs: demo_qa at accuracy 0.8 (a) and 0.4 (b), demo_shapes, ui_pics."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    tasks = _media_task(root)
    logs = root / "logs"
    common: dict[str, Any] = {"log_samples": True, "show_progress": False}
    for name, accuracy in (("a", 0.8), ("b", 0.4)):
        args = f"answer_field=answer,accuracy={accuracy}"
        simple_evaluate("dummy", args, ["demo_qa"], output_path=str(logs / name), **common)
    simple_evaluate(
        "dummy",
        "answer_field=answer,accuracy=0.7",
        ["demo_shapes"],
        output_path=str(logs / "shapes"),
        **common,
    )
    manager = TaskManager(include_path=str(tasks))
    simple_evaluate(
        "dummy",
        "answer_field=answer,accuracy=0.5",
        ["ui_pics"],
        task_manager=manager,
        output_path=str(logs / "pics"),
        **common,
    )
    return logs


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("ui")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LMMS_EVAL_HOME", str(root / "home"))
        yield make_logs(root)


@pytest.fixture(scope="module")
def client(logs: Path) -> TestClient:
    # a remote server nobody listens on: these tests need no eval server (the browser test has one)
    return TestClient(
        create_ui_app(UiOptions(logs, server_url="http://127.0.0.1:9", server_token="s3cret-server-token")),
        base_url="http://127.0.0.1",  # a loopback Host (the UI refuses TestClient's "testserver")
    )


def run_id(client: TestClient, prefix: str) -> str:
    return next(r["id"] for r in client.get("/api/runs").json()["runs"] if r["id"].startswith(prefix))


def test_runs_lists_every_results_file_with_its_scores(client: TestClient, logs: Path) -> None:
    runs = client.get("/api/runs").json()["runs"]
    assert sorted(r["id"].split("/")[0] for r in runs) == ["a", "b", "pics", "shapes"]
    for listed in runs:
        files = next(
            f
            for f in find_runs(logs)
            if f.stamp == listed["stamp"] and f.folder.parts[-2] == listed["id"].split("/")[0]
        )
        assert files.results is not None
        results = ResultsFile.load(files.results)
        assert listed["status"] == results.status == "completed"
        assert listed["tasks"] == list(results.results)
        [score] = listed["scores"]
        row = next(r for r in results.results[score["task"]].metrics() if r.metric == score["metric"])
        assert (score["value"], score["ci_lower"], score["ci_upper"]) == (
            row.value,
            row.ci_lower,
            row.ci_upper,
        )


def test_run_detail_has_metrics_config_and_categories(client: TestClient) -> None:
    detail = client.get("/api/run", params={"id": run_id(client, "shapes/")}).json()
    metrics = {m["metric"] for m in detail["task_results"]["demo_shapes"]["metrics"]}
    assert {"accuracy", "colour_accuracy", "shape_accuracy"} <= metrics
    assert detail["config"]["model"] == "dummy" and detail["versions"]["lmms_eval"]
    breakdown = client.get("/api/breakdown", params={"run": detail["id"], "task": "demo_shapes"}).json()
    by_category = {r["value"]: r for r in breakdown["fields"]["category"]}
    assert sum(r["n"] for r in by_category.values()) == 200
    colour = by_category["colour"]
    colour_metric = next(
        m for m in detail["task_results"]["demo_shapes"]["metrics"] if m["metric"] == "colour_accuracy"
    )
    assert colour["mean"] == pytest.approx(colour_metric["value"])


def test_sample_pages_follow_the_file(client: TestClient, logs: Path) -> None:
    rid = run_id(client, "a/")
    [path] = list(logs.glob("a/*/*.jsonl"))
    records = list(read_samples(path))
    page = client.get(
        "/api/samples", params={"run": rid, "task": "demo_qa", "offset": 50, "limit": 20}
    ).json()
    assert page["total"] == page["all"] == len(records)
    assert [r["doc_id"] for r in page["rows"]] == [r.doc_id for r in records[50:70]]
    assert [r["filtered_resps"] for r in page["rows"]] == [r.filtered_resps for r in records[50:70]]
    wrong = client.get(
        "/api/samples", params={"run": rid, "task": "demo_qa", "status": "wrong", "limit": 500}
    ).json()
    expected_wrong = [r.doc_id for r in records if r.metrics["exact_match"] < 0.5]
    assert [r["doc_id"] for r in wrong["rows"]] == expected_wrong and 0 < wrong["total"] < len(records)
    category = client.get(
        "/api/samples",
        params={"run": rid, "task": "demo_qa", "field": "category", "value": "addition", "limit": 500},
    ).json()
    assert [r["doc_id"] for r in category["rows"]] == [
        r.doc_id for r in records if r.doc["category"] == "addition"
    ]
    question = records[37].doc["question"]
    found = client.get("/api/samples", params={"run": rid, "task": "demo_qa", "q": question.upper()}).json()
    assert 37 in [r["doc_id"] for r in found["rows"]]
    assert all(question in r["input"] for r in found["rows"])
    one = client.get("/api/sample", params={"run": rid, "task": "demo_qa", "line": 37}).json()
    assert one["doc_id"] == 37 and one["input"] == records[37].input


def test_bad_parameters_get_one_clear_line(client: TestClient) -> None:
    rid = run_id(client, "a/")
    answer = client.get("/api/samples", params={"run": rid, "task": "demo_qa", "status": "maybe"})
    assert (
        answer.status_code == 422
        and "status 'maybe' is not allowed; use one of all, correct" in answer.json()["detail"]
    )
    answer = client.get("/api/samples", params={"run": rid, "task": "nope"})
    assert answer.status_code == 404 and "no samples file for task 'nope'" in answer.json()["detail"]
    assert client.get("/api/run", params={"id": "../x"}).status_code == 404
    answer = client.get("/api/samples", params={"run": rid, "task": "demo_qa", "offset": "x"})
    assert answer.json()["detail"] == "offset must be a whole number, got 'x'"


def test_media_are_served_from_the_logs_folder_and_drawn_specs(client: TestClient) -> None:
    pics = run_id(client, "pics/")
    row = client.get("/api/samples", params={"run": pics, "task": "ui_pics", "limit": 1}).json()["rows"][0]
    assert [m["kind"] for m in row["media"]] == ["image", "audio"]
    image = client.get("/api/media", params={"run": pics, "task": "ui_pics", "line": 0, "n": 0})
    assert (
        image.status_code == 200
        and image.headers["content-type"] == "image/png"
        and image.content[:4] == b"\x89PNG"
    )
    audio = client.get("/api/media", params={"run": pics, "task": "ui_pics", "line": 0, "n": 1})
    assert audio.status_code == 200 and audio.content[:4] == b"RIFF"
    shapes = run_id(client, "shapes/")
    drawn = client.get("/api/media", params={"run": shapes, "task": "demo_shapes", "line": 3, "n": 0})
    assert drawn.status_code == 200 and drawn.content[:4] == b"\x89PNG"


def test_files_outside_the_logs_folder_are_refused(client: TestClient, logs: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not for the browser")
    for path in ("../../../../etc/passwd", str(outside), "a/../../" + outside.name, "%2e%2e/secret.txt"):
        answer = client.get("/api/file", params={"path": path})
        assert answer.status_code in (403, 404), path
        assert "not for the browser" not in answer.text
    answer = client.get("/api/file", params={"path": str(outside)})
    assert answer.status_code == 403 and "outside the logs folder" in answer.json()["detail"]
    inside = next(logs.glob("a/*/*_results.json"))
    assert (
        client.get("/api/file", params={"path": str(inside.relative_to(logs))}).json()["status"]
        == "completed"
    )
    assert client.get("/static/../app.py").status_code == 404


def test_media_paths_outside_the_logs_folder_are_refused(tmp_path: Path) -> None:
    from PIL import Image

    from lmms_eval.ui.media import media_content

    logs, elsewhere = tmp_path / "logs", tmp_path / "elsewhere.png"
    logs.mkdir()
    Image.new("RGB", (4, 4)).save(elsewhere)
    doc = {
        "image": {"_media": "image", "path": str(elsewhere)},
        "up": {"_media": "image", "path": "../elsewhere.png"},
    }
    for n in (0, 1):
        with pytest.raises(Exception, match="outside the logs folder"):
            media_content(logs, logs, "t", doc, n)


def test_compare_gives_the_numbers_of_compare_runs(client: TestClient, logs: Path) -> None:
    a, b = run_id(client, "a/"), run_id(client, "b/")
    shown = client.get("/api/compare", params={"a": a, "b": b}).json()
    [results_a] = logs.glob("a/*/*_results.json")
    [results_b] = logs.glob("b/*/*_results.json")
    expected = compare_runs(load_doc_scores(results_a), load_doc_scores(results_b)).to_dict()
    [got], [want] = shown["report"]["comparisons"], expected["comparisons"]
    for key in ("diff", "stderr", "ci_lower", "ci_upper", "p_value", "mean_a", "mean_b", "n"):
        assert got[key] == want[key], key
    [disagree] = shown["disagreements"]
    a_scores = {r.doc_id: r.metrics["exact_match"] for r in read_samples(next(logs.glob("a/*/*.jsonl")))}
    b_scores = {r.doc_id: r.metrics["exact_match"] for r in read_samples(next(logs.glob("b/*/*.jsonl")))}
    differing = sorted(d for d in a_scores if a_scores[d] != b_scores[d])
    assert disagree["total"] == len(differing) and [d["doc_id"] for d in disagree["docs"]] == differing
    first = disagree["docs"][0]
    assert {first["answer_a"], first["answer_b"]} & {"[wrong]"}


def test_beyond_loopback_every_request_needs_the_token(logs: Path) -> None:
    app = create_ui_app(UiOptions(logs, server_url="http://127.0.0.1:9", token="ui-token-0123456"))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for path in ("/", "/api/runs", "/static/app.js", "/api/file?path=x"):
            answer = client.get(path)
            assert answer.status_code == 401 and "needs its token" in answer.json()["detail"], path
        assert client.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert (
            client.get("/api/runs", headers={"Authorization": "Bearer ui-token-0123456"}).status_code == 200
        )
        opened = client.get("/?token=ui-token-0123456", follow_redirects=False)
        assert opened.status_code == 303 and "httponly" in opened.headers["set-cookie"].lower()
        assert client.get("/api/runs").status_code == 200  # the cookie now


def test_the_token_needed_beyond_loopback_is_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.ui.security import ui_token

    monkeypatch.delenv("LMMS_EVAL_UI_TOKEN", raising=False)
    assert ui_token("127.0.0.1", None) == (None, False)
    token, generated = ui_token("0.0.0.0", None)
    assert generated and token and len(token) > 20
    assert ui_token("0.0.0.0", "mine-is-16-chars") == ("mine-is-16-chars", False)


def test_no_secret_reaches_a_response(client: TestClient) -> None:
    seen = "".join(
        client.get(path).text
        for path in ("/api/info", "/api/runs", "/api/options", "/api/server/models", "/api/server/jobs/abc")
    )
    assert "s3cret-server-token" not in seen
    assert "unreachable" in client.get("/api/server/models").json()["detail"]
    assert client.get("/api/server/jobs/..%2Fx").status_code in (404, 422)


def test_listings_are_asked_in_full_and_the_query_is_forwarded(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval.ui.proxy import ServerLink

    asked: list[str] = []

    async def call(_self: ServerLink, method: str, path: str, body: object = None) -> tuple[int, object]:
        asked.append(f"{method} {path}")
        return 200, {"models": []}

    monkeypatch.setattr(ServerLink, "call", call)
    assert client.get("/api/server/models?detail=1").json() == {"models": []}
    assert client.get("/api/server/tasks").status_code == 200
    assert asked == ["GET models?detail=1", "GET tasks"]
    launch = (Path(__file__).resolve().parents[1] / "lmms_eval/ui/static/views/launch.js").read_text()
    assert "'/api/server/models?detail=1'" in launch and "'/api/server/tasks?detail=1'" in launch


def test_options_follow_the_settings_model_and_the_preview_quotes(client: TestClient) -> None:
    from lmms_eval.settings import flag_name, options

    listed = {o["name"]: o for o in client.get("/api/options").json()["options"]}
    for name, _ in options("run"):
        assert listed[name]["flag"] == flag_name(name)
    assert listed["log_samples"]["kind"] == "bool" and listed["cache_requests"]["choices"] == [
        "true",
        "refresh",
        "delete",
    ]
    values = {
        "model": "dummy",
        "tasks": "demo_qa",
        "limit": "8",
        "log_samples": True,
        "system_instruction": "it's $HOME; ok",
    }
    shown = client.post("/api/preview", json=values).json()
    words = shlex.split(shown["command"])
    assert words[:2] == ["lmms-eval", "eval"]
    assert words[words.index("--system_instruction") + 1] == "it's $HOME; ok"
    assert "--log_samples" in words and words[words.index("--limit") + 1] == "8"
    import yaml

    assert yaml.safe_load(shown["yaml"]) == {
        "model": "dummy",
        "tasks": "demo_qa",
        "system_instruction": "it's $HOME; ok",
        "limit": 8,
        "log_samples": True,
    }
    assert shown["body"]["limit"] == 8 and shown["error"] is None
    bad = client.post("/api/preview", json={**values, "limit": "lots"}).json()
    assert "--limit" in bad["error"]
    unknown = client.post("/api/preview", json={**values, "limitt": "1"})
    assert unknown.status_code == 422 and "unknown option 'limitt'" in unknown.json()["detail"]


def test_samples_index_is_rebuilt_when_the_file_grows(tmp_path: Path, logs: Path) -> None:
    from lmms_eval.ui.samples import SamplesCache

    source = next(logs.glob("a/*/*.jsonl"))
    copy = tmp_path / source.name
    lines = source.read_text().splitlines(keepends=True)
    copy.write_text("".join(lines[:10]) + "\n")
    cache = SamplesCache()
    assert len(cache.get(copy)) == 10
    time.sleep(0.01)
    copy.write_text("".join(lines[:25]))
    assert len(cache.get(copy)) == 25
    assert cache.get(copy).record(24).doc_id == 24


def test_the_cli_refuses_bad_flags_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval.cli.ui import main

    assert main(["--port", "70000", "--no-browser"]) == 1
    assert "--port must be between 0 and 65535, got 70000" in capsys.readouterr().err
    assert main(["--server", "ftp://x", "--no-browser"]) == 1
    assert "--server must be an http:// or https:// URL" in capsys.readouterr().err
    monkeypatch.setenv("LMMS_SERVER_PORT", "http")
    assert main(["--no-browser", "--logs", str(tmp_path)]) == 1
    assert "$LMMS_SERVER_PORT must be a port number" in capsys.readouterr().err


def test_the_cli_serves_and_opens_the_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx
    import uvicorn

    from lmms_eval.cli.ui import main

    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    servers: list[uvicorn.Server] = []
    real_run = uvicorn.Server.run

    def run(self: uvicorn.Server, sockets: Any = None) -> None:
        servers.append(self)
        real_run(self, sockets)

    monkeypatch.setattr(uvicorn.Server, "run", run)
    monkeypatch.setenv("LMMS_SERVER_PORT", "0")
    thread = threading.Thread(
        target=main, args=(["--logs", str(tmp_path / "logs"), "--server", "http://127.0.0.1:9"],), daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 20
    while not opened and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert opened and opened[0].startswith("http://127.0.0.1:")
        assert httpx.get(opened[0] + "api/runs", timeout=5).json() == {"runs": [], "skipped": []}
        assert "<title>lmms-eval</title>" in httpx.get(opened[0], timeout=5).text
    finally:
        servers[0].should_exit = True
        thread.join(10)
