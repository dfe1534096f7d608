"""Built-in filters, one by one and chained in ensembles as a task's filter_list builds them."""

from __future__ import annotations

from typing import Any

import pytest

from lmms_eval.api.filter import FilterEnsemble, build_filter_ensembles
from lmms_eval.api.instance import Instance
from lmms_eval.api.registry import get_filter
from lmms_eval.api.task_config import FilterConfig
from lmms_eval.errors import ConfigError
from lmms_eval.filters import (
    LowercaseFilter,
    MajorityVoteFilter,
    MapFilter,
    MultiChoiceRegexFilter,
    RegexFilter,
    StripThinkingFilter,
    TakeFirstFilter,
    TakeKFilter,
    UppercaseFilter,
    WhitespaceFilter,
    doc_choices,
)


def run_chain(
    steps: list[dict[str, Any]], resps: list[list[Any]], docs: list[Any] | None = None
) -> list[Any]:
    """Build an ensemble from filter_list YAML data and run it over instances with ``resps``."""
    config = FilterConfig.model_validate({"name": "f", "filter": steps})
    (ensemble,) = build_filter_ensembles([config], "t")
    instances = [
        Instance("generate_until", (), 0, {"task": "t", "doc_id": i}, resps=r) for i, r in enumerate(resps)
    ]
    ensemble.apply(instances, docs if docs is not None else [{}] * len(instances))
    return [inst.filtered_resps["f"] for inst in instances]


def test_every_documented_filter_is_registered() -> None:
    expected = {
        "take_first": TakeFirstFilter,
        "regex": RegexFilter,
        "majority_vote": MajorityVoteFilter,
        "take_first_k": TakeKFilter,
        "lowercase": LowercaseFilter,
        "uppercase": UppercaseFilter,
        "remove_whitespace": WhitespaceFilter,
        "map": MapFilter,
        "multi_choice_regex": MultiChoiceRegexFilter,
        "strip_thinking": StripThinkingFilter,
    }
    for name, cls in expected.items():
        assert get_filter(name) is cls


# ------------------------------------------------------------------------------------------------
# selection
# ------------------------------------------------------------------------------------------------


def test_take_first() -> None:
    assert TakeFirstFilter().apply([["a", "b"], ["c"], []], []) == ["a", "c", None]


def test_take_first_keeps_loglikelihood_pairs_whole() -> None:
    assert TakeFirstFilter().apply([[(-1.5, True)]], []) == [(-1.5, True)]


def test_take_first_k() -> None:
    assert TakeKFilter(k=2).apply([["a", "b", "c"], ["d"]], []) == [["a", "b"], ["d"]]
    # a single response (after take_first) is one response, not a sequence of characters
    assert TakeKFilter(k=2).apply(["abc"], []) == [["abc"]]


@pytest.mark.parametrize("k", [0, -1, "two"])
def test_take_first_k_rejects_bad_k(k: Any) -> None:
    with pytest.raises(ConfigError, match="take_first_k"):
        TakeKFilter(k=k)


def test_majority_vote() -> None:
    out = MajorityVoteFilter().apply([["a", "b", "a"], ["x", "y", "y", "x", "y"]], [])
    assert out == [["a"], ["y"]]


def test_majority_vote_ties_go_to_the_earliest_response() -> None:
    assert MajorityVoteFilter().apply([["b", "a"], ["c", "d", "d", "c"]], []) == [["b"], ["c"]]


def test_majority_vote_edge_cases() -> None:
    # unhashable responses (multi-round lists), one response, no response
    out = MajorityVoteFilter().apply([[["p", "q"], ["r"], ["p", "q"]], "solo", []], [])
    assert out == [[["p", "q"]], ["solo"], []]


# ------------------------------------------------------------------------------------------------
# regex
# ------------------------------------------------------------------------------------------------


def test_regex_default_pattern_extracts_the_gsm8k_answer() -> None:
    out = RegexFilter().apply([["so 3 + 4\n#### 7", "no final answer"]], [])
    assert out == [["7", "[invalid]"]]


