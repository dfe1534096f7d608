"""No script from data (issue 25), in Debian's Chromium through Playwright: runs whose task, metric,
group, field and file names, config values, targets and responses carry script payloads are shown in
every view (runs list, run with charts and breakdown, samples, one sample, compare); no payload runs,
each shows as text, and the page's own code causes no CSP violation. Each view is checked twice:
under the UI's CSP, and with the CSP bypassed (escaping alone must hold). HTML and SVG files of the
logs folder opened through ``/api/file`` are downloaded, never run in the UI's origin."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from PIL import Image

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
)
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)

IMG = '"><img src=x onerror="window.__pwned=1">'
SCRIPT = "<script>window.__pwned=2</script>"
SVG = "</title><svg onload=window.__pwned=3>"
JS_URL = "javascript:window.__pwned=4"
QUOTE = "' onmouseover='window.__pwned=5' x='"
TASK = f"task{IMG}"  # file names hold it too (the samples file is named after the task)
METRIC = f"acc{QUOTE}<b>"
GROUP = f"group{SVG}"
FIELD = f"field{IMG}"
MODEL_FOLDER = f"model{IMG}"
STAMPS = ("20260101_000000", "20260102_000000")
# what the init script records: CSP violations and dialogs raised by the page
WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
"""


def _results(accuracy: float) -> dict[str, Any]:
    key = f"{METRIC},none"
    return {
        "results": {TASK: {"alias": TASK, key: accuracy, f"{METRIC}_stderr,none": 0.1, "samples": 4}},
        "groups": {GROUP: {"alias": GROUP, "acc,none": accuracy, "acc_stderr,none": 0.1}},
        "group_subtasks": {GROUP: [TASK]},
        "configs": {TASK: {"task": TASK, "metric_list": [{"metric": METRIC}], "note": SVG}},
        "n-samples": {TASK: {"original": 4, "effective": 4}},
        "versions": {TASK: JS_URL},
        "config": {"model": f"dummy{SCRIPT}", "model_args": JS_URL, "tasks": TASK},
        "status": "completed",
        "schema_version": "2.2",
    }


def _line(doc_id: int, score: float, image: str) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
        "target": f"target{SCRIPT}",
        "input": f"prompt{SVG}",
        "resps": [[f"answer{IMG}"]],
        "filtered_resps": [JS_URL],
        "filter": "none",
        METRIC: score,
        "doc": {FIELD: f"value{doc_id % 2}{QUOTE}", "picture": {"_media": "image", "path": image}},
    }


def make_hostile_logs(root: Path) -> tuple[Path, list[str]]:
    """Two runs of one task, every name and value a payload; an HTML and an SVG file; a FIFO."""
    logs = root / "logs"
    ids = []
    for n, (stamp, accuracy) in enumerate(zip(STAMPS, (0.75, 0.25), strict=True)):
        folder = logs / f"run{n}" / MODEL_FOLDER
        folder.mkdir(parents=True)
        image = f"pic{IMG}.png"
        Image.new("RGB", (8, 8), "red").save(folder / image, format="PNG")
        (folder / f"{stamp}_results.json").write_text(json.dumps(_results(accuracy)))
        scores = [1.0, 1.0, 1.0, 0.0] if n == 0 else [0.0, 0.0, 1.0, 0.0]
        lines = [json.dumps(_line(i, s, image)) for i, s in enumerate(scores)]
        (folder / f"{stamp}_samples_{TASK}.jsonl").write_text("\n".join(lines) + "\n")
        ids.append(f"run{n}/{MODEL_FOLDER}/{stamp}")
    (logs / "evil.html").write_text("<script>window.__pwned=6; parent.__pwned=6</script>html page")
    (logs / "evil.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><script>window.__pwned=7</script></svg>'
    )
    os.mkfifo(logs / f"fifo{IMG}_results.json")  # listed as skipped: its name is shown too
    return logs, ids


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    import uvicorn

    from lmms_eval.ui.app import UiOptions, create_ui_app
    from lmms_eval.ui.proxy import free_port

    logs, ids = make_hostile_logs(tmp_path_factory.mktemp("ui_xss"))
    app = create_ui_app(UiOptions(logs, server_url="http://127.0.0.1:9", server_token="s" * 20))
    sock = free_port()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the UI did not start"
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/", ids
    server.should_exit = True
    thread.join(15)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield launched
        launched.close()


