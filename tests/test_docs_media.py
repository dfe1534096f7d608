"""Every snippet of docs/media.md runs: the bash blocks in a shell, the Python blocks in order in one
namespace (as a reader would paste them into one session), in a temporary working folder. A
``# ...`` comment after a ``print`` is the output the guide promises, and is checked."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("av")
pytest.importorskip("numpy")

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "media.md"
FENCE = re.compile(r"^```(bash|python)\n(.*?)^```", re.MULTILINE | re.DOTALL)
PROMISE = re.compile(r"^\s*print\(.*\)\s+#\s+(.*)$")


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(GUIDE.read_text(encoding="utf-8"))]


def promised(code: str) -> list[str]:
    """The outputs promised in ``# ...`` comments after prints ("then" separates two prints)."""
    out: list[str] = []
    for line in code.splitlines():
        match = PROMISE.match(line)
        if match:
            out.extend(part.strip() for part in match.group(1).split(" then "))
    return out


def test_the_guide_has_bash_and_python_snippets() -> None:
    kinds = [kind for kind, _ in blocks()]
    assert "bash" in kinds and kinds.count("python") >= 4


def test_every_snippet_runs_and_prints_what_it_promises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env["LMMS_MEDIA_PREFETCH"] = "1"
    namespace: dict[str, object] = {"__name__": "docs_media"}
    for kind, code in blocks():
        if kind == "bash":
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code], env=env, capture_output=True, text=True, check=False
            )
            assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"
            continue
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(code, str(GUIDE), "exec"), namespace)  # the guide's own code
        printed = [line.strip() for line in buffer.getvalue().splitlines()]
        assert printed == promised(code), code
