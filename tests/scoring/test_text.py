"""ChartQA relaxed accuracy, OCRBench substring matching, and ANLS (official DocVQA rule)."""

from __future__ import annotations

import math

import pytest

from lmms_eval.scoring.text import (
    anls_score,
    edit_distance,
    ocrbench_match,
    ocrbench_normalize,
    parse_relaxed_number,
    relaxed_correctness,
    slug,
)


@pytest.mark.parametrize(
    ("prediction", "target", "correct"),
    [
        ("105", "100", True),  # |105-100|/100 = 0.05 <= 0.05: on the boundary
        ("95", "100", True),  # 5/100 = 0.05
        ("105.1", "100", False),  # 5.1/100 = 0.051
        ("94.9", "100", False),
        ("21", "20", True),  # 1/20 = 0.05
        ("-10.4", "-10", True),  # 0.4/10 = 0.04: relative to |target|
        ("0.5", "50%", True),  # "50%" reads as 0.5
        ("52%", "0.5", True),  # 0.52 vs 0.5: 0.02/0.5 = 0.04
        ("53%", "0.5", False),  # 0.03/0.5 = 0.06
        ("50", "50%", False),  # 50 vs 0.5
        ("0", "0", True),  # zero target: exact string match only
        ("0.0", "0", False),
        ("0.01", "0", False),
        ("Yes", "yes", True),  # text: case-insensitive exact match
        ("yes.", "yes", False),
        ("about 100", "100", False),  # not a number: compared as text
        # nan and inf are numbers (Python float), so they take the numeric path and are never
        # correct, not even against themselves (official code): nan compares false with anything,
        # inf - inf is nan, and |5 - inf| / inf is nan
        ("nan", "nan", False),
        ("NaN", "5", False),
        ("5", "nan", False),
        ("inf", "inf", False),
        ("inf", "5", False),
        ("5", "inf", False),
        ("nan", "0", False),  # zero target: the text path, "nan" != "0"
        ("5%%", "0.05", True),  # every trailing "%" is removed, dividing by 100 once
    ],
)
def test_relaxed_correctness(prediction: str, target: str, correct: bool) -> None:
    assert relaxed_correctness(prediction, target) is correct


def test_parse_relaxed_number() -> None:
    assert parse_relaxed_number(" 12.5% ") == pytest.approx(0.125)
    assert parse_relaxed_number("1e3") == 1000.0
    assert parse_relaxed_number("1,000") is None
    assert parse_relaxed_number("inf") == float("inf")
    nan = parse_relaxed_number("nan")
    assert nan is not None and math.isnan(nan)


@pytest.mark.parametrize(
    ("prediction", "answers", "dataset", "correct"),
    [
        ("The sign says HELLO world", ["hello"], "IIIT5K", True),  # gt inside the prediction, any case
        ("hel lo", ["hello"], "IIIT5K", False),
        ("hello", ["hello world"], "IIIT5K", False),  # the prediction must contain the gt, not vice versa
        ("line one\nline two", ["one line"], "FUNSD", True),  # newline -> space
        ("ＡＢＣ１２３", ["abc123"], "IIIT5K", True),  # full-width ASCII folded
        ("no", ["maybe", "NO"], "docVQA", True),  # any of several gts
        ("\\frac { 1 } { 2 }", ["\\frac{1}{2}"], "HME100k", True),  # HME100k: spaces removed
        ("\\frac{1}{2}", ["\\frac { 1 } { 2 }"], "HME100k", True),
        ("\\frac{A}{2}", ["\\frac{a}{2}"], "HME100k", False),  # HME100k keeps case
        ("\\frac{a} {2}", ["\\frac{a}{2}"], "IIIT5K", False),  # elsewhere spaces count
    ],
)
def test_ocrbench_match(prediction: str, answers: list[str], dataset: str, correct: bool) -> None:
    assert ocrbench_match(prediction, answers, dataset) is correct


def test_ocrbench_normalize_and_single_string_answer() -> None:
    assert ocrbench_normalize("  Ｈｉ\u3000There\n") == "hi there"
    assert ocrbench_normalize(" a b\nc ", "HME100k") == "abc"
    assert ocrbench_match("it is 42", "42")


def test_edit_distance() -> None:
    assert edit_distance("kitten", "sitting") == 3  # k->s, e->i, insert g
    assert edit_distance("", "abc") == 3
    assert edit_distance("abc", "abc") == 0


def test_anls_keeps_the_threshold() -> None:
    # gold has 10 characters; "abcde" is 5 deletions away: similarity 1 - 5/10 = 0.5 -> kept
    assert anls_score("abcde", ["abcdefghij"]) == pytest.approx(0.5)
    # "abcd": 1 - 6/10 = 0.4 < 0.5 -> 0
    assert anls_score("abcd", ["abcdefghij"]) == 0.0
    # case and repeated whitespace are ignored; the best reference counts
    assert anls_score("  Hello   World ", ["nothing alike", "hello world"]) == 1.0
    assert anls_score("", [""]) == 1.0
    assert anls_score("abc", []) == 0.0


def test_anls_divides_by_the_longer_raw_answer() -> None:
    # distance of the normalised "abd" and "abc" is 1; the raw prediction "  abd " has 6 characters,
    # so 1 - 1/6 (normalised lengths would give 1 - 1/3)
    assert anls_score("  abd ", ["abc"]) == pytest.approx(1 - 1 / 6)
    # "ab  c" normalises to "ab c": 2 edits from "abx" (replace " " by "x", drop "c"); raw length 5
    assert anls_score("ab  c", ["abx"]) == pytest.approx(1 - 2 / 5)
    # the gold's raw length counts as well: "hel" is 2 deletions from "hello", the gold has 9
    assert anls_score("hel", ["  hello  "]) == pytest.approx(1 - 2 / 9)
    # lengths are taken upper-cased, as the official script does: "ß" counts as "SS"
    assert anls_score("ßa", ["ßb"]) == pytest.approx(1 - 1 / 3)


def test_slug() -> None:
    assert slug("Doc-oriented VQA") == "doc_oriented_vqa"
    assert slug("Non-Semantic Text Recognition") == "non_semantic_text_recognition"
