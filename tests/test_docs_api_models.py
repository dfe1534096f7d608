"""docs/api_models.md: every ``lmms-eval`` command of the API sections parses with the eval flags and
names only model arguments the backend's constructor takes; the provider commands (``claude``,
``gemini``, Azure OpenAI, ``gpt4v``) run against the local fake servers, pointed there by the
environment variables the page documents."""

from __future__ import annotations

import inspect
import json
import logging
import re
import shlex
from pathlib import Path

import pytest
from fake_providers import ProviderServer
from openai_server import OpenAIServer

from lmms_eval.cli import main as cli_main
from lmms_eval.cli.eval import build_parser
from lmms_eval.models import ensure_registry
from lmms_eval.utils import parse_arg_string

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "api_models.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)
API_MODELS = {"openai", "async_openai", "gpt4v", "claude", "gemini"}
KEY = "doc-test-key-0123456789"


def commands() -> list[list[str]]:
    """The page's ``lmms-eval`` commands of API backends, continuation lines joined."""
    blocks = [block.replace("\\\n", " ") for block in FENCE.findall(PAGE)]
    found = [
        shlex.split(line) for block in blocks for line in block.splitlines() if line.startswith("lmms-eval")
    ]
    return [words for words in found if words[words.index("--model") + 1] in API_MODELS]


def test_every_api_command_has_valid_flags_and_model_arguments() -> None:
    assert len(provider_commands()) == 6
    found = commands()
    assert {w[w.index("--model") + 1] for w in found} >= {"claude", "gemini", "gpt4v", "openai"}
    for words in found:
        args = build_parser().parse_args(words[1:])
        cls = ensure_registry().get_model_class(args.model)
        params = inspect.signature(cls.__init__).parameters
        for key in parse_arg_string(args.model_args or ""):
            assert key in params, f"docs/api_models.md: {args.model} takes no argument '{key}'"


def _provider(words: list[str]) -> str | None:
    model, model_args = words[words.index("--model") + 1], words[words.index("--model_args") + 1]
    if model == "claude":
        return "anthropic"
    if model == "gemini":
        return "gemini"
    if "api_type=azure" in model_args:
        return "azure"
    return "openai" if "batch=true" in model_args else None


def provider_commands() -> list[list[str]]:
    """The commands of the provider and batch sections (section 2's ``openai`` commands need a real API)."""
    return [
        w
        for w in commands()
        if _provider(w) or w[w.index("--model") + 1] == "gpt4v" or "batch=true" in " ".join(w)
    ]


@pytest.mark.parametrize("index", range(len(provider_commands())))
def test_provider_commands_run_against_the_fakes(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    words = provider_commands()[index]
    provider = _provider(words)
    server = ProviderServer(provider, api_key=KEY) if provider else OpenAIServer()  # type: ignore[arg-type]
    with server:
        base = f"http://127.0.0.1:{server.port}"
        env = {
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": base,
            "GOOGLE_API_KEY": KEY,
            "GOOGLE_GEMINI_BASE_URL": base,
            "AZURE_OPENAI_API_KEY": KEY,
            "AZURE_OPENAI_ENDPOINT": base,
            "OPENAI_API_KEY": KEY,
            "OPENAI_API_BASE": base + "/v1",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        argv = list(words[1:])
        argv[argv.index("--tasks") + 1] = "demo_qa"
        argv[argv.index("--limit") + 1] = "2"
        if "--use_cache" in argv:
            argv[argv.index("--use_cache") + 1] = str(tmp_path / "cache")
        model_args = argv.index("--model_args") + 1
        if "batch=true" in argv[model_args]:  # the fakes end a batch on its second poll: poll at once
            argv[model_args] = re.sub(r",batch_poll_s=[^,]*", "", argv[model_args]) + ",batch_poll_s=0.01"
        out = tmp_path / "out"
        package_logger = logging.getLogger("lmms_eval")
        level, handlers = package_logger.level, list(package_logger.handlers)
        try:
            code = cli_main([*argv, "--output_path", str(out), "--verbosity", "ERROR"])
        finally:
            package_logger.setLevel(level)
            package_logger.handlers[:] = handlers
        assert code == 0 and (len(server.requests) == 2 or "batch=true" in " ".join(words))
    (results,) = out.rglob("*_results.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["results"]["demo_qa"]["samples"] == 2 and data["usage"]["total"]["output_tokens"] > 0
    assert KEY not in results.read_text(encoding="utf-8") + capsys.readouterr().out
