"""docs/cli.md and the README say what the tool prints: the models listing, the results statuses,
the failure kinds, the validate summary and the Quickstart block."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lmms_eval.api.instance import FAILURE_KINDS
from lmms_eval.cli import main

ROOT = Path(__file__).resolve().parents[1]
CLI_MD = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end > 0 else None]


def test_models_example_is_what_models_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--aliases"]) == 0
    printed = capsys.readouterr().out.splitlines()
    example = _section(CLI_MD, "## `lmms-eval models`").split("```")[3]
    lines = [line for line in example.strip().splitlines() if line and line != "..."]
    assert lines, "the models example is empty"
    for line in lines:
        assert line in printed, (
            f"docs/cli.md shows {line!r}, which 'lmms-eval models --aliases' does not print"
        )


def test_every_status_and_failure_kind_is_documented() -> None:
    from lmms_eval import evaluator

    source = Path(evaluator.__file__).read_text(encoding="utf-8")
    statuses = set(re.findall(r'"status"\]? ?[=:] ?"([a-z_]+)"', source))
    statuses |= set(re.findall(r'"(completed_with_failures|completed)"', source))
    assert {"running", "completed", "completed_with_failures", "interrupted"} <= statuses
    row = next(line for line in CLI_MD.splitlines() if line.startswith("| `status` |"))
    for status in statuses:
        assert f'`"{status}"`' in row, f"status {status!r} is not documented in docs/cli.md"
    failures = next(line for line in CLI_MD.splitlines() if line.startswith("| `failures` |"))
    for kind in FAILURE_KINDS:
        assert f"`{kind}`" in failures, f"failure kind {kind!r} is not documented in docs/cli.md"


def test_exit_codes_table_lists_every_code_the_cli_returns() -> None:
    table = _section(CLI_MD, "## Exit codes")
    for code in (0, 1, 2, 3, 130):
        assert f"| `{code}` |" in table


def test_validate_summary_has_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "validate"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    documented = re.search(r"checked \d+ tasks and groups in \d+ YAML files: \d+ problem\(s\)", CLI_MD)
    assert documented is not None
    assert re.fullmatch(r"checked \d+ tasks and groups in \d+ YAML files: 0 problem\(s\)", printed), printed


def test_readme_quickstart_is_two_lines_that_install_cpu_torch_first() -> None:
    block = README.split("## Quickstart", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [line for line in block.strip().splitlines() if line.strip()]
    assert len(lines) == 2
    assert "lmms-eval --model huggingface --model_args pretrained=demo --tasks demo_shapes" in lines[0]
    assert lines[1].rstrip().endswith("pytest")
    for line in lines:
        assert line.index("pip install torch==2.13.0") < line.index("pip install -e")


def test_readme_usage_example_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    usage = README.split("## Usage", 1)[1]
    command = usage.split("```bash", 1)[1].split("```", 1)[0].strip()
    shown = usage.split("```bash", 1)[1].split("```", 2)[2].split("```", 1)[0].strip("\n")
    assert command.startswith("lmms-eval ")
    assert main([*command.split()[1:], "--verbosity", "ERROR"]) == 0
    assert capsys.readouterr().out.strip("\n") == shown