def test_regex_group_select() -> None:
    text = "A: 1, then A: 22, finally A: 333"
    assert RegexFilter(r"A: (\d+)", group_select=0).extract(text) == "1"
    assert RegexFilter(r"A: (\d+)", group_select=1).extract(text) == "22"
    assert RegexFilter(r"A: (\d+)", group_select=-1).extract(text) == "333"
    assert RegexFilter(r"A: (\d+)", group_select=-3).extract(text) == "1"


@pytest.mark.parametrize("group_select", [3, -4])
def test_regex_group_select_out_of_range_falls_back(group_select: int) -> None:
    text = "A: 1, then A: 22, finally A: 333"
    assert RegexFilter(r"A: (\d+)", group_select=group_select, fallback="none").extract(text) == "none"


def test_regex_with_several_groups_takes_the_first_non_empty_one() -> None:
    f = RegexFilter(r"answer is \((\w)\)|answer is (\w)")
    assert f.extract("the answer is C") == "C"
    assert f.extract("the answer is (D)") == "D"


def test_regex_without_groups_returns_the_stripped_match() -> None:
    assert RegexFilter(r"\s\d+\s").extract("total 42 units") == "42"


def test_regex_non_string_responses() -> None:
    assert RegexFilter(r"(\d+)").apply([[None, 17]], []) == [["[invalid]", "17"]]


def test_regex_invalid_pattern_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="invalid regex_pattern"):
        RegexFilter("(unclosed")


def test_regex_unicode() -> None:
    assert RegexFilter(r"答案[:：]\s*(\S+)").extract("思考……答案：北京") == "北京"


# ------------------------------------------------------------------------------------------------
# text transforms
# ------------------------------------------------------------------------------------------------


def test_case_and_whitespace_filters() -> None:
    resps = [["  Straße ", "ÉTÉ"], "Mixed Case"]
    assert LowercaseFilter().apply(resps, []) == [["  straße ", "été"], "mixed case"]
    assert UppercaseFilter().apply(resps, []) == [["  STRASSE ", "ÉTÉ"], "MIXED CASE"]
    assert WhitespaceFilter().apply(resps, []) == [["Straße", "ÉTÉ"], "Mixed Case"]


def test_text_transforms_leave_non_strings_alone() -> None:
    resps = [[None, (-1.0, True), 3]]
    for cls in (LowercaseFilter, UppercaseFilter, WhitespaceFilter):
        assert cls().apply(resps, []) == resps


def test_map_filter() -> None:
    f = MapFilter(mapping_dict={"yes": 1, "no": 0}, default_value=-1)
    assert f.apply([["yes", "no", "maybe"], "yes", [["unhashable"]]], []) == [[1, 0, -1], 1, [-1]]


def test_map_filter_needs_a_mapping() -> None:
    with pytest.raises(ConfigError, match="mapping_dict"):
        MapFilter()


def test_strip_thinking_filter() -> None:
    resps = [["<think>hmm</think> B", "just text"], "reasoning</think>A"]
    assert StripThinkingFilter().apply(resps, []) == [["B", "just text"], "A"]
    custom = StripThinkingFilter(tags=[["[r]", "[/r]"]])
    assert custom.apply([["[r]x[/r]C <think>kept</think>"]], []) == [["C <think>kept</think>"]]
    assert StripThinkingFilter(tags="none").apply(["<think>x</think> y"], []) == ["<think>x</think> y"]


def test_strip_thinking_rejects_bad_tags() -> None:
    with pytest.raises(ConfigError, match="reasoning_tags"):
        StripThinkingFilter(tags="<think>")


# ------------------------------------------------------------------------------------------------
# multi_choice_regex
# ------------------------------------------------------------------------------------------------

