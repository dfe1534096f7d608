"""VQA normalisation (EvalAI rules) and the leave-one-out soft accuracy over ten answers."""

from __future__ import annotations

import pytest

from lmms_eval.scoring.vqa import (
    CONTRACTIONS,
    normalize_answer,
    normalize_vqav2,
    process_digit_article,
    process_punctuation,
    soft_accuracy,
    textvqa_accuracy,
    vqav2_accuracy,
)


@pytest.mark.parametrize(
    ("matching", "expected"),
    [
        # n of the 10 answers equal the prediction. A matching annotator sees n-1 matches among the
        # other nine, a non-matching one sees n; each scores min(1, matches/3); mean over the 10.
        (0, 0.0),
        (1, 0.3),  # (1*min(1,0/3) + 9*min(1,1/3)) / 10 = (0 + 3) / 10
        (2, 0.6),  # (2*(1/3) + 8*(2/3)) / 10 = (2/3 + 16/3) / 10 = 6 / 10
        (3, 0.9),  # (3*(2/3) + 7*1) / 10 = (2 + 7) / 10
        (4, 1.0),  # (4*1 + 6*1) / 10
        (10, 1.0),
    ],
)
def test_soft_accuracy_over_ten_answers(matching: int, expected: float) -> None:
    answers = ["cat"] * matching + ["dog"] * (10 - matching)
    assert soft_accuracy("cat", answers) == pytest.approx(expected)


def test_soft_accuracy_with_no_answers_is_zero() -> None:
    assert soft_accuracy("cat", []) == 0.0


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("Two", "2"),  # number word -> digit, lower-cased
        ("none", "0"),
        ("ten dogs", "10 dogs"),
        ("eleven", "eleven"),  # only zero/none .. ten are mapped
        ("The Cat", "cat"),  # articles dropped
        ("a dog and an apple", "dog and apple"),
        ("dont", "don't"),  # contraction without apostrophe restored
        ("couldnt've", "couldn't've"),
        ("couldn'tve", "couldn't've"),
        ("its", "its"),  # an ordinary word: left alone
        ("5.", "5"),  # a period not followed by a digit is dropped
        ("5.0", "5.0"),  # ... but one followed by a digit stays, so "5.0" is not "5"
        ("u.s.a.", "usa"),
        ("yes, it is!", "yes it is"),  # "," and "?" are removed; "!" at the end is spaced then stripped
        ("1,000", "1000"),
        ("x-ray", "x ray"),  # "-" without a neighbouring space becomes a space
        ("left - right", "left right"),  # "-" next to a space is deleted
        ("man's", "man 's"),  # the full normaliser splits possessives
        ("  Red\nCar\t", "red car"),
    ],
)
def test_full_normaliser(raw: str, normalised: str) -> None:
    assert normalize_answer(raw) == normalised


def test_vqav2_normaliser_keeps_possessives_and_commas_rule() -> None:
    assert normalize_vqav2("man's") == "man's"  # no tokenising step
    assert normalize_vqav2("Two Dogs.") == "2 dogs"
    # without a digit,digit group and without a neighbouring space, "," becomes a space
    assert normalize_vqav2("red,blue") == "red blue"
    assert normalize_vqav2("1,000") == "1000"  # a digit,digit group: every mark is deleted


def test_punctuation_and_digit_article_steps() -> None:
    assert process_punctuation("(a)b") == " a b"  # marks without neighbouring spaces become spaces
    # each mark is judged on its own: "(" has a space before it and is deleted, ")" has none
    assert process_punctuation("a (b)") == "a b "
    assert process_digit_article("The ONE  thing") == "1 thing"
    assert CONTRACTIONS["wont"] == "won't" and CONTRACTIONS["yall"] == "y'all"


def test_textvqa_accuracy_normalises_both_sides() -> None:
    # 3 annotators say "2", written differently; the others "3": 3 matches -> 0.9 (see above)
    answers = ["2", "two", "Two.", "3", "3", "3", "3", "3", "3", "3"]
    assert textvqa_accuracy("TWO", answers) == pytest.approx(0.9)
    assert textvqa_accuracy("the 3", answers) == pytest.approx(1.0)  # 7 matches
    assert textvqa_accuracy("5.0", ["5"] * 10) == 0.0  # "5.0" stays "5.0"


def test_vqav2_accuracy_reads_answer_dicts() -> None:
    answers = [{"answer": "man's", "answer_confidence": "yes", "answer_id": i} for i in range(1, 3)]
    answers += [{"answer": "woman", "answer_confidence": "yes", "answer_id": i} for i in range(3, 11)]
    # 2 annotators said "man's": (2*(1/3) + 8*(2/3)) / 10 = 0.6; the possessive matches as written
    assert vqav2_accuracy("Man's", answers) == pytest.approx(0.6)
    assert vqav2_accuracy("a woman", answers) == pytest.approx(1.0)
    assert vqav2_accuracy("women", answers) == 0.0
