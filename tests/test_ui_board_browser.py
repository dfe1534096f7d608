"""The leaderboard and training-run views in Debian's Chromium (headless, through Playwright, with
the UI's CSP enforced), on runs made here (tests/test_leaderboard.py's fixture runs) and jobs in
flight on the eval server the UI runs in its process.

With ``LMMS_EVAL_UI_SCREENSHOTS=1`` the tests save ``docs/images/ui-leaderboard.png`` and
``docs/images/ui-training.png`` (used by docs/ui.md).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from test_leaderboard import make_board_logs, run_id

from lmms_eval.compare import compare_runs, load_doc_scores
from lmms_eval.leaderboard import build_leaderboard, runs_under

CHROMIUM = "/usr/bin/chromium"
IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"
SHOTS = os.environ.get("LMMS_EVAL_UI_SCREENSHOTS") == "1"

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
)
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)


def shot(page: Any, name: str) -> None:
    if SHOTS:
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGES / f"ui-{name}.png"), full_page=False)


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Any]]:
    import uvicorn

    from lmms_eval.ui.app import UiOptions, create_ui_app
    from lmms_eval.ui.proxy import free_port

    root = tmp_path_factory.mktemp("ui_board")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LMMS_EVAL_HOME", str(root / "home"))
        logs = make_board_logs(root)
        app = create_ui_app(UiOptions(logs, state_dir=root / "server"))
        sock = free_port()
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "the UI did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/", logs, app.state.ui
        server.should_exit = True
        thread.join(15)


@pytest.fixture(scope="module")
def page(ui: tuple[str, Path, Any]) -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        context = browser.new_context(viewport={"width": 1400, "height": 900})  # the UI's CSP applies
        context.set_default_timeout(15_000)
        page = context.new_page()
        page.errors = []  # type: ignore[attr-defined]
        page.on("pageerror", lambda e: page.errors.append(str(e)))  # type: ignore[attr-defined]
        page.on("console", lambda m: "Content Security Policy" in m.text and page.errors.append(m.text))  # type: ignore[attr-defined]
        yield page
        assert page.errors == []  # type: ignore[attr-defined]
        browser.close()


def ids_in_table(page: Any) -> list[str]:
    return [r.get_attribute("data-id") for r in page.locator("tr.lb-row").all()]


def wait_rows(page: Any, count: int) -> None:
    deadline = time.monotonic() + 15
    while page.locator("tr.lb-row").count() != count:
        assert time.monotonic() < deadline, f"{page.locator('tr.lb-row').count()} rows, not {count}"
        time.sleep(0.05)


def test_leaderboard_sorts_filters_marks_and_exports(page: Any, ui: tuple[str, Path, Any]) -> None:
    url, logs, _ = ui
    runs, _ = runs_under(logs)
    plain = build_leaderboard(runs)
    page.goto(url + "#/leaderboard")
    page.locator("tr.lb-row").first.wait_for()
    wait_rows(page, 6)
    assert ids_in_table(page) == [r.id for r in plain.rows]  # best mean first
    strong = next(r for r in plain.rows if r.id == run_id(logs, "strong"))
    cell = page.locator(f'tr.lb-row[data-id="{strong.id}"] td.lb-cell').first
    assert cell.inner_text().startswith(f"{strong.cells['demo_qa'].value:.4f}")

    page.click('th[data-sort="task:demo_shapes"]')
    shapes = [r for r in plain.rows if "demo_shapes" in r.cells]
    expected = sorted(shapes, key=lambda r: -(r.cells["demo_shapes"].value or 0))
    assert ids_in_table(page)[: len(expected)] == [r.id for r in expected]
    page.click('th[data-sort="mean"]')
    page.fill("#lb-model", "tiny-run")
    wait_rows(page, 3)
    page.fill("#lb-model", "")
    page.select_option("#lb-modality", "image")
    wait_rows(page, 3)  # the runs with demo_shapes, the only image task
    assert page.locator("#lb-table th").all_inner_texts()[2:] == ["demo_shapes", "Mean"]
    page.select_option("#lb-modality", "")

    baseline = run_id(logs, "weak")
    page.select_option("#lb-baseline", baseline)
    page.locator("td.sig-better").first.wait_for()
    tested = build_leaderboard(runs, baseline=baseline)
    marked = {(r.id, t) for r in tested.rows for t, c in r.cells.items() if c.significant}
    shown = set()
    for row in page.locator("tr.lb-row").all():
        tasks = page.locator("#lb-table th").all_inner_texts()[2:-1]
        for task, td in zip(tasks, row.locator("td.lb-cell").all(), strict=True):
            if "sig-" in (td.get_attribute("class") or ""):
                shown.add((row.get_attribute("data-id"), task.rstrip(" ▲▼")))
    assert shown == marked and marked
    assert "Holm-Bonferroni" in page.locator("#lb-correction-text").inner_text()
    shot(page, "leaderboard")

    def download(selector: str) -> str:
        return page.request.get(url + page.locator(selector).get_attribute("href").lstrip("/")).text()

    csv_text = download("#lb-csv")
    lines = csv_text.splitlines()
    assert lines[0].startswith("run,label,model,demo_qa:value") and len(lines) == 1 + 6
    md = download("#lb-md")
    assert md.startswith("| Run | Model | demo_qa | demo_shapes | Mean |") and "Holm-Bonferroni" in md
    page.fill("#lb-model", "tiny-run")
    wait_rows(page, 3)
    md = download("#lb-md")
    assert md.count("tiny-run @ step") == 3 and "demo_shapes" not in md.splitlines()[0]

    page.select_option("#lb-correction", "bh")
    page.locator("#lb-correction-text", has_text="Benjamini-Hochberg").wait_for()


def test_training_view_draws_curves_pending_jobs_and_compares_two_steps(
    page: Any, ui: tuple[str, Path, Any]
) -> None:
    from lmms_eval.entrypoints.client import EvalClient

    url, logs, state = ui
    link = state.server()
    client = EvalClient(link.url, token=link._token)
    jobs = [
        client.evaluate("dummy", ["demo_qa"], "latency=1", training_run="tiny-run", step=step, num_gpus=0)
        for step in (400, 500)
    ]
    try:
        page.goto(url + "#/training")
        page.click("#tr-runs a")
        page.locator("svg.curve-chart").first.wait_for()
        card = page.locator('.tr-card[data-key="demo_qa|exact_match|none"]')
        assert card.locator("circle.pt").count() == 3
        assert [int(c.get_attribute("data-step")) for c in card.locator("circle.pt").all()] == [100, 200, 300]
        assert card.locator("polygon.band").count() == 1
        assert card.locator("circle.pending").count() == 2  # steps 400 and 500, queued or running
        shot(page, "training")
        step300, step200 = run_id(logs, "tiny-run/step-300"), run_id(logs, "tiny-run/step-200")
        assert (
            page.locator("#tr-compare").get_attribute("href")
            == f"#/compare/{quote(step300, safe='')}/{quote(step200, safe='')}"
        )
        page.click("#tr-compare")
        page.locator("#cmp-table td.pvalue").first.wait_for()
        files = {r.id: r.sample_files for r in runs_under(logs)[0]}
        report = compare_runs(load_doc_scores(list(files[step300])), load_doc_scores(list(files[step200])))
        first = report.comparisons[0]
        shown = page.locator("#cmp-table td.pvalue").first.get_attribute("data-value")
        assert float(shown) == pytest.approx(first.result.p_value)
        diff = page.locator("#cmp-table td.diff").first.get_attribute("data-value")
        assert float(diff) == pytest.approx(first.result.diff)  # the numbers of lmms-eval compare
    finally:
        for job in jobs:
            client.cancel_job(job["job_id"])
        client.close()


PAYLOAD = '<img src=x onerror="window.__pwned=1">"\'`'


def test_names_from_the_files_are_shown_as_text(page: Any, ui: tuple[str, Path, Any]) -> None:
    """A training run, task metadata and folder named with markup stay text in both views (the UI's
    CSP applies; a payload that ran would set window.__pwned or leave an element with onerror)."""
    from lmms_eval.entrypoints.worker import record_training
    from lmms_eval.evaluator import simple_evaluate

    url, logs, _ = ui
    out = logs / "hostile"
    simple_evaluate("dummy", "answer_field=answer", ["demo_qa"], output_path=str(out), show_progress=False)
    record_training(str(out), {"training_run": PAYLOAD, "step": 7, "metadata": {"note": PAYLOAD}})
    page.goto(url + "#/training")
    page.locator("#tr-runs a", has_text="onerror").click()
    page.locator("svg.curve-chart").wait_for()
    assert page.locator("#tr-name").inner_text() == PAYLOAD
    page.goto(url + "#/leaderboard?baseline=" + quote(run_id(logs, "weak"), safe=""))
    page.locator("td.sig-better").first.wait_for()
    assert page.locator("tr.lb-row", has_text=f"{PAYLOAD} @ step 7").count() == 1
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[onerror], [onerror], script:not([src])").count() == 0
