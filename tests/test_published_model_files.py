"""Opt-in (``-m compat``): model files written for the published package run here unchanged.

The published ``simple/llava_hf.py`` and ``simple/qwen2_vl.py`` are copied at test time from the
published package's venv (``tests/published_venv.py``) into a temporary plugin package, exposed the
published way (``LMMS_EVAL_PLUGINS`` naming a package whose ``models`` has ``AVAILABLE_MODELS``),
and run by ``lmms-eval`` on tiny checkpoints built offline (``lmms_eval.models.hf.tiny``). Their
top-level imports (``decord``; ``qwen_vl_utils`` through ``optional_import``) are installed from PyPI
into a temporary folder; a test skips, with the reason, when one cannot be installed or imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from published_venv import published_python

pytestmark = pytest.mark.compat
pytest.importorskip("torch")
pytest.importorskip("transformers")

PLUGINS = {"llava_hf": "LlavaHf", "qwen2_vl": "Qwen2_VL"}
TINY = {"llava_hf": "llava", "qwen2_vl": "qwen2_vl"}
ARGS = {
    "llava_hf": "device=cpu,device_map=cpu,dtype=float32",
    "qwen2_vl": "device=cpu,device_map=cpu,max_pixels=50176",
}


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the ``pubplug`` package (the published model files, unchanged)."""
    python = published_python()
    code = "import lmms_eval, os; print(os.path.dirname(lmms_eval.__file__))"
    where = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd="/", check=True)
    models = Path(where.stdout.strip()) / "models" / "simple"
    site = tmp_path_factory.mktemp("plugin_site")
    package = site / "pubplug" / "models"
    package.mkdir(parents=True)
    (site / "pubplug" / "__init__.py").write_text("")
    (package / "__init__.py").write_text(f"AVAILABLE_MODELS = {PLUGINS!r}\n")
    for name in PLUGINS:
        shutil.copy(models / f"{name}.py", package / f"{name}.py")
    return site


@pytest.fixture(scope="module")
def extra_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``decord`` and ``qwen-vl-utils`` from PyPI (no dependencies: the rest comes from this venv)."""
    site = tmp_path_factory.mktemp("extra_site")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(site),
            "decord",
            "qwen-vl-utils",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        pytest.skip(f"pip install decord qwen-vl-utils failed: {tail[0]}")
    return site


def _env(plugin_site: Path, extra_site: Path) -> dict[str, str]:
    path = os.pathsep.join([str(plugin_site), str(extra_site), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "LMMS_EVAL_PLUGINS": "pubplug", "HF_HUB_OFFLINE": "1"}


def _imports(module: str, env: dict[str, str]) -> str | None:
    """None when ``module`` imports with ``env``; else the last line of the error."""
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, env=env)
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["failed"])[-1]


@pytest.mark.parametrize("model", sorted(PLUGINS))
def test_published_model_file_runs_unchanged(
    model: str, plugin_site: Path, extra_site: Path, tmp_path: Path
) -> None:
    from lmms_eval.models.hf.tiny import build_tiny_vlm

    env = _env(plugin_site, extra_site)
    needed = ("decord", "qwen_vl_utils") if model == "qwen2_vl" else ("decord",)
    for module in needed:
        error = _imports(module, env)
        if error:
            pytest.skip(f"the published {model}.py needs {module}, which cannot be imported here: {error}")
    checkpoint = build_tiny_vlm(TINY[model], str(tmp_path / "tiny"), image_size=64)
    argv = [sys.executable, "-m", "lmms_eval", "--model", model, "--tasks", "demo_shapes", "--limit", "2",
            "--model_args", f"pretrained={checkpoint},{ARGS[model]}", "--output_path", str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"model '{model}' is replaced by pubplug.models.{model}" in done.stderr
    (results,) = (tmp_path / "out").rglob("*_results.json")
    scores = json.loads(results.read_text())["results"]["demo_shapes"]
    assert 0.0 <= scores["accuracy,none"] <= 1.0
