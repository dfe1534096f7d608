"""Pushing a run to the Hugging Face Hub, against a fake ``HfApi`` that records every call.

The run is a real evaluation (dummy model, demo_qa, 8 docs) whose files are pushed; the fake
keeps the repositories created, their settings and the bytes of every file committed, so the
tests check repo ids, paths in the repo, contents, the dataset card, privacy flags and that no
token reaches anything uploaded. Nothing touches the network.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest

from lmms_eval.errors import ConfigError
from lmms_eval.evaluator import simple_evaluate
from lmms_eval.loggers.hf_hub import HubArgs, check_hf_hub_args, push_results_to_hub
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.secrets import redact_text

TOKEN = "hf_FakeTokenForTests0123456789abcdef"
SECRET = "sk-test-secret-123"


class FakeHfApi:
    """Records what ``push_results_to_hub`` asks of ``huggingface_hub.HfApi``."""

    def __init__(self, token: str | None = None, fail_on_commit: str = "") -> None:
        self.token = token
        self.fail_on_commit = fail_on_commit
        self.repos: list[dict[str, Any]] = []
        self.settings: list[dict[str, Any]] = []
        self.commits: list[dict[str, Any]] = []
        self.whoami_calls = 0

    def whoami(self) -> dict[str, Any]:
        self.whoami_calls += 1
        return {"name": "me", "type": "user"}

    def create_repo(self, repo_id: str, **kwargs: Any) -> str:
        self.repos.append({"repo_id": repo_id, **kwargs})
        return f"https://huggingface.co/datasets/{repo_id}"

    def update_repo_settings(self, repo_id: str, **kwargs: Any) -> None:
        self.settings.append({"repo_id": repo_id, **kwargs})

    def create_commit(self, repo_id: str, operations: Any, **kwargs: Any) -> None:
        if self.fail_on_commit:
            raise RuntimeError(self.fail_on_commit)
        files = {}
        for op in operations:
            assert isinstance(op, huggingface_hub.CommitOperationAdd)
            with op.as_file() as handle:
                files[op.path_in_repo] = handle.read()
        self.commits.append({"repo_id": repo_id, "files": files, **kwargs})

    def uploaded(self) -> bytes:
        return b"".join(b"".join(c["files"].values()) for c in self.commits)


@pytest.fixture(autouse=True)
def _no_saved_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """No token from the environment or a saved login unless a test sets one."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    model = DummyChat(answer_field="answer", accuracy=0.5, wrong_response=f"leaked {SECRET}")
    return simple_evaluate(
        model=model,
        model_args=f"api_key={SECRET}",
        tasks=["demo_qa"],
        limit=8,
        output_path=str(tmp_path_factory.mktemp("hub") / "out"),
        log_samples=True,
        bootstrap_iters=0,
        show_progress=False,
    )


def _files(run: dict[str, Any]) -> tuple[Path, Path]:
    files = run["output_files"]
    return Path(files["results"]), Path(files["samples"]["demo_qa"])


def test_results_and_samples_go_to_their_repos_with_a_card(run: dict[str, Any]) -> None:
    api = FakeHfApi()
    args = (
        "hub_results_org=my-org,results_repo_name=results,details_repo_name=details,"
        f"push_results_to_hub=true,push_samples_to_hub=true,token={TOKEN},gated=true,"
        "leaderboard_url=https://lb.example/board,point_of_contact=eval-team@example.com"
    )
    urls = push_results_to_hub(run, run["output_files"], args, api=api)

    assert urls == [
        "https://huggingface.co/datasets/my-org/results",
        "https://huggingface.co/datasets/my-org/details",
    ]
    assert api.repos == [
        {"repo_id": "my-org/results", "repo_type": "dataset", "private": True, "exist_ok": True},
        {"repo_id": "my-org/details", "repo_type": "dataset", "private": True, "exist_ok": True},
    ]
    assert api.settings == [
        {"repo_id": "my-org/results", "repo_type": "dataset", "gated": "auto"},
        {"repo_id": "my-org/details", "repo_type": "dataset", "gated": "auto"},
    ]
    assert api.whoami_calls == 0
    results_path, samples_path = _files(run)
    results_commit, details_commit = api.commits
    assert results_commit["repo_id"] == "my-org/results" and results_commit["repo_type"] == "dataset"
    assert set(results_commit["files"]) == {f"DummyChat/{results_path.name}", "README.md"}
    assert set(details_commit["files"]) == {f"DummyChat/{samples_path.name}", "README.md"}
    assert results_commit["files"][f"DummyChat/{results_path.name}"] == results_path.read_bytes()
    assert details_commit["files"][f"DummyChat/{samples_path.name}"] == samples_path.read_bytes()

    card = results_commit["files"]["README.md"].decode()
    assert card.startswith("---\npretty_name: ") and "# Evaluation results of `DummyChat`" in card
    score = run["results"]["demo_qa"]["exact_match,none"]
    assert "|demo_qa|" in card.replace(" ", "") and f"{score:.4f}" in card  # the results table
    assert "Leaderboard: https://lb.example/board" in card and "eval-team@example.com" in card
    assert f"[`DummyChat/{results_path.name}`](DummyChat/{results_path.name})" in card
    assert "api_key=[REDACTED]" in card  # the run's model_args, redacted
    assert f"DummyChat/{samples_path.name}" in details_commit["files"]["README.md"].decode()

    uploaded = api.uploaded()
    assert TOKEN.encode() not in uploaded and SECRET.encode() not in uploaded


