"""Bad values on the command line: run settings, --gen_kwargs, typed --model_args and --config files.

Every one is a single ``lmms-eval: error: ...`` line naming the option and what it allows (exit 1),
never a traceback.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Literal

import pytest

from lmms_eval import settings
from lmms_eval.api.instance import GenerationResult, Instance
from lmms_eval.api.model import lmms
from lmms_eval.cli import main
from lmms_eval.cli.config import load_run_configs
from lmms_eval.cli.eval import merge_run_configs
from lmms_eval.errors import ConfigError, ModelArgsError
from lmms_eval.models.chat.openai import OpenAICompatible

LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d [DIWEC] ")  # a log record (configure_logging's format)


def _error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI, expect exit 1 and return its one error line (log records aside)."""
    assert main(argv) == 1
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not LOG_LINE.match(line)]
    assert len(err) == 1, err  # one line, no traceback
    assert err[0].startswith("lmms-eval: error: ")
    return err[0].removeprefix("lmms-eval: error: ")


# -- run settings ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [(None, None), (-1, None), (-1.0, None), (0, 0), (5, 5), (5.0, 5), ("7", 7), (0.25, 0.25), (1.0, 1)],
)
def test_limit_accepts_counts_fractions_and_minus_one_for_all(given: Any, expected: Any) -> None:
    value = settings.check_limit(given)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("given", [math.nan, math.inf, -math.inf, 1.5, -3, -0.5, "abc", True, [1]])
def test_limit_rejects_nan_inf_fractions_above_one_and_other_negatives(given: Any) -> None:
    with pytest.raises(ConfigError) as info:
        settings.check_limit(given)
    message = str(info.value)
    assert message.startswith("--limit must be ") and "fraction between 0 and 1" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("check", "good", "bad", "option"),
    [
        (settings.check_offset, [(0, 0), (3.0, 3), ("4", 4)], [-1, 1.5, None, "x", math.nan], "--offset"),
        (settings.check_repeats, [(None, None), (1, 1), (5, 5)], [0, -2, 2.5, "many"], "--repeats"),
        (settings.check_bootstrap_iters, [(0, 0), (1000, 1000)], [-5, 0.5, math.inf], "--bootstrap_iters"),
        (settings.check_max_tokens, [(None, None), (1, 1), (10**9, 10**9)], [0, -1, 1.5], "--max_tokens"),
    ],
)
def test_integer_settings(check: Any, good: list[tuple[Any, Any]], bad: list[Any], option: str) -> None:
    for given, expected in good:
        assert check(given) == expected
    for given in bad:
        with pytest.raises(ConfigError, match=rf"^{option} must be a whole number >= \d"):
            check(given)


def test_seeds() -> None:
    assert [settings.check_seed(v) for v in (None, 0, 1234, 2**32 - 1)] == [None, 0, 1234, 2**32 - 1]
    for bad in (-1, 2**32, 1.5):
        with pytest.raises(ConfigError, match=r"^--seed values must be whole numbers"):
            settings.check_seed(bad)


