"""The virtual environment holding the published lmms-eval, for the opt-in ``compat`` tests.

Built (or reused) by ``bench/parity_published.py`` in ``/tmp/lmms_eval_published_<version>``; extra
published dependencies a test needs are installed into it with pip. A test skips, with the reason,
when the environment cannot be built (no package registry, no ``venv``).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def published_python(imports: tuple[str, ...] = (), packages: tuple[str, ...] = ()) -> Path:
    """The published venv's python, after ``packages`` are installed when ``imports`` fail there."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    parity_published: Any = importlib.import_module("parity_published")

    venv = Path(f"/tmp/lmms_eval_published_{parity_published.VERSION}")
    try:
        python = parity_published.ensure_venv(venv)
    except (parity_published.VenvError, OSError) as exc:
        pytest.skip(f"the published lmms-eval venv could not be built: {exc}")
    if imports and not _imports(python, imports) and packages:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *packages], capture_output=True, text=True
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            pytest.skip(f"pip install {' '.join(packages)} into {venv} failed: {tail[0]}")
    if imports and not _imports(python, imports):
        pytest.skip(f"{', '.join(imports)} cannot be imported in the published venv {venv}")
    return python


def _imports(python: Path, modules: tuple[str, ...]) -> bool:
    code = "; ".join(f"import {m}" for m in modules)
    done = subprocess.run([str(python), "-c", code], capture_output=True, cwd="/", timeout=300)
    return done.returncode == 0