def test_defaults_use_the_token_from_hf_token_and_the_users_namespace(
    run: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[FakeHfApi] = []

    def make(token: str | None = None) -> FakeHfApi:
        made.append(FakeHfApi(token))
        return made[-1]

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(huggingface_hub, "HfApi", make)
    urls = push_results_to_hub(run, run["output_files"], "push_results_to_hub=true,public_repo=true")

    (api,) = made
    assert api.token == TOKEN and api.whoami_calls == 1
    assert urls == ["https://huggingface.co/datasets/me/lmms-eval-results"]
    assert api.repos == [
        {"repo_id": "me/lmms-eval-results", "repo_type": "dataset", "private": False, "exist_ok": True}
    ]
    assert api.settings == []  # not gated
    (commit,) = api.commits
    assert sorted(commit["files"]) == ["DummyChat/" + _files(run)[0].name, "README.md"]
    assert redact_text(f"x {TOKEN}") == "x [REDACTED]"  # HF_TOKEN is a registered secret now


def test_hub_repo_name_puts_results_and_samples_in_one_commit(run: dict[str, Any]) -> None:
    api = FakeHfApi()
    args = {
        "hub_results_org": "org",
        "hub_repo_name": "everything",
        "push_results_to_hub": True,
        "push_samples_to_hub": True,
        "token": TOKEN,
    }
    assert push_results_to_hub(run, run["output_files"], args, api=api) == [
        "https://huggingface.co/datasets/org/everything"
    ]
    (commit,) = api.commits
    results_path, samples_path = _files(run)
    assert set(commit["files"]) == {
        f"DummyChat/{results_path.name}",
        f"DummyChat/{samples_path.name}",
        "README.md",
    }


def test_a_token_saved_by_hf_login_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_SavedLoginToken0123456789")
    hub = check_hf_hub_args("push_samples_to_hub=true")
    assert hub.token == "hf_SavedLoginToken0123456789" and hub.details_repo == "lmms-eval-results"
    assert "hf_SavedLoginToken0123456789" not in repr(hub)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            "hub_result_org=x",
            "--hf_hub_log_args: unknown key 'hub_result_org'. Did you mean 'hub_results_org' or",
        ),
        (
            "push_results_to_hub=true",
            "push_results_to_hub=true needs a Hugging Face token: add token=... or set HF_TOKEN",
        ),
        ("push_samples_to_hub=maybe", "push_samples_to_hub='maybe' must be true or false"),
        ("gated=sometimes", "gated='sometimes' must be true, false, auto or manual"),
        ("hub_results_org=my org", "hub_results_org='my org' is not a Hub name"),
        ("token", "--hf_hub_log_args: expected key=value"),
    ],
)
def test_bad_arguments_are_one_line_config_errors(args: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_hf_hub_args(args)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_token_given_with_a_bad_key_is_still_a_secret() -> None:
    with pytest.raises(ConfigError) as info:
        check_hf_hub_args(f"token={TOKEN},hub_repo=x")
    assert TOKEN not in str(info.value)
    assert redact_text(TOKEN) == "[REDACTED]"


def test_a_hub_failure_is_one_error_line_without_the_token(
    run: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    api = FakeHfApi(fail_on_commit=f"401 Unauthorized for token {TOKEN}")
    with caplog.at_level(logging.ERROR, logger="lmms_eval"):
        urls = push_results_to_hub(
            run, run["output_files"], f"hub_results_org=o,push_results_to_hub=true,token={TOKEN}", api=api
        )
        assert push_results_to_hub(run, {}, HubArgs(push_samples_to_hub=True, token=TOKEN), api=api) == []
    assert urls == []
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2
    assert errors[0].startswith("pushing to the Hugging Face Hub failed, the results files are not affected:")
    assert TOKEN not in errors[0] and "[REDACTED]" in errors[0]
    assert "push_samples_to_hub=true needs samples files (set --log_samples and --output_path)" in errors[1]


def test_nothing_asked_pushes_nothing(run: dict[str, Any]) -> None:
    api = FakeHfApi()
    assert push_results_to_hub(run, run["output_files"], "hub_results_org=o", api=api) == []
    assert push_results_to_hub(run, run["output_files"], "", api=api) == []
    assert api.repos == [] and api.commits == []


def test_the_results_file_read_back_is_the_one_uploaded(run: dict[str, Any]) -> None:
    api = FakeHfApi()
    push_results_to_hub(
        run,
        run["output_files"],
        {"hub_results_org": "o", "push_results_to_hub": True, "token": TOKEN},
        api=api,
    )
    results_path, _ = _files(run)
    uploaded = json.loads(api.commits[0]["files"][f"DummyChat/{results_path.name}"])
    assert uploaded["results"] == json.loads(results_path.read_text(encoding="utf-8"))["results"]
    assert uploaded["config"]["model_args"] == "api_key=[REDACTED]"


# --------------------------------------------------------------------------------------------
# docs/loggers.md: the Hub command and snippet (the W&B ones are in test_wandb_logger.py)
# --------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "loggers.md").read_text(encoding="utf-8")


def _block(language: str, needle: str) -> str:
    blocks = re.findall(r"```(\w*)\n(.*?)```", DOC, re.S)
    (text,) = [text for lang, text in blocks if lang == language and needle in text]
    return text


def _cli(command: str) -> tuple[dict[str, str], list[str]]:
    words = command.strip().split()
    env = {}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "lmms-eval", command
    return env, words[1:]


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> list[FakeHfApi]:
    made: list[FakeHfApi] = []

    def make(token: str | None = None) -> FakeHfApi:
        made.append(FakeHfApi(token))
        return made[-1]

    monkeypatch.setattr(huggingface_hub, "HfApi", make)
    return made


def _check_pushed(made: list[FakeHfApi], token: str, with_samples: bool) -> None:
    (api,) = made
    assert api.token == token
    assert [r["repo_id"] for r in api.repos] == ["my-org/lmms-eval-results"] and api.repos[0][
        "private"
    ] is True
    (commit,) = api.commits
    names = sorted(commit["files"])
    assert names[0] == "README.md" and all(n.startswith("dummy/") for n in names[1:])
    assert any(n.endswith("_results.json") for n in names)
    assert any(n.endswith("_samples_demo_qa.jsonl") for n in names) is with_samples
    assert token.encode() not in api.uploaded()


def test_docs_hub_command_pushes_results_and_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_hub: list[FakeHfApi]
) -> None:
    from lmms_eval.cli import main

    env, argv = _cli(_block("bash", "--hf_hub_log_args"))
    for name, value in env.items():
        monkeypatch.setenv(name, value + "0123456789abcdefghij")  # hf_xxx is too short to be redacted
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--verbosity", "ERROR"]) == 0
    _check_pushed(fake_hub, env["HF_TOKEN"] + "0123456789abcdefghij", with_samples=True)


def test_docs_hub_snippet_pushes_an_earlier_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_hub: list[FakeHfApi],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lmms_eval.cli import main

    _, argv = _cli(_block("bash", "--hf_hub_log_args"))
    monkeypatch.chdir(tmp_path)
    assert main([*argv[: argv.index("--hf_hub_log_args")], "--verbosity", "ERROR"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    namespace: dict[str, Any] = {}
    exec(_block("python", "push_results_to_hub"), namespace)
    assert namespace["urls"] == ["https://huggingface.co/datasets/my-org/lmms-eval-results"]
    assert capsys.readouterr().out.strip() == str(namespace["urls"])
    _check_pushed(fake_hub, TOKEN, with_samples=False)


def test_docs_error_example_is_the_error() -> None:
    shown = re.search(r"\(`(--hf_hub_log_args: unknown key [^`]*?) \.\.\.`\)", DOC)
    assert shown is not None
    with pytest.raises(ConfigError) as info:
        check_hf_hub_args("hub_result_org=x")
    assert str(info.value).startswith(shown.group(1))


def test_a_push_without_a_token_stops_the_run_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lmms_eval.cli import main

    argv = ["--model", "dummy", "--tasks", "demo_qa", "--limit", "2", "--output_path", str(tmp_path / "o")]
    hub = ["--hf_hub_log_args", "hub_results_org=o,push_results_to_hub=true"]
    assert main([*argv, *hub, "--verbosity", "ERROR"]) == 1
    assert "push_results_to_hub=true needs a Hugging Face token" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*_results.json"))  # as the doc says: before the evaluation
