"""docs/caching.md: the API-model commands parse with the eval flags and name only arguments the
backend takes; the cache-management commands run, in order, against a cache a dummy run filled."""

from __future__ import annotations

import inspect
import re
import shlex
from pathlib import Path

import pytest

from lmms_eval.cli import build_parser
from lmms_eval.cli import main as cli_main
from lmms_eval.models import ensure_registry
from lmms_eval.utils import parse_arg_string

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "caching.md"
FENCE = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)
DOC_CACHE = "~/caches/gpt4o-mini"


def commands() -> list[list[str]]:
    lines = [
        line.split("  #")[0]
        for block in FENCE.findall(GUIDE.read_text(encoding="utf-8"))
        for line in block.splitlines()
    ]
    return [shlex.split(line, posix=False) for line in lines if line.strip() and not line.startswith("#")]


def test_the_eval_commands_have_valid_flags_and_model_arguments() -> None:
    evals = [words for words in commands() if words[1] == "--model"]
    assert len(evals) == 2 and evals[0] == evals[1]  # "run the same command again"
    for words in evals:
        args = build_parser().parse_args(["eval", *words[1:]])
        assert args.use_cache == DOC_CACHE
        params = inspect.signature(ensure_registry().get_model_class(args.model).__init__).parameters
        for key in parse_arg_string(args.model_args):
            assert key in params, f"docs/caching.md: {args.model} takes no argument '{key}'"


def test_the_cache_commands_run_on_a_filled_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LMMS_EVAL_HOME", str(tmp_path / "home"))
    cache = tmp_path / "cache"
    argv = [
        "--model",
        "dummy",
        "--tasks",
        "demo_qa",
        "--limit",
        "3",
        "--use_cache",
        str(cache),
        "--verbosity",
        "ERROR",
    ]
    assert cli_main(argv) == 0
    assert (cache / "cache.db").is_file()
    managing = [words for words in commands() if words[1] == "cache"]
    assert [w[2] for w in managing] == ["stats", "prune", "prune", "clear", "clear"]
    capsys.readouterr()
    for words in managing:
        assert DOC_CACHE in words
        assert cli_main([str(cache) if w == DOC_CACHE else w for w in words[1:]]) == 0, words
    out = capsys.readouterr().out
    assert "demo_qa" in out  # stats lists the entries of the run's task
    assert not (cache / "cache.db").exists()  # clear removed it
