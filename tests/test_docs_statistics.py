"""docs/statistics.md: its Python snippets run and do what the page says (the vectorised form of an
aggregation equals the plain one on resampled indices), and its commands run: ``compare`` on two
dummy runs, ``power`` in each of its modes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lmms_eval.cli import main as cli_main
from lmms_eval.stats.pure import purity

PAGE = Path(__file__).resolve().parents[1] / "docs" / "statistics.md"
TEXT = PAGE.read_text(encoding="utf-8")
PYTHON = re.findall(r"^```python\n(.*?)^```", TEXT, re.MULTILINE | re.DOTALL)
COMMANDS = [
    shlex.split(line.split("  #")[0])
    for block in re.findall(r"^```bash\n(.*?)^```", TEXT, re.MULTILINE | re.DOTALL)
    for line in block.splitlines()
    if line.strip()
]


def snippet(name: str) -> dict[str, Any]:
    code = next(block for block in PYTHON if f"def {name}" in block and "vectorised" in block)
    scope: dict[str, Any] = {}
    exec(compile(code, str(PAGE), "exec"), scope)
    return scope


def test_the_pure_aggregation_snippet_marks_the_function_pure() -> None:
    code = next(block for block in PYTHON if "@pure_aggregation" in block)
    scope: dict[str, Any] = {}
    exec(compile(code, str(PAGE), "exec"), scope)
    assert purity(scope["macro_accuracy"]) == "declared"


def test_the_vectorised_snippet_equals_the_plain_aggregation_on_every_resample() -> None:
    scope = snippet("macro_accuracy")
    rng = np.random.default_rng(0)
    items = [{"cat": c, "ok": int(o)} for c, o in zip(rng.integers(0, 3, 60), rng.integers(0, 2, 60))]
    idx = rng.integers(0, len(items), size=(25, len(items)))
    batch = scope["_macro_batch"](items, idx)
    plain = [scope["macro_accuracy"]([items[i] for i in row]) for row in idx]
    assert np.allclose(batch, plain)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = cli_main(argv)
    out = capsys.readouterr().out
    assert code in (0, None), out
    return out


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """runs/model_a and runs/model_b: demo_qa with two dummy models of different accuracy."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LMMS_EVAL_HOME", str(tmp_path / "home"))
    for name, accuracy in (("model_a", "0.9"), ("model_b", "0.5")):
        model_args = f"answer_field=answer,accuracy={accuracy}"
        argv = ["--model", "dummy", "--model_args", model_args, "--tasks", "demo_qa", "--log_samples"]
        run([*argv, "--output_path", f"runs/{name}", "--verbosity", "ERROR"], capsys)
    return tmp_path


def test_the_compare_commands_run_on_two_runs(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    compares = [words for words in COMMANDS if words[:2] == ["lmms-eval", "compare"]]
    assert len(compares) == 2
    first = run(compares[0][1:], capsys)
    assert "demo_qa" in first and "p" in first
    second = [w if w != "mme" else "demo_qa" for w in compares[1][1:]]  # the page's example task
    run(second, capsys)
    assert (runs / "diff.json").is_file()


def test_the_power_commands_run(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    powers = [w for w in COMMANDS if w[:2] == ["lmms-eval", "power"] or "--power-analysis" in w]
    assert len(powers) == 4
    for words in powers[:3]:
        assert run(words[1:], capsys).strip()
    results = sorted(str(p) for p in runs.glob("runs/*/*/*_results.json"))
    assert len(results) == 2
    argv = powers[3][1:]
    argv[argv.index("runs/a/x_results.json")] = results[0]
    argv[argv.index("runs/b/x_results.json")] = results[1]
    assert "MDE" in run(argv, capsys)