def test_gen_kwargs_are_typed_and_unknown_ones_pass_through() -> None:
    typed = settings.check_gen_kwargs(
        'max_new_tokens=16,temperature=0,top_p=0.9,do_sample=false,until=["Q:"],num_beams=2,'
        "top_k=0,seed=3,n=1,repetition_penalty=1.1,my_backend_flag=x"
    )
    assert typed == {
        "max_new_tokens": 16,
        "temperature": 0.0,
        "top_p": 0.9,
        "do_sample": False,
        "until": ["Q:"],
        "num_beams": 2,
        "top_k": 0,
        "seed": 3,
        "n": 1,
        "repetition_penalty": 1.1,
        "my_backend_flag": "x",
    }
    # a mapping (from a --config file) is typed the same way; numeric text counts
    assert settings.check_gen_kwargs({"max_new_tokens": "8", "do_sample": "true", "until": "."}) == {
        "max_new_tokens": 8,
        "do_sample": True,
        "until": ".",
    }
    assert settings.check_gen_kwargs(None) == {} and settings.check_gen_kwargs("") == {}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("max_new_tokens=abc", "--gen_kwargs: max_new_tokens must be a positive integer, got 'abc'"),
        ("max_new_tokens=0", "--gen_kwargs: max_new_tokens must be a positive integer, got 0"),
        ("max_new_tokens=1.5", "--gen_kwargs: max_new_tokens must be a positive integer, got 1.5"),
        ("num_beams=-1", "--gen_kwargs: num_beams must be a positive integer, got -1"),
        ("top_k=-1", "--gen_kwargs: top_k must be an integer >= 0, got -1"),
        ("temperature=-0.5", "--gen_kwargs: temperature must be a finite number >= 0, got -0.5"),
        ("temperature=hot", "--gen_kwargs: temperature must be a finite number >= 0, got 'hot'"),
        ("top_p=1.5", "--gen_kwargs: top_p must be a number between 0 and 1, got 1.5"),
        ("repetition_penalty=0", "--gen_kwargs: repetition_penalty must be a finite number > 0, got 0"),
        ("do_sample=maybe", "--gen_kwargs: do_sample must be true or false, got 'maybe'"),
        ("until=[1, 2]", "--gen_kwargs: until must be a string or a list of strings, got [1, 2]"),
        ("max_new_tokens=[1", "--gen_kwargs: unbalanced quotes or brackets"),
    ],
)
def test_gen_kwargs_errors_name_the_key_and_the_value(given: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings.check_gen_kwargs(given)
    assert str(info.value).startswith(message)


def test_run_config_uses_the_same_checks_and_keeps_their_one_line(tmp_path: Path) -> None:
    (run,) = merge_run_configs({"model": "dummy", "tasks": "demo_qa", "limit": -1.0})
    assert run.settings.limit is None  # -1: all
    (run,) = merge_run_configs({"model": "dummy", "tasks": "demo_qa", "limit": 3.0, "gen_kwargs": "n=2"})
    assert run.settings.limit == 3 and run.settings.gen_kwargs == "n=2"  # checked, kept as given
    with pytest.raises(ConfigError, match=r"^--limit must be .*got nan$"):
        merge_run_configs({"model": "dummy", "tasks": "demo_qa", "limit": math.nan})
    config = tmp_path / "run.yaml"
    config.write_text("model: dummy\ntasks: demo_qa\noffset: -4\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^\S*run\.yaml: --offset must be a whole number >= 0, got -4$"):
        merge_run_configs({"config": str(config)})
    config.write_text("model: dummy\ntasks: demo_qa\ngen_kwargs: {temperature: hot}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^\S*run\.yaml: --gen_kwargs: temperature must be"):
        merge_run_configs({"config": str(config)})


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--limit", "nan"], "--limit must be a whole number of documents (0 or more) or a fraction"),
        (["--limit", "inf"], "--limit must be a whole number"),
        (["--limit", "1.5"], "--limit must be a whole number"),
        (["--limit", "-3"], "got -3"),
        (["--offset", "-2"], "--offset must be a whole number >= 0, got -2"),
        (["--repeats", "0"], "--repeats must be a whole number >= 1, got 0"),
        (["--bootstrap_iters", "-5"], "--bootstrap_iters must be a whole number >= 0"),
        (["--max_tokens", "0"], "--max_tokens must be a whole number >= 1, got 0"),
        (["--gen_kwargs", "max_new_tokens=abc"], "--gen_kwargs: max_new_tokens must be a positive integer"),
        (["--seed", "-1"], "--seed values must be whole numbers from 0 to 4294967295 or None, got -1"),
        (["--seed", "1,2,None,4294967296"], "--seed values must be whole numbers from 0 to 4294967295"),
    ],
)
def test_cli_bad_values_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert message in _error_line(capsys, ["--model", "dummy", "--tasks", "demo_qa", *flags])


def test_cli_limit_minus_one_means_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model", "dummy", "--tasks", "demo_qa", "--limit", "-1", "--bootstrap_iters", "0"]) == 0
    assert "limit: None" in capsys.readouterr().out


# -- typed --model_args -----------------------------------------------------------------------------------


class Typed(lmms):
    def __init__(
        self,
        count: int = 1,
        ratio: float = 0.5,
        maybe: int | None = None,
        flag: bool = False,
        name: str = "x",
        mode: Literal["fast", "slow"] = "fast",
        size: int | str = 1,
        items: list[str] | None = None,
        options: dict[str, Any] | None = None,
        anything=None,  # unannotated on purpose
        api_key: str | None = None,
        legacy: str = None,  # type: ignore[assignment]  # noqa: RUF013 - as in ported code
    ) -> None:
        super().__init__()
        self.values = {k: v for k, v in locals().items() if k not in ("self", "__class__")}

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        return []


