"""lmms_eval.scoring.choice: letter extraction (each rule and its priority) and the match rules."""

from __future__ import annotations

import math

import pytest

from lmms_eval.errors import ConfigError
from lmms_eval.filters.choice import LeadingLetterFilter, MCQLetterFilter
from lmms_eval.scoring.choice import (
    choice_or_text_match,
    extract_mcq_answer,
    first_char_match,
    index_to_letter,
    leading_letter,
    letter_or_leading_letter_match,
    macro_mean,
    mcq_match,
    most_likely_choice,
)

# ------------------------------------------------------------------------------------------------
# extract_mcq_answer: each rule on its own
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        # 1. answer statements
        ("The answer is (B)", "B"),
        ("Answer: B", "B"),
        ("answer:\nC", "C"),
        ("The correct option is **D**.", "D"),
        ("Best choice: option (A)", "A"),
        ("The answer is: option C", "C"),
        ("The answer is A because the arrow points left.", "A"),
        ("So \\boxed{C}", "C"),
        ("Final: $\\boxed{\\text{D}}$", "D"),
        # 2. the whole output is a letter (any case)
        ("B", "B"),
        ("b", "B"),
        ("(C)", "C"),
        ("D.", "D"),
        ("**A**", "A"),
        ("[B]", "B"),
        ("  c  ", "C"),
        # 3. a leading letter with a delimiter
        ("B. a cat", "B"),
        ("(C) the dog", "C"),
        ("D) none of these", "D"),
        ("A: the red one", "A"),
        ("**B.** the blue one", "B"),
        ("C\nBecause the picture shows it.", "C"),
        # 4. a letter declared right
        ("I think C is correct.", "C"),
        ("(D) is the best fit.", "D"),
        # 5. option / choice
        ("I pick option B.", "B"),
        ("choice (D) fits", "D"),
        # 6-8. bold, bracketed, lone letter anywhere
        ("It has to be **C** here", "C"),
        ("It is (D), clearly.", "D"),
        ("My guess: it's B", "B"),
        # full-width forms are folded
        ("（Ｂ）", "B"),
    ],
)
def test_each_rule_finds_its_letter(text: str, letter: str) -> None:
    assert extract_mcq_answer(text) == letter


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "Blue",  # a word starting with a letter is not a letter
        "The answer is A cat.",  # "A" before a lowercase word is the article
        "A cat sits on the mat.",
        "option A or option B",  # rule 5 disagrees with itself, and so does rule 8
        "Between (A) and (B) I cannot decide",
        "The answer is E",  # E is not an allowed letter
        "answer: b",  # lowercase counts only when it is the whole output
        "42",
    ],
)
def test_no_letter_gives_none_never_a_guess(text: str) -> None:
    assert extract_mcq_answer(text) is None


def test_non_text_gives_none() -> None:
    assert extract_mcq_answer(None) is None
    assert extract_mcq_answer(3) is None


# ------------------------------------------------------------------------------------------------
# extract_mcq_answer: priority between rules
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "letter", "why"),
    [
        ("The answer is A... no wait, the answer is D", "D", "the last statement wins"),
        ("(A) looks right but the answer is C", "C", "statement (1) beats a bracketed letter (8)"),
        ("B. Although option C is tempting", "B", "leading letter (3) beats option (6)"),
        ("Option A is wrong; B is correct.", "B", "'B is correct' (4) beats 'option A' (6)"),
        ("Consider (A); **C** is my pick", "C", "bold (7) beats bracketed (8)"),
        ("Option (A) seems odd, D too", "A", "option (6) beats a lone letter (9)"),
        ("(A) or B", "A", "after 'or' B is no final answer (5); bracketed (8) beats lone (9)"),
        ("A cat is left of the box, so C", "C", "the article A is not a lone letter"),
        ("The answer is B and \\boxed{D}", "D", "answers and boxes: the last one wins"),
        # rule 5: the final standalone letter, when no statement names one
        ("... C is wrong, so B", "B", "final letter (5) beats lone letters that disagree (9)"),
        ("C is wrong, so (B).", "B", "final bracketed letter with a full stop"),
        ("Both A and B are wrong, D", "D", "final letter after a comma"),
        ("I pick A. But wait, option C", "C", "final 'option C' (5) beats option rule (6)"),
        ("The answer is A, not B", "A", "statement (1) beats the final letter (5)"),
        ("B. Not C", "B", "leading letter (3) beats the final letter (5)"),
        ("C, not D", None, "after 'not' D is no final answer, and the lone letters disagree"),
        ("Either A and B", None, "after 'and' B is no final answer"),
    ],
)
def test_priority_between_rules(text: str, letter: str | None, why: str) -> None:
    assert extract_mcq_answer(text) == letter, why


