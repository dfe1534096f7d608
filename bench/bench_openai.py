"""Throughput of the ``openai`` and ``async_openai`` backends against a local server with fixed latency.

Starts ``tests/openai_server.py`` in a subprocess (so the server does not share the benchmark's
interpreter lock) with ``--latency`` seconds per answer, then sends ``--requests`` chat requests
through each backend's ``generate_until`` with ``num_concurrent=--concurrency``. The ideal time,
with every slot busy all the time and no client cost, is ``requests / concurrency * latency``.
**Target: within 1.2x of the ideal** (1,000 requests, 0.2 s, 64 in flight: ideal 3.125 s,
target < 3.75 s).

Every run checks that each answer is the server's answer to its own request (the reversed prompt),
in request order, that nothing failed, and reads the server's peak number of requests in flight.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine_line, print_table, verdict  # bench/ is sys.path[0] when run as a script

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "openai_server.py"
TARGET_FACTOR = 1.2


def start_server(latency: float, *extra: str) -> tuple[subprocess.Popen[str], int]:
    """Start ``tests/openai_server.py`` (``extra``: more of its options); returns it and its port."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(latency), "--no-record", *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"the test server did not start: {line!r}")
    return proc, int(line.split()[1])


def stop_server(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def server_stats(port: int, reset: bool = False) -> dict[str, Any]:
    import json
    import urllib.request

    url = f"http://127.0.0.1:{port}/stats" + ("?reset=1" if reset else "")
    with urllib.request.urlopen(url, timeout=5) as response:
        return dict(json.loads(response.read()))


def build_requests(n: int) -> tuple[list[Any], dict[str, Any]]:
    from lmms_eval.api.instance import Instance

    docs = [{"question": f"question number {i}: what is {i} + {i}?"} for i in range(n)]

    def doc_to_messages(doc: dict[str, str]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": doc["question"]}]}]

    gen_kwargs = {"max_new_tokens": 64, "temperature": 0, "until": ["\n\n"]}
    requests = [
        Instance(
            "generate_until",
            (doc_to_messages, gen_kwargs, i, "bench", "test"),
            0,
            {"task": "bench", "doc_id": i, "split": "test"},
        )
        for i in range(n)
    ]
    return requests, {"bench": {"test": docs}}


def check_answers(backend: str, answers: list[Any], expected: list[str]) -> None:
    """Every answer is the server's answer to its own request, in request order."""
    from lmms_eval.api.instance import GenerationResult

    texts = [a.text if isinstance(a, GenerationResult) else repr(a) for a in answers]
    if texts != expected:
        wrong = next(i for i, (a, b) in enumerate(zip(texts, expected)) if a != b)
        raise RuntimeError(f"{backend}: answer {wrong} is {texts[wrong]!r}, expected {expected[wrong]!r}")


def run_backend(backend: str, port: int, args: argparse.Namespace) -> tuple[list[float], int]:
    from lmms_eval.models import get_model

    requests, task_dict = build_requests(args.requests)
    expected = [f"question number {i}: what is {i} + {i}?"[::-1] for i in range(args.requests)]
    times: list[float] = []
    peak = 0
    for _ in range(args.runs):
        model = get_model(backend)(
            model="bench-model",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="bench",
            num_concurrent=args.concurrency,
            max_retries=2,
        )
        model.task_dict = task_dict
        server_stats(port, reset=True)
        started = time.perf_counter()
        answers = model.generate_until(requests)
        times.append(time.perf_counter() - started)
        model.clean()
        check_answers(backend, answers, expected)
        stats = server_stats(port)
        if stats["requests"] != args.requests:
            raise RuntimeError(f"{backend}: the server saw {stats['requests']} requests, not {args.requests}")
        peak = max(peak, stats["max_in_flight"])
    return times, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["openai", "async_openai"])
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    print(machine_line())
    ideal = args.requests / args.concurrency * args.latency
    target = TARGET_FACTOR * ideal
    with tempfile.TemporaryDirectory() as home:
        os.environ["LMMS_EVAL_HOME"] = home
        proc, port = start_server(args.latency)
        try:
            rows: list[list[str]] = []
            missed = False
            for backend in args.backends:
                times, peak = run_backend(backend, port, args)
                median = statistics.median(times)
                missed |= median >= target
                rows.append(
                    [
                        backend,
                        f"{args.requests}",
                        f"{args.latency:g} s",
                        f"{args.concurrency}",
                        f"{peak}",
                        f"{median:.3f} s",
                        f"{min(times):.3f}-{max(times):.3f} s ({len(times)})",
                        f"{median / ideal:.3f}x",
                        f"{args.requests / median:.0f}/s",
                        f"< {target:.3f} s",
                        verdict(median, target),
                    ]
                )
        finally:
            stop_server(proc)
    print(f"ideal: {args.requests} / {args.concurrency} x {args.latency:g} s = {ideal:.3f} s")
    print_table(
        [
            "backend",
            "requests",
            "latency",
            "num_concurrent",
            "peak in flight",
            "median",
            "range (runs)",
            "vs ideal",
            "throughput",
            "target",
            "verdict",
        ],
        rows,
    )
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
