"""Reasoning-tag stripping and the reasoning_tags setting."""

from __future__ import annotations

from typing import Any

import pytest

from lmms_eval.api.reasoning import (
    DEFAULT_REASONING_TAGS,
    parse_reasoning_tags_config,
    strip_reasoning_tags,
)
from lmms_eval.errors import ConfigError

# ------------------------------------------------------------------------------------------------
# strip_reasoning_tags
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>let me see</think>The answer is B", "The answer is B"),
        ("<think>a</think>X<think>b</think>Y", "XY"),
        ("before <think>\nmulti\nline\n</think> after", "before  after"),
        ("<analysis>hmm</analysis>final", "final"),
        ("<think>x</think><analysis>y</analysis> both", "both"),
        ("no tags at all  ", "no tags at all"),
        ("", ""),
        ("<think>only thinking</think>", ""),
    ],
)
def test_blocks_are_removed(text: str, expected: str) -> None:
    assert strip_reasoning_tags(text) == expected


def test_only_an_end_tag_keeps_the_text_after_the_last_one() -> None:
    # the start tag was pre-filled by the chat template
    assert strip_reasoning_tags("reasoning goes here</think> B") == "B"
    assert strip_reasoning_tags("step 1</think>step 2</think> C") == "C"


def test_prefilled_start_with_a_later_full_block() -> None:
    text = "prefilled</think>answer <think>second thoughts</think> final"
    assert strip_reasoning_tags(text) == "answer  final"


def test_an_unclosed_start_tag_is_left_alone() -> None:
    assert strip_reasoning_tags("<think>cut off by max tokens") == "<think>cut off by max tokens"


def test_custom_tags_only_strip_those_tags() -> None:
    tags = [("[[", "]]")]
    assert strip_reasoning_tags("[[x]]a <think>y</think>", tags) == "a <think>y</think>"
    # tags are literal text, not regular expressions
    assert strip_reasoning_tags("<tx>keep</tx> <t.>drop</t.>", [("<t.>", "</t.>")]) == "<tx>keep</tx>"


def test_empty_tag_list_strips_only_whitespace() -> None:
    assert strip_reasoning_tags(" <think>x</think> ", []) == "<think>x</think>"


def test_unicode_around_tags() -> None:
    assert strip_reasoning_tags("<think>考虑一下</think>答案：北京 🚀") == "答案：北京 🚀"


def test_non_strings_pass_through() -> None:
    assert strip_reasoning_tags(None) is None
    pair = (-1.0, True)
    assert strip_reasoning_tags(pair) is pair


# ------------------------------------------------------------------------------------------------
# parse_reasoning_tags_config
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, False, "none", "None", "false", " FALSE ", "null", "", "[]", []])
def test_disabled_values(value: Any) -> None:
    assert parse_reasoning_tags_config(value) is None


@pytest.mark.parametrize("value", [True, "default", "true"])
def test_default_values(value: Any) -> None:
    assert parse_reasoning_tags_config(value) == [("<think>", "</think>"), ("<analysis>", "</analysis>")]


def test_default_is_not_shared_mutable_state() -> None:
    tags = parse_reasoning_tags_config(True)
    assert tags is not None
    tags.append(("x", "y"))
    assert len(DEFAULT_REASONING_TAGS) == 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('[["<r>", "</r>"]]', [("<r>", "</r>")]),
        ('[["<a>", "</a>"], ["<b>", "</b>"]]', [("<a>", "</a>"), ("<b>", "</b>")]),
        ([["<r>", "</r>"]], [("<r>", "</r>")]),
        ((("<r>", "</r>"),), [("<r>", "</r>")]),
        (DEFAULT_REASONING_TAGS, DEFAULT_REASONING_TAGS),
        ('["<r>", "</r>"]', [("<r>", "</r>")]),  # one pair without the outer list
    ],
)
def test_tag_pairs(value: Any, expected: list[tuple[str, str]]) -> None:
    assert parse_reasoning_tags_config(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "<think>",  # not JSON
        '[["<think>", "</think>"]',  # broken JSON
        '[["<think>"]]',  # not a pair
        '[["<think>", ""]]',  # empty tag
        '[["<a>", 1]]',  # not a string
        '{"start": "<a>"}',
        "5",
        7,
        ["<a>", "</a>", "<b>"],
    ],
)
def test_invalid_values_raise_a_clear_config_error(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"reasoning_tags: expected 'none', 'false' or a JSON list"):
        parse_reasoning_tags_config(value)