def test_letters_limit_the_options() -> None:
    assert extract_mcq_answer("The answer is E", "ABCDE") == "E"
    assert extract_mcq_answer("E", "ABCD") is None
    # With I allowed, "I think" is the pronoun, not option I.
    assert extract_mcq_answer("I think it is F", "ABCDEFGHIJ") == "F"
    with pytest.raises(ValueError, match="distinct uppercase letters"):
        extract_mcq_answer("A", "abcd")
    with pytest.raises(ValueError, match="distinct uppercase letters"):
        extract_mcq_answer("A", "AAB")


def test_mcq_match_compares_with_the_gold_letter() -> None:
    assert mcq_match("The answer is (b)", "B") is False  # lowercase inside a sentence: no letter
    assert mcq_match("The answer is (B)", "b") is True  # the gold may be any case
    assert mcq_match("A cat", "A") is False


# ------------------------------------------------------------------------------------------------
# the narrower rules
# ------------------------------------------------------------------------------------------------


def test_leading_letter_needs_uppercase_and_full_stop() -> None:
    assert leading_letter("B. a cat") == "B"
    assert leading_letter("  C.") == "C"
    assert leading_letter("B") is None
    assert leading_letter("b. cat") is None
    assert leading_letter("(B)") is None
    assert leading_letter(None) is None


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("B", True),
        (" b ", True),  # the stripped output equals the letter, ignoring case
        ("B. a cat", True),  # uppercase letter + full stop
        ("b. a cat", False),  # the leading form needs an uppercase letter
        ("C. a dog", False),
        ("(B)", False),
        ("The answer is B", False),
        (None, False),
    ],
)
def test_scienceqa_rule(prediction: str | None, expected: bool) -> None:
    assert letter_or_leading_letter_match(prediction, "B") is expected


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("B", True),
        ("b", True),
        ("  B. a dog", True),
        ("Because it is red", True),  # only the first character counts
        ("(B)", False),
        ("The answer is B", False),
        ("", False),
        (None, False),
    ],
)
def test_seedbench_first_character_rule(prediction: str | None, expected: bool) -> None:
    assert first_char_match(prediction, "B") is expected


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("The answer is C.", "C", True),  # letter gold: extracted letter
        ("C", "C", True),
        ("A cat", "A", False),  # the article is not option A
        ("3", "3", True),  # open gold: whole output
        ("3.", "3", True),  # a trailing full stop is ignored
        ("Yes.", "yes", True),  # case is ignored
        ("3 cars", "3", False),
        ("There are 3", "3", False),
        ("3 .", "3", False),  # only the output's trailing full stops go, not a space before them
        ("3..", "3", True),
        ("yes", "yes.", False),  # the gold keeps its full stop (published rule)
        ("b", "B", True),  # a bare lowercase letter is the option (the published rule says no)
        ("C is wrong, so B", "B", True),  # the final letter (the published rule reads C)
        (None, "3", False),
        (None, "B", False),
    ],
)
def test_realworldqa_rule(prediction: str | None, gold: str, expected: bool) -> None:
    assert choice_or_text_match(prediction, gold) is expected


def test_index_to_letter() -> None:
    assert index_to_letter("0") == "A"
    assert index_to_letter(3) == "D"
    assert index_to_letter(" 2 ", 4) == "C"
    with pytest.raises(ValueError, match="out of range for 4 options"):
        index_to_letter("4", 4)
    with pytest.raises(ValueError, match="must be an integer, got 'x'"):
        index_to_letter("x")


def test_macro_mean_weighs_groups_equally() -> None:
    items = [
        {"g": "x", "score": 1.0},
        {"g": "x", "score": 1.0},
        {"g": "x", "score": 0.0},
        {"g": "y", "score": 0.0},
    ]
    # group means: x = 2/3, y = 0 -> macro (2/3 + 0) / 2 = 1/3; the item mean would be 2/4 = 0.5.
    assert macro_mean(items, "g") == pytest.approx(1 / 3)
    assert math.isnan(macro_mean([], "g"))


def test_most_likely_choice_takes_the_highest_log_likelihood_first_on_ties() -> None:
    assert most_likely_choice([(-3.0, False), (-0.5, True), (-2.0, False)]) == 1
    assert most_likely_choice([(-1.0, False), (-1.0, True), (-4.0, False)]) == 0
    assert most_likely_choice([(-9.0, False)]) == 0


# ------------------------------------------------------------------------------------------------
# filters
# ------------------------------------------------------------------------------------------------


def test_leading_letter_filter_keeps_other_text() -> None:
    out = LeadingLetterFilter().apply([["B. cat", "(C)"], "the answer is D"], [{}, {}])
    assert out == [["B", "(C)"], "the answer is D"]


def test_mcq_letter_filter() -> None:
    out = MCQLetterFilter(letters="ABCDE").apply(["The answer is E", "no idea"], [{}, {}])
    assert out == ["E", "[invalid]"]
    with pytest.raises(ConfigError, match="mcq_letter filter"):
        MCQLetterFilter(letters="ab")