DOC = {"choices": ["Paris", "London", "Berlin", "Madrid"]}


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("B", "B"),
        ("(C)", "C"),
        ("D.", "D"),
        (" [A] ", "A"),
        ("The answer is D.", "D"),
        ("Answer: (A)", "A"),
        ("**Answer:** C", "C"),
        ("the correct answer is option B", "B"),
        ("Option A is wrong. The answer is C.", "C"),
        ("A. Paris", "A"),
        ("B) London", "B"),
        ("I pick (D) here", "D"),
        ("I think it is London.", "B"),
        ("the capital is PARIS", "A"),
        ("I choose B because it fits", "B"),
    ],
)
def test_multi_choice_regex_letters(response: str, letter: str) -> None:
    assert MultiChoiceRegexFilter().extract(response, DOC) == letter


@pytest.mark.parametrize(
    "response",
    [
        "I think the answer is a city",  # lower-case "a" is an article, not a letter
        "no idea",
        "",
        "E",  # not one of the four choices
        "Both A and B look right",  # two stand-alone letters: ambiguous
    ],
)
def test_multi_choice_regex_falls_back(response: str) -> None:
    assert MultiChoiceRegexFilter().extract(response, DOC) == "[invalid]"


def test_multi_choice_regex_choice_text_matching() -> None:
    doc = {"choices": ["cat", "black cat", "dog", "10"]}
    f = MultiChoiceRegexFilter()
    assert f.extract("It is a black cat.", doc) == "B"  # "black cat" starts before its "cat"
    assert f.extract("a black cat", {"choices": ["black", "black cat"]}) == "B"  # same start: longer
    assert f.extract("a dog chased a cat", doc) == "C"  # the earliest mention
    assert f.extract("about 100 of them", doc) == "[invalid]"  # "10" only as a whole word
    assert MultiChoiceRegexFilter(ignore_case=False).extract("the Black Cat", doc) == "[invalid]"


def test_multi_choice_regex_ignore_punctuation() -> None:
    doc = {"choices": ["U.S.A.", "U.K."]}
    assert MultiChoiceRegexFilter().extract("probably the USA", doc) == "[invalid]"
    assert MultiChoiceRegexFilter(ignore_punctuation=True).extract("it is the U.K", doc) == "B"


def test_multi_choice_regex_without_choices_accepts_any_explicit_letter() -> None:
    f = MultiChoiceRegexFilter()
    assert f.extract("Answer: G", None) == "G"
    assert f.extract("I think so", None) == "[invalid]"  # "I" is a word, not an answer
    assert f.extract("London", {}) == "[invalid]"


def test_multi_choice_regex_custom_pattern_first() -> None:
    f = MultiChoiceRegexFilter(regex_pattern=r"FINAL=(\w+)", group_select=-1)
    assert f.extract("FINAL=x then FINAL=y; answer is B", DOC) == "y"
    assert f.extract("answer is B", DOC) == "B"  # no custom match: the built-in rules


def test_multi_choice_regex_reads_each_instances_own_doc() -> None:
    docs = [{"choices": ["red", "green"]}, {"options": ["green", "blue", "red"]}]
    out = MultiChoiceRegexFilter().apply([["green"], "green"], docs)
    assert out == [["B"], "A"]


def test_multi_choice_regex_rejects_misaligned_docs() -> None:
    with pytest.raises(ValueError, match="2 instances but 1 docs"):
        MultiChoiceRegexFilter().apply(["A", "B"], [DOC])


@pytest.mark.parametrize(
    ("doc", "letters", "texts"),
    [
        ({"choices": ["x", "y"]}, ("A", "B"), ("x", "y")),
        ({"options": "['x', 'y', 'z']"}, ("A", "B", "C"), ("x", "y", "z")),
        ({"options": '["x", "y"]'}, ("A", "B"), ("x", "y")),
        ({"choices": {"C": "x", "D": "y"}}, ("C", "D"), ("x", "y")),
        ({"choices": {"label": ["1", "2"], "text": ["x", "y"]}}, ("A", "B"), ("x", "y")),
        ({"choices": {"label": ["a", "b"], "text": ["x", "y"]}}, ("A", "B"), ("x", "y")),
    ],
)
def test_doc_choices_shapes(doc: dict[str, Any], letters: tuple[str, ...], texts: tuple[str, ...]) -> None:
    choices = doc_choices(doc)
    assert choices is not None
    assert (choices.letters, choices.texts) == (letters, texts)


