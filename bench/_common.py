"""Helpers shared by the ``bench/`` scripts: isolated environments, subprocess timing, tables.

Nothing here is imported by the package or the tests; the scripts put ``bench/`` on ``sys.path``
simply by being run as ``python bench/<name>.py``.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

HEAVY_MODULES = ("torch", "transformers", "datasets", "pandas")


def cli_command() -> list[str]:
    """The ``lmms-eval`` console script of the running interpreter (what users type)."""
    script = Path(sys.executable).with_name("lmms-eval")
    if script.is_file():
        return [str(script)]
    found = shutil.which("lmms-eval")
    return [found] if found else [sys.executable, "-m", "lmms_eval"]


def isolated_env(home: Path) -> dict[str, str]:
    """The current environment with a private LMMS_EVAL_HOME and no network-reaching defaults."""
    env = dict(os.environ)
    for key in (
        "LMMS_EVAL_INDEX_CACHE",
        "LMMS_EVAL_PLUGINS",
        "PYTHONPROFILEIMPORTTIME",
        "PYTHONDONTWRITEBYTECODE",
    ):
        env.pop(key, None)
    env["LMMS_EVAL_HOME"] = str(home)
    env["HF_HUB_OFFLINE"] = "1"
    env["HF_DATASETS_OFFLINE"] = "1"
    return env


@dataclass
class Run:
    seconds: float
    stdout: str
    stderr: str


def run_timed(cmd: Sequence[str], env: Mapping[str, str], cwd: Path) -> Run:
    """Run ``cmd`` to completion and return its wall time; a non-zero exit is an error."""
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), env=dict(env), cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(
            f"command failed with exit code {proc.returncode}: {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout[-2000:]}\n--- stderr ---\n{proc.stderr[-2000:]}"
        )
    return Run(elapsed, proc.stdout, proc.stderr)


@dataclass
class Stat:
    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stat:
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))


def fmt_s(seconds: float) -> str:
    return f"{seconds:.3f}"


def verdict(value: float, target: float | None) -> str:
    if target is None:
        return "-"
    return "met" if value < target else "MISSED"


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths)) + " |")


def git_commit() -> str:
    """The checked-out commit of the repository (read-only; ``?`` outside a git checkout)."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return "?"
    return proc.stdout.strip() or "?"


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def machine_line() -> str:
    """Interpreter, machine, date, commit and load: timings only compare on a quiet machine."""
    load = load_average()
    line = (
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPU(s), {time.strftime('%Y-%m-%d')}, commit {git_commit()}, "
        f"load average {load:.2f}"
    )
    if load > 0.75 * (os.cpu_count() or 1):
        line += "\nwarning: the machine is busy; timings will be slower and noisier than on an idle machine"
    return line


HEAVY_PROBE = """
import json, sys
argv = json.loads(sys.argv[1])
if argv is not None:
    import contextlib, io
    from lmms_eval.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
else:
    import lmms_eval
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def heavy_imports(argv: Sequence[str] | None, env: Mapping[str, str], cwd: Path) -> list[str]:
    """Heavy modules present in ``sys.modules`` after running the CLI in-process with ``argv``.

    ``argv=None`` only imports ``lmms_eval``.
    """
    import json

    run = run_timed(
        [
            sys.executable,
            "-c",
            HEAVY_PROBE,
            json.dumps(None if argv is None else list(argv)),
            json.dumps(list(HEAVY_MODULES)),
        ],
        env,
        cwd,
    )
    return list(json.loads(run.stdout.strip().splitlines()[-1]))