class Unresolvable(lmms):
    def __init__(self, device: SomeTorchType = None, steps: int = 1) -> None:  # type: ignore[name-defined]  # noqa: F821
        super().__init__()
        self.device, self.steps = device, steps

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        return []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("count=3", {"count": 3}),
        ("count=3.0", {"count": 3}),  # a whole float is an int
        ("ratio=1", {"ratio": 1.0}),  # ints are numbers
        ("maybe=none,legacy=none", {"maybe": None, "legacy": None}),
        ("maybe=2", {"maybe": 2}),
        ("flag=true", {"flag": True}),
        ("flag=0", {"flag": False}),
        ("name=16", {"name": "16"}),  # `response=16` means the text "16"
        ("mode=slow", {"mode": "slow"}),
        ("size=auto", {"size": "auto"}),
        ("size=4", {"size": 4}),
        ('items=["a"],options={"k": 1}', {"items": ["a"], "options": {"k": 1}}),
        ("anything=[1, {}]", {"anything": [1, {}]}),
    ],
)
def test_model_args_that_fit_the_annotations(args: str, expected: dict[str, Any]) -> None:
    model = Typed.create_from_arg_string(args)
    for key, value in expected.items():
        assert model.values[key] == value and type(model.values[key]) is type(value), key


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("count=many", "argument 'count' must be an integer, got 'many'"),
        ("count=1.5", "argument 'count' must be an integer, got 1.5"),
        ("count=true", "argument 'count' must be an integer, got true"),
        ("count=none", "argument 'count' must be an integer, got None"),
        ("ratio=half", "argument 'ratio' must be a number, got 'half'"),
        ("maybe=x", "argument 'maybe' must be an integer, got 'x'"),
        ("flag=yes", "argument 'flag' must be true or false, got 'yes'"),
        ("flag=2", "argument 'flag' must be true or false, got 2"),
        ("name=true", "argument 'name' must be a string, got true (quote it to pass it as text: name='...')"),
        ("mode=fats", "argument 'mode' must be one of 'fast', 'slow', got 'fats'. Did you mean 'fast'?"),
        ("size=[1]", "argument 'size' must be an integer or a string, got [1]"),
        ("items=abc", "argument 'items' must be a list, got 'abc'"),
        ("options=[1]", "argument 'options' must be a mapping, got [1]"),
    ],
)
def test_model_args_that_do_not_fit_are_one_line_errors(args: str, message: str) -> None:
    with pytest.raises(ModelArgsError) as info:
        Typed.create_from_arg_string(args)
    assert str(info.value) == f"model 'Typed': {message}"


def test_secret_values_are_never_echoed() -> None:
    with pytest.raises(ModelArgsError) as info:
        Typed.create_from_arg_string({"api_key": ["sk-never-shown-anywhere-1234"]})
    message = str(info.value)
    assert "sk-never" not in message and "never-shown" not in message
    assert (
        message
        == "model 'Typed': argument 'api_key' must be a string, got a list (value not shown: 'api_key' holds a secret)"
    )


def test_unresolvable_annotations_accept_anything_but_the_rest_is_checked() -> None:
    assert Unresolvable.create_from_arg_string("device=cuda:0,steps=2").steps == 2
    with pytest.raises(ModelArgsError, match="'steps' must be an integer, got 'two'"):
        Unresolvable.create_from_arg_string("steps=two")


def test_real_model_classes() -> None:
    with pytest.raises(ModelArgsError) as info:
        OpenAICompatible.create_from_arg_string("model=gpt,timeout=fast")
    assert str(info.value) == "model 'OpenAICompatible': argument 'timeout' must be a number, got 'fast'"
    with pytest.raises(ModelArgsError, match=r"'max_retries' must be an integer, got 2\.5"):
        OpenAICompatible.create_from_arg_string("model=gpt,max_retries=2.5")


def test_cli_dummy_model_args(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["--model", "dummy", "--model_args", "accuracy=fast", "--tasks", "demo_qa"])
    assert "argument 'accuracy' must be a number, got 'fast'" in line
    line = _error_line(capsys, ["--model", "dummy", "--model_args", "echo=maybe", "--tasks", "demo_qa"])
    assert "argument 'echo' must be true or false, got 'maybe'" in line
    # the documented `response=16` still means the text "16"
    args = ["--model", "dummy", "--model_args", "response=16", "--tasks", "demo_qa", "--limit", "2"]
    assert main(args) == 0


# -- --config files -------------------------------------------------------------------------------------


def test_config_that_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["--config", str(tmp_path)])
    assert line == f"--config {tmp_path}: is a folder; pass a YAML file"


def test_config_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("model: dummy\nsystem_instruction: caf\xe9\n".encode("latin-1"))
    line = _error_line(capsys, ["--config", str(path)])
    assert line == f"--config {path}: not UTF-8 text (byte 0xe9 at offset 36); save the file as UTF-8"


def test_config_with_a_byte_order_mark_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfmodel: dummy\ntasks: demo_qa\n")
    assert load_run_configs(str(path)) == [{"env": {}, "model": "dummy", "tasks": "demo_qa"}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file has no options (it is empty or all comments)"),
        ("# just a comment\n", "the file has no options"),
        ("[]\n", "the list of runs is empty; give at least one run"),
    ],
)
def test_empty_config(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text, encoding="utf-8")
    assert message in _error_line(capsys, ["--config", str(path)])


def test_unreadable_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text("model: dummy\n", encoding="utf-8")
    if os.geteuid() != 0:  # a real permission error
        path.chmod(0)
    else:  # root reads everything: make open() fail as it would for another user
        real_open = open

        def deny(file: Any, *args: Any, **kwargs: Any) -> Any:
            if str(file) == str(path):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr("builtins.open", deny)
    line = _error_line(capsys, ["--config", str(path)])
    assert line == f"--config {path}: cannot read it: Permission denied"
