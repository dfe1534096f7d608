"""Every shell command in docs/migration.md runs, against a small task folder named ``my_tasks``."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "migration.md"


def _commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_every_command_of_the_migration_guide_runs(write_files, tmp_path: Path) -> None:
    rows = "\n".join(json.dumps({"q": f"q{i}", "a": "yes"}) for i in range(3))
    write_files(
        {
            "my_tasks/demo/data.jsonl": rows,
            "my_tasks/demo/demo.yaml": '\ufeff"task": migrated_demo\ndataset_path: json\ndataset_kwargs:\n'
            "  data_files:\n    test: data.jsonl\ntest_split: test\ndoc_to_text: q\ndoc_to_target: a\n",
        },
        tmp_path,
    )
    commands = _commands()
    assert commands and all(c.startswith("lmms-eval ") for c in commands)
    for command in commands:
        args = [sys.executable, "-m", "lmms_eval", *shlex.split(command)[1:]]
        done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert "migrated_demo" in done.stdout or "0 problem(s)" in done.stdout
