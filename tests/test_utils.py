"""Argument strings, value typing, redaction and output-folder names."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_eval.errors import ModelArgsError
from lmms_eval.utils import parse_arg_string, parse_value, redact, sanitize_model_name


def test_arg_string_types_values_and_keeps_json_whole() -> None:
    parsed = parse_arg_string(
        "pretrained=org/m,max_pixels=12845056,scale=0.5,flag=true,off=False,none=None,"
        'kw={"a": [1, 2], "b": "x,y"},items=[1, 2],quoted="a,b",prompt=Don\'t stop,revision=0123,empty='
    )
    assert parsed == {
        "pretrained": "org/m", "max_pixels": 12845056, "scale": 0.5, "flag": True, "off": False, "none": None,
        "kw": {"a": [1, 2], "b": "x,y"}, "items": [1, 2], "quoted": "a,b", "prompt": "Don't stop",
        "revision": "0123", "empty": "",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a=1,a=2", "given twice"),
        ("novalue", "expected key=value"),
        ("kw={broken", "unbalanced"),
        ("j={1: 2}", "JSON"),
    ],
)
def test_bad_arg_strings_raise_clear_errors(text: str, fragment: str) -> None:
    with pytest.raises(ModelArgsError, match=fragment):
        parse_arg_string(text)


def test_json_object_argument_string_and_mappings() -> None:
    assert parse_arg_string('{"a": 1}') == {"a": 1}
    assert parse_arg_string({"b": 2}) == {"b": 2}
    assert parse_arg_string(None) == {} == parse_arg_string("  ")


@pytest.mark.parametrize(
    ("raw", "value"), [("1e-3", 0.001), ("-4", -4), ("0", 0), ("00", "00"), ("'7'", "7")]
)
def test_parse_value(raw: str, value: object) -> None:
    assert parse_value(raw) == value and type(parse_value(raw)) is type(value)


def test_redact_secret_keys_and_token_strings_but_not_lookalikes() -> None:
    data = {
        "api_key": "abc", "hf_token": "x", "token_counts": [1], "cluster_key": "videoID", "max_tokens": 5,
        "model_args": "pretrained=m,api_key=abc,temperature=0", "note": "uses hf_abcdefghijklmnopqrstuvwxyz",
    }  # fmt: skip
    out = redact(data)
    assert out["api_key"] == out["hf_token"] == "[REDACTED]"
    assert out["token_counts"] == [1] and out["cluster_key"] == "videoID" and out["max_tokens"] == 5
    assert out["model_args"] == "pretrained=m,api_key=[REDACTED],temperature=0"
    assert "hf_abc" not in out["note"]


def test_sanitized_model_names() -> None:
    assert (
        sanitize_model_name("qwen2_5_vl", {"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct"})
        == "Qwen__Qwen2.5-VL-7B-Instruct"
    )
    assert sanitize_model_name("vllm", {"model": "/ckpt/run/epoch_3/"}) == "run__epoch_3"
    assert sanitize_model_name("dummy", {}) == "dummy"
    # the published one-name form (published task files call it), as the published package answers
    assert sanitize_model_name("Qwen/Qwen2-VL-7B") == "Qwen__Qwen2-VL-7B"
    assert sanitize_model_name("/data/ckpts/run1/step100") == "run1__step100"
    assert sanitize_model_name("/data/ckpts/run1/step100", True) == "__data__ckpts__run1__step100"
    assert sanitize_model_name("a:b", full_path=True) == "a__b"
    assert sanitize_model_name("org/name/with/many/parts") == "many__parts"
    assert sanitize_model_name("vllm", {"model_path": "/ckpt/run/epoch_3"}) == "run__epoch_3"


@pytest.mark.parametrize("value", ["..", "../..", "../../etc", "/", ".", "a/..", "..\\..\\x", "~/../.."])
def test_output_folder_names_never_leave_the_output_path(value: str, tmp_path: Path) -> None:
    name = sanitize_model_name("model", {"pretrained": value})
    target = (tmp_path / name).resolve()
    assert name and "/" not in name and "\\" not in name and not name.startswith(".")
    assert target.parent == tmp_path.resolve()
