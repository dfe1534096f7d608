"""The cost per document of a run: the slope of time and peak memory over 100 / 10,000 / 100,000 docs.

Runs ``lmms-eval --model dummy`` on the plain exact-match task of ``bench_eval_dummy.py`` (local
JSON Lines, a Jinja ``doc_to_text``, ``exact_match``) as a subprocess for each N in ``--docs``, with
and without ``--log_samples``, and keeps the best of ``--runs`` (the machine is shared: the minimum
is the least disturbed run). For each run it measures the wall time, the CPU time (user + system,
less sensitive to other jobs) and the peak RSS (``ru_maxrss`` of the child). The slope between
the smallest and the largest N is the cost of one more document beyond a fixed start-up.

**Targets** (the issue): at most 20 us and 1 KB per document without samples, 40 us with them;
100,000 docs under 2.5 s and 200 MB, under 4.5 s with samples.

``--source DIR`` runs the CLI from another checkout (``PYTHONPATH=DIR python -m lmms_eval``), e.g. a
``git worktree`` of the code before a change; ``--profile FILE`` also writes the top entries of a
cProfile of the largest run without samples (and one with) to ``FILE``.

    python bench/bench_per_doc.py --runs 3
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import isolated_env, machine_line, print_table  # bench/ is sys.path[0] as a script
from bench_eval_dummy import check_outputs, eval_argv, write_task

TARGETS = {False: (20.0, 1.0), True: (40.0, None)}  # us and KB per document
TARGETS_AT_100K = {False: (2.5, 200.0), True: (4.5, None)}  # seconds and MB


@dataclass
class Measure:
    wall_s: float
    cpu_s: float
    rss_mb: float


def run_measured(command: list[str], env: dict[str, str], cwd: Path) -> Measure:
    """Run ``command``; wall time, CPU time and peak RSS of the child (a non-zero exit is an error)."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            raise RuntimeError(f"{' '.join(command)} failed: {errors.read().decode()[-2000:]}")
    return Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0)


def cli(source: str | None) -> list[str]:
    return (
        [sys.executable, "-m", "lmms_eval"] if source else [str(Path(sys.executable).with_name("lmms-eval"))]
    )


def best(n: int, log_samples: bool, work: Path, env: dict[str, str], args: argparse.Namespace) -> Measure:
    task = f"bench_dummy_qa_{n}"
    runs: list[Measure] = []
    for r in range(args.runs):
        output = work / f"out_{n}_{int(log_samples)}_{r}"
        runs.append(
            run_measured(
                [*cli(args.source), *eval_argv(task, work / "tasks", output, log_samples)], env, work
            )
        )
        check_outputs(output, task, n, log_samples)
    return Measure(min(m.wall_s for m in runs), min(m.cpu_s for m in runs), min(m.rss_mb for m in runs))


def profile(n: int, log_samples: bool, work: Path, env: dict[str, str], source: str | None) -> str:
    stats_file = work / f"profile_{n}_{int(log_samples)}.out"
    argv = eval_argv(
        f"bench_dummy_qa_{n}", work / "tasks", work / f"prof_out_{int(log_samples)}", log_samples
    )
    command = [sys.executable, "-m", "cProfile", "-o", str(stats_file), "-m", "lmms_eval", *argv]
    run_measured(command, env, work)
    text = io.StringIO()
    stats = pstats.Stats(str(stats_file), stream=text)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats("lmms_eval", 30)
    title = f"## {n:,} docs, {'with' if log_samples else 'without'} --log_samples ({'source ' + source if source else 'this checkout'})"
    body = "\n".join(
        line.replace(str(Path.home()), "~") for line in text.getvalue().splitlines() if line.strip()
    )
    return f"{title}\n\n```\n{body}\n```\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[100, 10_000, 100_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--samples", choices=["both", "yes", "no"], default="both")
    parser.add_argument("--source", default=None, help="run the CLI from this checkout (PYTHONPATH)")
    parser.add_argument("--profile", default=None, help="write cProfile top entries of the largest runs here")
    args = parser.parse_args()
    modes = {"both": [False, True], "yes": [True], "no": [False]}[args.samples]
    print(machine_line())
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="lmms_bench_per_doc_") as tmp:
        work = Path(tmp)
        env = isolated_env(work / "home")
        if args.source:
            env["PYTHONPATH"] = str(Path(args.source).resolve())
        for n in args.docs:
            write_task(work / "tasks", n)
        first, last = min(args.docs), max(args.docs)
        for log_samples in modes:
            measures = {n: best(n, log_samples, work, env, args) for n in sorted(args.docs)}
            span = last - first
            slope_us = 1e6 * (measures[last].wall_s - measures[first].wall_s) / span
            slope_cpu_us = 1e6 * (measures[last].cpu_s - measures[first].cpu_s) / span
            slope_kb = 1024 * (measures[last].rss_mb - measures[first].rss_mb) / span
            target_us, target_kb = TARGETS[log_samples]
            for n, m in measures.items():
                rows.append(
                    [
                        "yes" if log_samples else "no",
                        f"{n:,}",
                        f"{m.wall_s:.2f}",
                        f"{m.cpu_s:.2f}",
                        f"{m.rss_mb:.0f}",
                        *(
                            [
                                f"{slope_us:.1f} (<= {target_us:g})",
                                f"{slope_cpu_us:.1f}",
                                f"{slope_kb:.2f}" + (f" (<= {target_kb:g})" if target_kb else ""),
                            ]
                            if n == last
                            else ["", "", ""]
                        ),
                    ]
                )
        if args.profile:
            text = [profile(last, s, work, env, args.source) for s in modes]
            Path(args.profile).write_text("\n".join(text), encoding="utf-8")
    print_table(
        ["log_samples", "docs", "wall s", "cpu s", "peak RSS MB", "us/doc (wall)", "us/doc (cpu)", "KB/doc"],
        rows,
    )
    print(
        f"best of {args.runs} runs each; slope from {first:,} to {last:,} docs; load at the end: {os.getloadavg()[0]:.2f}"
    )
    print(
        "targets at 100,000 docs: "
        + json.dumps({("samples" if k else "plain"): v for k, v in TARGETS_AT_100K.items()})
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