class Watched:
    """A page with what it raised: dialogs, page errors, CSP reports in the console."""

    def __init__(self, browser: Any, bypass_csp: bool) -> None:
        self.context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=bypass_csp)
        self.context.set_default_timeout(15_000)
        self.context.add_init_script(WATCH)
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.console: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.console.append(m.text))

    def check(self, where: str) -> None:
        page = self.page
        page.wait_for_timeout(300)  # let an injected handler (an <img onerror>) fire if there were one
        assert page.evaluate("window.__pwned") is None, f"{where}: a payload ran"
        assert self.dialogs == [], where
        assert self.errors == [], where
        assert page.evaluate("window.__csp") == [], f"{where}: CSP violations"
        assert not [m for m in self.console if "Content Security Policy" in m], where
        assert page.locator("img[onerror], svg[onload], script:not([src]), [onmouseover]").count() == 0, where


@pytest.fixture(params=["csp enforced", "csp bypassed"])
def watched(request: pytest.FixtureRequest, browser: Any) -> Iterator[Watched]:
    w = Watched(browser, bypass_csp=request.param == "csp bypassed")
    yield w
    w.context.close()


def _text(page: Any) -> str:
    return page.locator("#view").inner_text()


def test_no_view_runs_a_payload(watched: Watched, ui: tuple[str, list[str]]) -> None:
    url, (a, b) = ui
    page = watched.page
    page.goto(url + "#/runs")
    page.locator("tr.run-row").nth(1).wait_for()
    page.locator("#runs-skipped summary").click()
    page.locator("#runs-skipped li").wait_for()
    shown = _text(page)
    assert MODEL_FOLDER in shown and TASK in shown and f"fifo{IMG}_results.json" in shown
    watched.check("runs list")

    page.goto(url + f"#/run/{quote(a, safe='')}")
    page.locator("#run-metrics").wait_for()
    page.locator("table.categories").first.wait_for()
    shown = _text(page)
    for payload in (TASK, METRIC, GROUP, FIELD, f"dummy{SCRIPT}", JS_URL, SVG):
        assert payload in shown, payload
    labels = page.locator("#run-chart text.label title").all_text_contents()
    assert f"{TASK} {METRIC}" in labels
    assert page.locator("#breakdown svg.chart").count() == 1
    assert page.locator("#breakdown svg.chart").get_attribute("id") != f"cat-{TASK}-{FIELD}"
    watched.check("run view")

    page.goto(url + f"#/samples/{quote(a, safe='')}/{quote(TASK, safe='')}")
    page.locator(".srow").nth(3).wait_for()
    page.locator(".srow img.thumb").first.wait_for()
    shown = _text(page)
    assert f"target{SCRIPT}" in shown and f"answer{IMG}" in shown and JS_URL in shown
    page.select_option("#field-filter", FIELD)
    page.locator("#value-filter option").nth(1).wait_for(state="attached")
    assert page.locator("#value-filter option").all_text_contents() == [f"value0{QUOTE}", f"value1{QUOTE}"]
    watched.check("samples list")

    page.locator(".srow").first.click()
    page.locator("#sample-detail h2").wait_for()
    detail = page.locator("#sample-detail").inner_text()
    # the document is shown as JSON: its quotes are escaped
    assert f"prompt{SVG}" in detail and json.dumps(FIELD) in detail and json.dumps(f"pic{IMG}.png") in detail
    watched.check("one sample")

    page.goto(url + f"#/compare/{quote(a, safe='')}/{quote(b, safe='')}")
    page.locator("#cmp-table td.diff").wait_for()
    page.locator("tr.disagree-row").first.wait_for()
    shown = _text(page)
    assert TASK in shown and METRIC in shown and f"target{SCRIPT}" in shown
    watched.check("compare")


@pytest.mark.parametrize("name", ["evil.html", "evil.svg"])
def test_html_and_svg_of_the_logs_folder_do_not_run_in_the_ui_origin(
    watched: Watched, ui: tuple[str, list[str]], name: str
) -> None:
    url, _ids = ui
    page = watched.page
    page.goto(url + "#/runs")
    page.locator("tr.run-row").first.wait_for()
    with page.expect_download() as download:
        page.evaluate(
            """(href) => { const a = document.createElement('a'); a.href = href; document.body.append(a); a.click(); }""",
            url + f"api/file?path={name}",
        )
    assert download.value.suggested_filename == name  # downloaded, not rendered
    assert page.url.startswith(url) and "api/file" not in page.url
    watched.check(f"after opening {name}")
