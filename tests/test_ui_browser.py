"""The web UI in Debian's Chromium (headless, through Playwright): every view on runs made here,
and a launch of the ``dummy`` model on the eval server the UI runs in its process.

With ``LMMS_EVAL_UI_SCREENSHOTS=1`` the tests save ``docs/images/ui-*.png`` (used by docs/ui.md).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_ui_api import make_logs

from lmms_eval.compare import compare_runs, load_doc_scores
from lmms_eval.results import ResultsFile, read_samples

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
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    import uvicorn

    from lmms_eval.ui.app import UiOptions, create_ui_app
    from lmms_eval.ui.proxy import free_port

    root = tmp_path_factory.mktemp("ui_browser")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LMMS_EVAL_HOME", str(root / "home"))
        logs = make_logs(root)
        app = create_ui_app(UiOptions(logs, state_dir=root / "server"))
        sock = free_port()
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "the UI did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/", logs
        server.should_exit = True
        thread.join(15)


@pytest.fixture(scope="module")
def page(ui: tuple[str, Path]) -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        # Playwright's wait_for_function evaluates its predicate with eval, which the UI's CSP (no
        # 'unsafe-eval') refuses; tests/test_ui_xss_browser.py checks the pages under their CSP
        context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
        context.set_default_timeout(15_000)
        yield context.new_page()
        browser.close()


def _id(logs: Path, folder: str) -> str:
    [results] = logs.glob(f"{folder}/*/*_results.json")
    return f"{results.parent.relative_to(logs).as_posix()}/{results.name.removesuffix('_results.json')}"


def test_runs_list_filters_and_sorts(page: Any, ui: tuple[str, Path]) -> None:
    url, logs = ui
    page.goto(url + "#/runs")
    rows = page.locator("tr.run-row")
    rows.first.wait_for()
    assert rows.count() == 4
    results = ResultsFile.load(next(logs.glob("a/*/*_results.json")))
    value = results.results["demo_qa"].metrics()[0].value
    assert f"{value:.4f}" in page.locator(f'tr.run-row[data-id="{_id(logs, "a")}"]').inner_text()
    shot(page, "runs")
    page.fill("#runs-filter", "shapes")
    page.wait_for_function("document.querySelectorAll('tr.run-row').length === 1")
    page.fill("#runs-filter", "")
    page.click('th[data-sort="tasks"]')
    page.wait_for_function("document.querySelectorAll('tr.run-row').length === 4")
    tasks = [t.split("\n")[0] for t in page.locator("tr.run-row td:nth-child(3)").all_inner_texts()]
    assert tasks == sorted(tasks)


def test_run_view_shows_the_numbers_of_the_results_file(page: Any, ui: tuple[str, Path]) -> None:
    url, logs = ui
    page.goto(url + f"#/run/{_id(logs, 'shapes').replace('/', '%2F')}")
    page.locator("#run-metrics").wait_for()
    results = ResultsFile.load(next(logs.glob("shapes/*/*_results.json")))
    for row in results.results["demo_shapes"].metrics():
        cell = page.locator(f'td.value[data-key="demo_shapes|{row.metric}|{row.filter}"]')
        assert cell.inner_text() == f"{row.value:.4f}"
    assert page.locator("#run-chart rect.bar").count() == len(results.results["demo_shapes"].metrics())
    labels = page.locator("#run-chart text.label")
    assert "demo_shapes position_accuracy" in labels.locator("title").all_text_contents()
    # a long row label is cut to fit its column; the whole label is the hover title
    long_label = "a_benchmark_with_a_long_name_and_subtask exact_match_with_a_long_suffix (strict)"
    x, title = page.evaluate(
        """async (label) => {
          const { barChart } = await import('/static/chart.js');
          document.body.insertAdjacentHTML('beforeend', barChart('long-chart', [{ label, value: 0.5, lo: 0.4, hi: 0.6 }]));
          const text = document.querySelector('#long-chart text.label');
          return [text.getBBox().x, text.querySelector('title').textContent];
        }""",
        long_label,
    )
    assert x >= 0 and title == long_label
    page.locator("table.categories").first.wait_for()
    assert "colour" in page.locator("#breakdown").inner_text()
    assert "dummy" in page.locator(".card pre").first.inner_text()
    shot(page, "run")


def test_samples_show_images_filter_search_and_link(page: Any, ui: tuple[str, Path]) -> None:
    url, logs = ui
    run = _id(logs, "shapes").replace("/", "%2F")
    page.goto(url + f"#/samples/{run}/demo_shapes")
    page.locator(".srow").first.wait_for()
    assert page.locator("#samples-total").inner_text().startswith("200 of 200")
    thumb = page.locator(".srow img.thumb").first
    thumb.wait_for()
    page.wait_for_function(
        "[...document.querySelectorAll('.srow img.thumb')].slice(0, 3).every(i => i.complete && i.naturalWidth > 0)"
    )
    page.select_option("#status-filter", "wrong")
    page.wait_for_function("!document.querySelector('#samples-total').textContent.startsWith('200 of')")
    records = list(read_samples(next(logs.glob("shapes/*/*.jsonl"))))
    wrong = sum(1 for r in records if r.metrics["accuracy"] < 0.5)
    assert page.locator("#samples-total").inner_text() == f"{wrong} of 200 samples"
    assert set(page.locator(".srow .status").all_inner_texts()) == {"wrong"}
    page.select_option("#status-filter", "all")
    page.wait_for_function("document.querySelector('#samples-total').textContent.startsWith('200 of 200')")
    page.fill("#search", "bottom right")
    page.wait_for_function(
        "document.querySelector('#samples-total').textContent.startsWith('200 of') === false"
    )
    matching = sum(1 for r in records if "bottom right" in r.to_line().lower())
    assert page.locator("#samples-total").inner_text() == f"{matching} of 200 samples"
    page.locator(".srow").first.click()
    page.locator("#sample-detail img.thumb").wait_for()
    page.locator("#sample-detail img.thumb").click()
    page.wait_for_function(
        "(() => { const i = document.querySelector('#lightbox img'); return !document.querySelector('#lightbox').hidden && i.naturalWidth > 0; })()"
    )
    shot(page, "samples")
    page.keyboard.press("Escape")
    link = page.locator("#sample-link").get_attribute("href")
    assert link and re.search(r"#/samples/.+/demo_shapes/\d+$", link)
    line = int(link.rsplit("/", 1)[1])
    page.goto(url)
    page.goto(link)
    page.locator("#sample-detail h2").wait_for()
    assert page.locator("#sample-detail h2").inner_text().startswith(f"doc {records[line].doc_id} ")


def test_samples_play_audio_and_scroll_far(page: Any, ui: tuple[str, Path]) -> None:
    url, logs = ui
    page.goto(url + f"#/samples/{_id(logs, 'pics').replace('/', '%2F')}/ui_pics/0")
    page.locator("#sample-detail audio").wait_for()
    page.wait_for_function("document.querySelector('#sample-detail audio').readyState >= 1")
    page.goto(url + f"#/samples/{_id(logs, 'a').replace('/', '%2F')}/demo_qa")
    page.locator(".srow").first.wait_for()
    page.locator("#samples-scroll").evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function(
        "[...document.querySelectorAll('.srow')].some(r => r.firstElementChild.textContent === '119')"
    )
    page.select_option("#field-filter", "category")
    page.select_option("#value-filter", "subtraction")
    page.wait_for_function("document.querySelector('#samples-total').textContent.startsWith('40 of 120')")


def test_compare_shows_the_numbers_of_compare_runs(page: Any, ui: tuple[str, Path]) -> None:
    url, logs = ui
    a, b = _id(logs, "a"), _id(logs, "b")
    page.goto(url + f"#/compare/{a.replace('/', '%2F')}/{b.replace('/', '%2F')}")
    page.locator("#cmp-table td.diff").wait_for()
    report = compare_runs(
        load_doc_scores(next(logs.glob("a/*/*_results.json"))),
        load_doc_scores(next(logs.glob("b/*/*_results.json"))),
    )
    [c] = report.comparisons
    assert float(page.locator("#cmp-table td.diff").get_attribute("data-value") or "nan") == pytest.approx(
        c.result.diff, abs=1e-9
    )
    assert page.locator("#cmp-table td.diff").inner_text().startswith(f"{c.result.diff:.2f}")
    p = c.result.p_value  # printed as the CLI prints it (`<0.0001` for tiny p)
    assert page.locator("#cmp-table td.pvalue").inner_text() == ("<0.0001" if p < 1e-4 else f"{p:.4f}")
    assert page.locator("#cmp-chart circle.pt").count() == 1
    assert page.locator("tr.disagree-row").count() > 0
    assert "[wrong]" in page.locator("#disagreements").inner_text()
    shot(page, "compare")


def test_compare_opens_with_two_different_runs(page: Any, ui: tuple[str, Path]) -> None:
    url, _ = ui
    page.goto(url + "#/compare")
    page.wait_for_function("document.querySelectorAll('#cmp-a option').length > 1")
    a, b = page.locator("#cmp-a").input_value(), page.locator("#cmp-b").input_value()
    assert a and b and a != b


def test_launch_runs_the_dummy_model_to_completion(page: Any, ui: tuple[str, Path]) -> None:
    url, _logs = ui
    page.goto(url + "#/launch")
    page.locator("#model option").first.wait_for(state="attached")
    page.fill("#model-search", "dumm")
    page.select_option("#model", "dummy")
    page.fill("#model_args", "answer_field=answer,accuracy=0.5")
    page.locator('#task-list input[value="demo_qa"]').check(timeout=60_000)
    page.fill("#opt-limit", "6")
    page.check("#opt-log_samples")
    page.fill("#opt-num_gpus", "0")
    page.wait_for_function("document.querySelector('#preview-command').textContent.includes('--limit 6')")
    command = page.locator("#preview-command").inner_text()
    assert (
        command
        == "lmms-eval eval --model dummy --model_args answer_field=answer,accuracy=0.5 --tasks demo_qa --limit 6 --log_samples"
    )
    assert "limit: 6" in page.locator("#preview-yaml").inner_text()
    page.locator("#submit:not([disabled])").click()
    page.wait_for_function(
        "document.querySelector('#job-state')?.textContent === 'completed'", timeout=60_000
    )
    page.wait_for_function("document.querySelector('#job-log').textContent.length > 0")
    shot(page, "launch")
    page.goto(url + "#/runs")
    page.wait_for_function("document.querySelectorAll('tr.run-row').length === 5", timeout=10_000)