def test_doc_choices_absent_or_unreadable() -> None:
    assert doc_choices({"choices": "not a list"}) is None
    assert doc_choices({"question": "q"}) is None
    assert doc_choices("a string doc") is None
    assert doc_choices({"alts": ["x"]}, field="alts") is not None


def test_multi_choice_regex_with_letter_keyed_options() -> None:
    doc = {"options": {"C": "cat", "D": "dog"}}
    assert MultiChoiceRegexFilter().extract("a dog", doc) == "D"
    assert MultiChoiceRegexFilter().extract("Answer: A", doc) == "[invalid]"


# ------------------------------------------------------------------------------------------------
# chains, as filter_list builds them
# ------------------------------------------------------------------------------------------------


def test_chain_regex_then_take_first() -> None:
    steps = [{"function": "regex", "regex_pattern": r"#### (\d+)"}, {"function": "take_first"}]
    assert run_chain(steps, [["#### 5", "#### 6"], ["none"]]) == ["5", "[invalid]"]


def test_chain_take_first_then_lowercase() -> None:
    steps = [{"function": "take_first"}, {"function": "lowercase"}]
    assert run_chain(steps, [["ABC", "DEF"], ["Ünïcode"]]) == ["abc", "ünïcode"]


def test_chain_majority_vote_then_take_first() -> None:
    steps = [
        {"function": "regex", "regex_pattern": r"= (\d+)"},
        {"function": "majority_vote"},
        {"function": "take_first"},
    ]
    resps = [["x = 3", "x = 4", "so x = 4"], ["x = 1", "?"]]
    assert run_chain(steps, resps) == ["4", "1"]


def test_chain_majority_vote_then_map() -> None:
    steps = [
        {"function": "majority_vote"},
        {"function": "map", "mapping_dict": {"yes": 1, "no": 0}, "default_value": -1},
    ]
    assert run_chain(steps, [["no", "yes", "yes"], ["eh", "eh"]]) == [[1], [-1]]


def test_chain_take_first_k_then_majority_vote() -> None:
    steps = [{"function": "take_first_k", "k": 3}, {"function": "majority_vote"}]
    assert run_chain(steps, [["a", "b", "b", "a", "a"]]) == [["b"]]


def test_chain_strip_thinking_then_multi_choice_regex_uses_docs() -> None:
    steps = [{"function": "strip_thinking"}, {"function": "multi_choice_regex"}, {"function": "take_first"}]
    docs = [{"choices": ["yes", "no"]}, {"choices": ["no", "yes"]}]
    resps = [["<think>maybe yes</think>no"], ["<think>B?</think> yes"]]
    assert run_chain(steps, resps, docs) == ["B", "B"]


def test_default_ensemble_is_none_take_first() -> None:
    (ensemble,) = build_filter_ensembles(None, "t")
    assert ensemble.name == "none"
    assert [type(f) for f in ensemble.filters] == [TakeFirstFilter]


def test_filter_list_errors_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown filter 'take_frist'"):
        run_chain([{"function": "take_frist"}], [["a"]])
    with pytest.raises(ConfigError, match="step 'regex'"):
        run_chain([{"function": "regex", "pattern": "x"}], [["a"]])
    with pytest.raises(ConfigError, match="takes no arguments"):
        run_chain([{"function": "take_first", "k": 1}], [["a"]])


def test_ensembles_do_not_chain_with_each_other() -> None:
    first = FilterEnsemble("lower", [LowercaseFilter(), TakeFirstFilter()])
    second = FilterEnsemble("raw", [TakeFirstFilter()])
    inst = Instance("generate_until", (), 0, {"task": "t", "doc_id": 0}, resps=["ABC"])
    first.apply([inst], [{}])
    second.apply([inst], [{}])
    assert inst.filtered_resps == {"lower": "abc", "raw": "ABC"}
