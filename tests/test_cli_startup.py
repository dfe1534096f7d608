"""A subcommand pays only for itself: ``tasks list`` builds no other subcommand's parser, so it never
imports the run-settings model (pydantic) or numpy (``power``)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import contextlib, io, sys
from lmms_eval.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["tasks", "list"])
heavy = [m for m in ("lmms_eval.settings.model", "numpy", "pydantic", "torch") if m in sys.modules]
print(code, heavy)
"""


def test_tasks_list_imports_neither_the_settings_model_nor_numpy() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0 []", out


def test_every_subcommand_still_parses_and_typos_get_suggestions() -> None:
    from lmms_eval.cli import SUBCOMMANDS, build_parser

    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    assert choices is not None and set(choices) == set(SUBCOMMANDS)
    only = build_parser("tasks")
    only_choices = next(a for a in only._actions if a.dest == "command").choices
    assert only_choices is not None and set(only_choices) == {"tasks"}
