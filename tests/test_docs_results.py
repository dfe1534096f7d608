"""docs/results.md runs as written: its commands and its Python example (which prints what the page
shows), and it documents every key of the results file and of a samples line, and every version."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval.cli import main
from lmms_eval.results import ResultsFile, SampleRecord
from lmms_eval.results.versions import KNOWN_VERSIONS

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def _blocks(kind: str) -> list[str]:
    return [body for lang, body in FENCE.findall(PAGE) if lang == kind]


def _section(heading: str) -> str:
    start = PAGE.index(heading)
    end = PAGE.find("\n## ", start + len(heading))
    return PAGE[start : end if end > 0 else None]


def test_the_example_run_and_script_print_what_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    run, check = _blocks("bash")
    command = run.split()
    assert command[0] == "lmms-eval"
    assert main([*command[1:], "--verbosity", "ERROR"]) == 0
    capsys.readouterr()
    [script] = _blocks("python")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(script, "docs/results.md", "exec"), {})
    [shown] = _blocks("")  # the output block after the script
    assert printed.getvalue() == shown, (
        f"docs/results.md shows:\n{shown}\nthe script printed:\n{printed.getvalue()}"
    )
    assert check.strip() == "python scripts/gen_results_schema.py --check"
    done = subprocess.run([sys.executable, *check.split()[1:]], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_key_and_version_is_documented() -> None:
    results_table = _section("## The results file")
    for name, info in ResultsFile.model_fields.items():
        assert f"`{info.alias or name}`" in results_table, (
            f"results key {info.alias or name!r} is undocumented"
        )
    samples_table = _section("## The samples files")
    for name in SampleRecord.model_fields:
        if name != "metrics":
            assert f"| `{name}`" in samples_table or f"`, `{name}` |" in samples_table, name
    versions = _section("## Versions")
    for version in KNOWN_VERSIONS:
        assert f"| `{version}` |" in versions
