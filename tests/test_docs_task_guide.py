"""The task guide's worked example, built from docs/task_guide.md itself: its files are written as the
guide shows them, its two commands are run, and what they print is what the guide shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lmms_eval.cli import main

GUIDE = (Path(__file__).resolve().parents[1] / "docs" / "task_guide.md").read_text(encoding="utf-8")
FILE_LINE = re.compile(r"^`(ex/[\w./]+)`(?: and `(ex/[\w./]+)`)?:$")


def _example_files() -> dict[str, str]:
    """``{path: text}`` of every ``ex/...`` file of the worked example (a caption line, then fences)."""
    files: dict[str, str] = {}
    lines = GUIDE.splitlines()
    for i, line in enumerate(lines):
        match = FILE_LINE.match(line)
        if not match:
            continue
        names = [n for n in match.groups() if n]
        blocks: list[str] = []
        j = i + 1
        while len(blocks) < len(names):
            while not lines[j].startswith("```"):
                j += 1
            end = lines.index("```", j + 1)
            blocks.append("\n".join(lines[j + 1 : end]) + "\n")
            j = end + 1
        files.update(zip(names, blocks))
    return files


def _commands_and_output() -> tuple[list[list[str]], str]:
    start = GUIDE.index("Check it, then run it.")
    bash = GUIDE.index("```bash", start)
    block = GUIDE[bash + len("```bash") : GUIDE.index("```", bash + 7)]
    commands = [line.split() for line in block.replace("\\\n", " ").strip().splitlines()]
    out_start = GUIDE.index("```", GUIDE.index("```", bash + 7) + 3) + 3
    shown = GUIDE[out_start : GUIDE.index("```", out_start)]
    return commands, shown.strip("\n")


def test_worked_example_prints_what_the_guide_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _example_files()
    assert {"ex/colors/colors.yaml", "ex/colors/utils.py", "ex/colors/colors_hard.yaml"} <= set(files)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    (validate, run), shown = _commands_and_output()
    assert validate[:3] == ["lmms-eval", "tasks", "validate"] and run[0] == "lmms-eval"
    assert main(validate[1:]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    cli_md = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert f"$ lmms-eval tasks validate --include_path ex\n{summary}\n" in cli_md  # cli.md shows this run
    assert main([*run[1:], "--verbosity", "ERROR"]) == 0
    printed = capsys.readouterr().out
    assert printed.strip("\n") == shown, f"docs/task_guide.md shows:\n{shown}\nthe run printed:\n{printed}"
    assert list((tmp_path / "out_colors" / "dummy").glob("*_samples_colors_easy.jsonl"))
