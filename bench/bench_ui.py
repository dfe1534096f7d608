"""Benchmark the web UI on a run of 100,000 samples: first paint in Chromium and the samples API.

Makes one real ``demo_qa`` run with the ``dummy`` model, then grows its samples file to ``--samples``
lines (default 100,000: the run's lines repeated with new ``doc_id`` values; about 40 MB). Serves
the UI on a free loopback port and measures:

* the samples page API: the first page (cold: the file is indexed), then pages at random offsets
  (warm, median and p95), the first ``status=wrong`` filter (every line parsed once) and again
  (cached), and a full-text search;
* first paint in Chromium (``/usr/bin/chromium`` headless through Playwright): from navigation to
  the first rendered sample row of ``#/samples/<run>/demo_qa``, with the file not yet indexed
  (cold) and indexed (warm, median of ``--repeats``); and a scroll to the last row.

Target: first paint under 1 s. Run: ``python bench/bench_ui.py``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

CHROMIUM = "/usr/bin/chromium"


def make_run(root: Path, n: int) -> tuple[Path, str]:
    """The logs folder and the id of the big run (an identical run is under ``copy/``)."""
    from lmms_eval.evaluator import simple_evaluate

    logs = root / "logs"
    simple_evaluate(
        "dummy",
        "answer_field=answer,accuracy=0.7",
        ["demo_qa"],
        output_path=str(logs),
        log_samples=True,
        show_progress=False,
    )
    [samples] = logs.glob("*/*_samples_demo_qa.jsonl")
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    with samples.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = dict(lines[i % len(lines)], doc_id=i)
            out.write(json.dumps(row) + "\n")
    stamp = samples.name.split("_samples_")[0]
    shutil.copytree(samples.parent, logs / "copy" / samples.parent.name)  # a second, unindexed copy
    return logs, f"{samples.parent.name}/{stamp}"


def serve(logs: Path) -> tuple[str, Any]:
    import uvicorn

    from lmms_eval.ui.app import UiOptions, create_ui_app
    from lmms_eval.ui.proxy import free_port

    app = create_ui_app(UiOptions(logs, server_url="http://127.0.0.1:9"))
    sock = free_port()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


def timed(client: httpx.Client, **params: Any) -> float:
    start = time.perf_counter()
    client.get("/api/samples", params=params).raise_for_status()
    return time.perf_counter() - start


def api_figures(url: str, run: str, n: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    with httpx.Client(base_url=url, timeout=120) as client:
        base = {"run": run, "task": "demo_qa", "limit": 100}
        figures["first page, cold (index built)"] = timed(client, **base)
        rng = random.Random(0)
        warm = sorted(timed(client, **base, offset=rng.randrange(n - 100)) for _ in range(50))
        figures["page at a random offset, median"] = statistics.median(warm)
        figures["page at a random offset, p95"] = warm[int(len(warm) * 0.95)]
        figures["status=wrong, first (every line parsed)"] = timed(client, **base, status="wrong")
        figures["status=wrong, again (cached)"] = timed(client, **base, status="wrong", offset=500)
        figures["full-text search 'What is 7'"] = timed(client, **base, q="What is 7")
    return figures


def paint_figures(url: str, run: str, repeats: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    target = f"{url}/#/samples/{run.replace('/', '%2F')}/demo_qa"
    figures: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        times = []
        for _ in range(repeats + 1):
            page.goto("about:blank")
            start = time.perf_counter()
            page.goto(target)
            page.locator(".srow").first.wait_for()
            times.append(time.perf_counter() - start)
        figures["first paint of the samples view, cold"] = times[0]
        figures["first paint of the samples view, warm (median)"] = statistics.median(times[1:])
        start = time.perf_counter()
        page.locator("#samples-scroll").evaluate("el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_function(
            "[...document.querySelectorAll('.srow')].some(r => r.style.top && parseInt(r.style.top) > 0 && r.firstElementChild.textContent === String(document.querySelector('#samples-total').textContent.split(' ')[0] - 1))"
        )
        figures["scroll to the last row"] = time.perf_counter() - start
        browser.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        logs, run = make_run(Path(tmp), args.samples)
        size = sum(p.stat().st_size for p in logs.rglob("*.jsonl")) / 1e6
        print(
            f"two runs of {args.samples:,} samples ({size / 2:.1f} MB each) made in {time.perf_counter() - start:.1f} s"
        )
        url, server = serve(logs)
        cold_paint = paint_figures(url, run, args.repeats)
        figures = {**cold_paint, **api_figures(url, f"copy/{run}", args.samples)}
        server.should_exit = True
    width = max(map(len, figures))
    for name, seconds in figures.items():
        print(f"{name:<{width}}  {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
