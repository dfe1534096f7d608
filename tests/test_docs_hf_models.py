"""docs/hf_models.md: every command parses with the eval flags and names only model arguments the
backend's constructor takes; the command that runs on CPU (the bundled demo model) is run."""

from __future__ import annotations

import inspect
import json
import re
import shlex
from pathlib import Path

import pytest

from lmms_eval.cli import main as cli_main
from lmms_eval.cli.eval import build_parser
from lmms_eval.models import ensure_registry
from lmms_eval.utils import parse_arg_string

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "hf_models.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands() -> list[list[str]]:
    """The page's commands, continuation lines joined, each as (environment assignments + argv)."""
    lines = [block.replace("\\\n", " ") for block in FENCE.findall(PAGE)]
    return [shlex.split(line) for block in lines for line in block.splitlines() if line.strip()]


def split_env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    env = {}
    while "=" in words[0] and not words[0].startswith("-"):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def test_every_command_has_valid_flags_and_model_arguments() -> None:
    found = commands()
    assert len(found) >= 4
    for words in found:
        _, argv = split_env(list(words))
        assert argv[0] == "lmms-eval", words
        args = build_parser().parse_args(argv[1:])
        cls = ensure_registry().get_model_class(args.model)
        params = inspect.signature(cls.__init__).parameters
        for key in parse_arg_string(args.model_args or ""):
            assert key in params, f"docs/hf_models.md: {args.model} takes no argument '{key}'"


def test_the_cpu_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    (words,) = [w for w in commands() if "pretrained=demo" in " ".join(w)]
    env, argv = split_env(list(words))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert cli_main([*argv[1:], "--output_path", str(out), "--verbosity", "ERROR"]) == 0
    (results,) = out.rglob("*_results.json")
    scores = json.loads(results.read_text(encoding="utf-8"))["results"]["demo_shapes"]
    assert scores["accuracy,none"] > 0.5  # the demo model, not chance (0.24)
