"""ChartQA relaxed accuracy, OCRBench substring matching, and ANLS at its threshold."""

from __future__ import annotations

import pytest

from lmms_eval.api import metrics
from lmms_eval.scoring.text import (
    anls_score,
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
        ("nan", "nan", True),  # non-finite values are text
    ],
)
def test_relaxed_correctness(prediction: str, target: str, correct: bool) -> None:
    assert relaxed_correctness(prediction, target) is correct


def test_parse_relaxed_number() -> None:
    assert parse_relaxed_number(" 12.5% ") == pytest.approx(0.125)
    assert parse_relaxed_number("1e3") == 1000.0
    assert parse_relaxed_number("1,000") is None
    assert parse_relaxed_number("inf") is None


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


def test_anls_is_the_framework_function_and_keeps_the_threshold() -> None:
    assert anls_score is metrics.anls_score
    # gold has 10 characters; "abcde" is 5 deletions away: similarity 1 - 5/10 = 0.5 -> kept
    assert anls_score("abcde", ["abcdefghij"]) == pytest.approx(0.5)
    # "abcd": 1 - 6/10 = 0.4 < 0.5 -> 0
    assert anls_score("abcd", ["abcdefghij"]) == 0.0
    # case and repeated whitespace are ignored; the best reference counts
    assert anls_score("  Hello   World ", ["nothing alike", "hello world"]) == 1.0


def test_slug() -> None:
    assert slug("Doc-oriented VQA") == "doc_oriented_vqa"
    assert slug("Non-Semantic Text Recognition") == "non_semantic_text_recognition"
