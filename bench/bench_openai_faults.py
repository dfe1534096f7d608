"""The ``openai`` and ``async_openai`` backends against a local server that fails or rate-limits.

Starts ``tests/openai_server.py`` in a subprocess (``--latency`` seconds per answer) in one of two
modes, sends ``--requests`` chat requests through each backend's ``generate_until`` with
``num_concurrent=--concurrency`` and checks that every answer is the server's answer to its own
request, in order, with nothing failed.

* ``faults``: every 7th request is answered first HTTP 429 with ``Retry-After: 0.2``, on its retry
  HTTP 500, then normally (1,000 requests: 1,286 attempts). The bound counts the failed attempts:
  ``attempts x latency / concurrency`` (1,286 x 0.2 / 64 = 4.02 s). **Target: within 1.3x of it.**
* ``ratelimit``: the server admits ``--rate`` requests per second (a token bucket refilled at that
  rate, holding ``--burst`` tokens, by default a tenth of a second's worth; above it HTTP 429 with
  the ``Retry-After`` it computes). The bound is ``requests / rate`` (1,000 / 100 = 10 s).
  **Targets: within 1.2x of it, and fewer than 10% of all attempts answered 429.** The first
  ``concurrency`` requests go out at once, so ``concurrency - burst`` 429s (54) cannot be avoided.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass

from _common import machine_line, print_table, verdict  # bench/ is sys.path[0] when run as a script
from bench_openai import build_requests, check_answers, server_stats, start_server, stop_server

FAULT_EVERY = 7
FAULT_STEPS = "429:0.2,500"
FAULTS_FACTOR = 1.3
RATE_FACTOR = 1.2
MAX_429_SHARE = 0.10


@dataclass
class Run:
    seconds: float
    attempts: int
    rate_limited: int
    lowest_rate: float | None  # the lowest pacing rate of the run; None: never paced


def run_once(backend: str, port: int, args: argparse.Namespace) -> Run:
    from lmms_eval.models import get_model

    requests, task_dict = build_requests(args.requests)
    expected = [f"question number {i}: what is {i} + {i}?"[::-1] for i in range(args.requests)]
    model = get_model(backend)(
        model="bench-model",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key="bench",
        num_concurrent=args.concurrency,
        max_retries=args.max_retries,
        retry_backoff_s=args.retry_backoff,
    )
    model.task_dict = task_dict
    server_stats(port, reset=True)
    started = time.perf_counter()
    answers = model.generate_until(requests)
    seconds = time.perf_counter() - started
    lowest_rate = model.concurrency.stats().min_rate
    model.clean()
    check_answers(backend, answers, expected)
    stats = server_stats(port)
    statuses: dict[str, int] = stats["statuses"]
    if statuses.get("200") != args.requests:
        raise RuntimeError(f"{backend}: the server answered {statuses} to {args.requests} requests")
    return Run(seconds, int(stats["requests"]), int(statuses.get("429", 0)), lowest_rate)


def scenario_rows(scenario: str, args: argparse.Namespace) -> tuple[list[list[str]], bool]:
    extra = (
        ["--fault-every", str(FAULT_EVERY), "--fault-steps", FAULT_STEPS]
        if scenario == "faults"
        else ["--rate-limit", str(args.rate), "--rate-burst", str(args.burst or args.rate / 10)]
    )
    proc, port = start_server(args.latency, *extra)
    rows: list[list[str]] = []
    missed = False
    try:
        for backend in args.backends:
            runs = [run_once(backend, port, args) for _ in range(args.runs)]
            times = [r.seconds for r in runs]
            median = statistics.median(times)
            attempts = statistics.median(r.attempts for r in runs)
            share = sum(r.rate_limited for r in runs) / sum(r.attempts for r in runs)
            lowest = [r.lowest_rate for r in runs if r.lowest_rate is not None]
            paced = f"{len(lowest)} of {len(runs)}, lowest {min(lowest):.0f}/s" if lowest else "never"
            if scenario == "faults":
                bound = attempts * args.latency / args.concurrency
                target = FAULTS_FACTOR * bound
                share_ok = True
            else:
                bound = args.requests / args.rate
                target = RATE_FACTOR * bound
                share_ok = share < MAX_429_SHARE
            missed |= median >= target or not share_ok
            rows.append(
                [
                    scenario,
                    backend,
                    f"{args.requests}",
                    f"{attempts:.0f}",
                    f"{share:.1%}" + ("" if share_ok else " (over 10%)"),
                    paced,
                    f"{median:.2f} s",
                    f"{min(times):.2f}-{max(times):.2f} s ({len(times)})",
                    f"{bound:.2f} s",
                    f"{median / bound:.2f}x",
                    f"< {target:.2f} s",
                    verdict(median, target) if share_ok else "MISSED",
                ]
            )
    finally:
        stop_server(proc)
    return rows, missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--scenarios", nargs="+", default=["faults", "ratelimit"], choices=["faults", "ratelimit"]
    )
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rate", type=float, default=100.0, help="requests/s the ratelimit server admits")
    parser.add_argument("--burst", type=float, default=None, help="its bucket size (default: --rate / 10)")
    parser.add_argument("--max-retries", type=int, default=10)
    parser.add_argument("--retry-backoff", type=float, default=1.0, help="retry_backoff_s of the backends")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["openai", "async_openai"])
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    print(machine_line())
    rows: list[list[str]] = []
    missed = False
    with tempfile.TemporaryDirectory() as home:
        os.environ["LMMS_EVAL_HOME"] = home
        for scenario in args.scenarios:
            scenario_table, scenario_missed = scenario_rows(scenario, args)
            rows += scenario_table
            missed |= scenario_missed
    print(
        f"faults: every {FAULT_EVERY}th request answered {FAULT_STEPS} first; "
        f"bound = attempts x {args.latency:g} s / {args.concurrency}, target {FAULTS_FACTOR}x"
    )
    print(
        f"ratelimit: {args.rate:g} requests/s admitted, bursts of {args.burst or args.rate / 10:g}; "
        f"bound = requests / rate, target {RATE_FACTOR}x and < {MAX_429_SHARE:.0%} of attempts 429"
    )
    header = [
        "scenario",
        "backend",
        "requests",
        "attempts",
        "429s",
        "paced",
        "median",
        "range (runs)",
        "bound",
    ]
    print_table([*header, "vs bound", "target", "verdict"], rows)
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
