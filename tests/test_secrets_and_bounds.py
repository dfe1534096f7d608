"""Secrets of any length never reach an error line, a log, a 500 body or a folder name; counts have
upper bounds; NUL bytes and text that is not UTF-8 are refused with one line (CLI) or a 422 (server).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.cli import main
from lmms_eval.errors import ConfigError, ModelArgsError
from lmms_eval.secrets import (
    REDACTED,
    RedactingFilter,
    forget_secrets,
    is_secret_name,
    redact,
    redact_text,
    register_secret,
    register_secrets_from,
)
from lmms_eval.settings import EvalSettings, checks
from lmms_eval.utils import parse_arg_string, path_within, sanitize_model_name

LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d [DIWEC] ")
SHORT_KEY = "Zq7"  # a key far too short to search for in free text


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def _error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 1
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not LOG_LINE.match(line)]
    assert len(err) == 1, err  # one line, no traceback
    assert err[0].startswith("lmms-eval: error: ")
    return err[0].removeprefix("lmms-eval: error: ")


# -- secret names and values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["api_key", "apikey", "APIKEY", "apiKey", "x-api-key", "OPENAI_API_KEY", "access_token", "hf_token",
     "HFToken", "token", "client_secret", "secret_access_key", "DB_PASSWORD", "passwd", "credentials",
     "openai_key", "auth_token"],
)  # fmt: skip
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)
    assert redact({name: "x"}) == {name: REDACTED}  # whatever the value's length
    assert redact_text(f"{name}=x,model=m") == f"{name}={REDACTED},model=m"


@pytest.mark.parametrize(
    "name", ["max_tokens", "max_new_tokens", "tokenizer", "cluster_key", "pad_token", "image_token",
             "keyword", "sort_keys", "model", "key", "pretrained"],
)  # fmt: skip
def test_names_that_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)
    assert redact({name: "v"}) == {name: "v"}
    assert redact_text(f"{name}=v") == f"{name}=v"


def test_short_registered_secrets_are_redacted_as_whole_words_only() -> None:
    register_secrets_from({"api_key": SHORT_KEY, "token": "ab", "password": "EMPTY"})
    text = f"got '{SHORT_KEY}' from {SHORT_KEY}x; ab and EMPTY stay"
    assert redact_text(text) == f"got '{REDACTED}' from {SHORT_KEY}x; ab and EMPTY stay"


# -- parse errors of argument strings -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (f"api_key={SHORT_KEY},{SHORT_KEY}", "item 2"),
        (f'api_key="{SHORT_KEY},model=m', "the value of 'api_key'"),
        (f"api_key={{{SHORT_KEY}", "the value of 'api_key'"),
        (f"api_key={SHORT_KEY}]", "the value of 'api_key'"),
        (f"api_key=[{SHORT_KEY},", "the value of 'api_key'"),
        (f'api_key={{"k": {SHORT_KEY}}}', "api_key:"),
        (f'{{"api_key": {SHORT_KEY}}}', "character"),
    ],
)
def test_argument_string_errors_never_show_values(text: str, where: str) -> None:
    with pytest.raises(ModelArgsError) as info:
        parse_arg_string(text)
    message = str(info.value)
    assert SHORT_KEY not in message and where in message, message


def test_cli_model_args_error_names_the_item_not_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model", "dummy", "--tasks", "demo_qa", "--model_args", f"api_key={SHORT_KEY},{SHORT_KEY}"]
    line = _error_line(capsys, argv)
    assert line.startswith("--model_args: expected key=value") and "item 2" in line
    assert SHORT_KEY not in line


def test_config_type_errors_are_redacted() -> None:
    with pytest.raises(ConfigError) as info:
        EvalSettings.build({"model_args": [f"api_key={SHORT_KEY}"]})
    assert "--model_args" in str(info.value) and SHORT_KEY not in str(info.value)


# -- output folder names --------------------------------------------------------------------------


def test_folder_names_never_hold_a_secret() -> None:
    assert sanitize_model_name("openai", {"model": "sk-" + "a1B2" * 8}) == "openai"
    assert sanitize_model_name("openai", {"model": "Xy7kP2qLm9Rt4vBn8cWz3aJd6fGh1sKe"}) == "openai"
    register_secret("my-private-key-1")
    assert sanitize_model_name("openai", {"model": "my-private-key-1"}) == "openai"
    assert sanitize_model_name("sk-" + "a1B2" * 8) == "model"  # the one-name form
    # ordinary names are kept
    assert (
        sanitize_model_name("hf", {"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct"})
        == "Qwen__Qwen2.5-VL-7B-Instruct"
    )
    snapshot = "/hub/models--x/snapshots/0123456789abcdef0123456789abcdef01234567"
    assert sanitize_model_name("hf", {"pretrained": snapshot}).startswith("snapshots__0123")


def test_a_key_given_as_the_model_name_names_no_file(tmp_path: Path) -> None:
    key = "sk-" + "k3Y9" * 6
    argv = ["--model", "dummy", "--model_args", f"pretrained={key}", "--tasks", "demo_qa", "--limit", "2",
            "--output_path", str(tmp_path), "--log_samples", "--bootstrap_iters", "0"]  # fmt: skip
    assert main(argv) == 0
    written = list(tmp_path.rglob("*"))
    assert any(p.name.endswith("_results.json") for p in written)
    assert all(key not in str(p.relative_to(tmp_path)) for p in written)
    assert all(key not in p.read_text(encoding="utf-8") for p in written if p.is_file())


# -- bounds ---------------------------------------------------------------------------------------

BOUNDS = [
    ("limit", checks.MAX_DOCS),
    ("offset", checks.MAX_DOCS),
    ("repeats", checks.MAX_REPEATS),
    ("batch_size", checks.MAX_BATCH_SIZE),
    ("max_batch_size", checks.MAX_BATCH_SIZE),
    ("bootstrap_iters", checks.MAX_BOOTSTRAP_ITERS),
    ("max_tokens", checks.MAX_TOKEN_BUDGET),
    ("num_fewshot", checks.MAX_FEWSHOT),
]


@pytest.mark.parametrize(("option", "bound"), BOUNDS)
def test_counts_have_upper_bounds(option: str, bound: int) -> None:
    assert getattr(EvalSettings.build({option: bound}), option) == bound
    assert str(bound) in (EvalSettings.model_fields[option].description or "")  # documented
    for too_many in (bound + 1, 2**70, float(10**30)):
        with pytest.raises(ConfigError, match=rf"^--{option} must be at most {bound}, got "):
            EvalSettings.build({option: too_many})


def test_auto_batch_size_is_bounded_too() -> None:
    assert EvalSettings.build({"batch_size": "auto:64"}).batch_size == "auto:64"
    with pytest.raises(ConfigError, match="at most 4096"):
        EvalSettings.build({"batch_size": f"auto:{checks.MAX_BATCH_SIZE + 1}"})


def test_generation_counts_are_bounded() -> None:
    assert checks.check_gen_kwargs("n=4,max_new_tokens=512") == {"n": 4, "max_new_tokens": 512}
    for given, message in (
        (f"n={checks.MAX_REPEATS + 1}", "n must be a positive integer and at most 1000"),
        ("num_beams=100000", "num_beams must be a positive integer and at most 1000"),
        (
            f"max_new_tokens={10**12}",
            f"max_new_tokens must be a positive integer and at most {checks.MAX_NEW_TOKENS}",
        ),
    ):
        with pytest.raises(ConfigError, match=f"^--gen_kwargs: {message}, got "):
            checks.check_gen_kwargs(given)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--repeats", "1000000000"], "--repeats must be at most 1000, got 1000000000"),
        (["--limit", "1e30"], "--limit must be at most 1000000000"),
        (["--bootstrap_iters", str(2**70)], "--bootstrap_iters must be at most 1000000"),
        (["--batch_size", "99999999"], "--batch_size must be at most 4096"),
    ],
)
def test_cli_out_of_range_is_one_line(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert message in _error_line(capsys, ["--model", "dummy", "--tasks", "demo_qa", *flags])


# -- NUL bytes and text that is not UTF-8 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"output_path": "out\x00put"}, "--output_path: the value contains a NUL byte (character 4)"),
        ({"tasks": "demo_qa\x00"}, "--tasks: the value contains a NUL byte"),
        ({"include_path": "a\udcffb"}, "--include_path: the value contains bytes that are not UTF-8"),
        ({"model_args": {"api_key": "k\x00"}}, "--model_args: the value of 'api_key' contains a NUL"),
        ({"gen_kwargs": {"until": ["a", "\udc80"]}}, "--gen_kwargs: the value of 'until[1]' contains"),
        ({"model_args": {"a\x00": 1}}, "--model_args: a key contains a NUL byte"),
    ],
)
def test_nul_and_non_utf8_text_is_refused(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        EvalSettings.build(values)
    assert str(info.value).startswith(message), info.value


def test_nesting_is_bounded() -> None:
    deep: Any = "x"
    for _ in range(checks.MAX_NESTING + 1):
        deep = [deep]
    with pytest.raises(ConfigError, match="--model_args: lists and mappings nest more than 32 levels"):
        EvalSettings.build({"model_args": {"a": deep}})


@pytest.mark.parametrize("flag", ["--output_path", "--include_path"])
def test_cli_non_utf8_argument_is_one_line(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    bad = b"out\xff".decode("utf-8", "surrogateescape")  # what Python makes of such argv bytes
    for argv in (
        ["--model", "dummy", "--tasks", "demo_qa", flag, bad],
        ["eval", "--model", "dummy", "--tasks", "demo_qa", f"{flag}={bad}"],
    ):
        line = _error_line(capsys, argv)
        assert line.startswith(f"{flag}: the value contains bytes that are not UTF-8 (character 4)")
    assert _error_line(capsys, ["tasks", "list", "--include_path", bad]).startswith("--include_path:")


def test_path_within_is_nul_safe(tmp_path: Path) -> None:
    assert path_within(tmp_path, "a\x00b") is None
    assert path_within(tmp_path, "/etc\x00/passwd") is None
    assert path_within(tmp_path, "a/b") == tmp_path.resolve() / "a" / "b"


# -- the server -----------------------------------------------------------------------------------

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from lmms_eval.entrypoints.error_handler import INTERNAL_ERROR  # noqa: E402
from lmms_eval.entrypoints.server import create_app  # noqa: E402
from lmms_eval.entrypoints.server_args import ServerArgs  # noqa: E402


def server_app(root: Path) -> Any:
    args = ServerArgs(
        state_dir=str(root / "state"), output_root=str(root / "out"), cache_dir=str(root / "cache")
    )
    return create_app(args)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TestClient]:
    app = server_app(tmp_path)
    client = TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
    yield client
    app.state.service.store.close()


def _queued(client: TestClient) -> int:
    return int(client.get("/queue").json()["counts"].get("queued", 0))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model_args": f"api_key={SHORT_KEY},{SHORT_KEY}"}, "model_args"),
        ({"model_args": {"api_key": f"{SHORT_KEY}\x00"}}, "model_args"),
        ({"num_gpus": 2**70}, "num_gpus"),
        ({"repeats": 10**9}, "repeats"),
        ({"limit": 10**30}, "limit"),
        ({"batch_size": 10**30}, "batch_size"),
        ({"bootstrap_iters": 10**12}, "bootstrap_iters"),
        ({"output_path": "a\x00b"}, "output_path"),
        ({"tasks": "demo\x00qa"}, "tasks"),
        ({"include_path": "a\x00b"}, "include_path"),
        ({"use_cache": "c\udcffd"}, "use_cache"),
    ],
)
def test_bad_requests_are_422_naming_the_field(server: TestClient, body: dict[str, Any], field: str) -> None:
    raw = json.dumps({"model": "dummy", "tasks": "demo_qa", **body})  # lone surrogates as \\udcff
    answer = server.post("/evaluate", content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith(f"{field}: ") and "\n" not in detail and SHORT_KEY not in detail
    assert _queued(server) == 0


def test_a_route_crash_is_a_generic_500_and_a_redacted_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-crash-" + "Ab1" * 8
    register_secret(key)
    app = server_app(tmp_path)

    @app.get("/crash")
    def crash() -> None:
        raise RuntimeError(f"backend said: invalid key {key}")

    client = TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
    with caplog.at_level(logging.ERROR, logger="lmms_eval.entrypoints.error_handler"):
        answer = client.get("/crash")
    app.state.service.store.close()
    assert answer.status_code == 500 and answer.json() == {"detail": INTERNAL_ERROR}
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "RuntimeError: backend said: invalid key [REDACTED]" in logged and "Traceback" in logged
    assert key not in logged


def test_serve_puts_the_redaction_filter_on_uvicorn_loggers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import lmms_eval.entrypoints.server as server_module

    started: list[Any] = []
    monkeypatch.setattr(server_module, "launch_server", started.append)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).filters.clear()
    assert main(["serve", "--state_dir", str(tmp_path / "state"), "--port", "0"]) == 0
    assert len(started) == 1
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        assert any(isinstance(f, RedactingFilter) for f in logging.getLogger(name).filters), name
