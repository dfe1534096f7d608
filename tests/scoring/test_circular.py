"""MMBench rules: option extraction from free text and CircularEval grouping."""

from __future__ import annotations

import math

import pytest

from lmms_eval.scoring import circular

OPTIONS = {"A": "a cat", "B": "a dog", "C": "a bird", "D": "a fish"}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("A", "A"),
        ("(B)", "B"),
        ("C.", "C"),
        ("The answer is D", "D"),
        ("Option B: a dog", "B"),  # letter and its own text agree: one letter
        ("[C] because of the wings", "C"),
        ("A is correct here", "A"),  # "is" after A: the letter
        ("It is a dog.", "B"),  # no letter: the option text
        ("A dog is sitting on the mat", "B"),  # leading article "A": not option A; text "a dog"
        ("A or B", None),  # two letters and no option text: unresolved
        ("a cat or a dog", None),  # two option texts: unresolved
        ("E", None),  # not an option of this question
        ("I am not sure", None),
        ("b", None),  # letters are upper case
    ],
)
def test_extract_choice(answer: str, expected: str | None) -> None:
    assert circular.extract_choice(answer, OPTIONS) == expected


def test_fifth_option_only_when_present() -> None:
    four = circular.available_options({"A": "1", "B": "2", "C": "3", "D": "4", "E": "nan"})
    five = circular.available_options({"A": "1", "B": "2", "C": "3", "D": "4", "E": "5"})
    assert list(four) == ["A", "B", "C", "D"]
    assert list(five) == ["A", "B", "C", "D", "E"]
    assert circular.extract_choice("E", four) is None
    assert circular.extract_choice("E", five) == "E"
    # missing cells of every kind are absent: None, NaN, "", "nan"
    assert circular.available_options({"A": "x", "B": None, "C": float("nan"), "D": ""}) == {"A": "x"}


def test_question_id() -> None:
    assert circular.question_id(42) == 42
    assert circular.question_id(1_000_042) == 42
    assert circular.question_id(3_000_042) == 42


def _item(
    index: int, correct: bool, category: str = "ocr", l2: str = "Coarse Perception"
) -> dict[str, object]:
    return {"index": index, "correct": correct, "category": category, "l2_category": l2}


def test_one_wrong_variant_fails_the_question() -> None:
    items = [
        # question 1: four variants, all correct -> correct
        _item(1, True),
        _item(1_000_001, True),
        _item(2_000_001, True),
        _item(3_000_001, True),
        # question 2: one of four variants wrong -> wrong
        _item(2, True, "scene", "Fine-grained Perception (single-instance)"),
        _item(1_000_002, True, "scene", "Fine-grained Perception (single-instance)"),
        _item(2_000_002, False, "scene", "Fine-grained Perception (single-instance)"),
        _item(3_000_002, True, "scene", "Fine-grained Perception (single-instance)"),
        # question 3: a single variant, correct
        _item(3, True, "scene", "Fine-grained Perception (single-instance)"),
    ]
    scores = circular.circular_scores(items)
    # 2 of 3 questions correct (not 8 of 9 variants): 66.67
    assert scores.questions == 3
    assert scores.overall == pytest.approx(200 / 3)
    # ocr: question 1 -> 100; scene: questions 2 (wrong) and 3 (right) -> 50
    assert scores.by_category == {"ocr": 100.0, "scene": 50.0}
    assert scores.by_l2 == {"Coarse Perception": 100.0, "Fine-grained Perception (single-instance)": 50.0}


def test_variant_order_does_not_matter() -> None:
    items = [_item(1_000_005, False), _item(5, True), _item(6, True)]
    assert circular.circular_scores(items).overall == 50.0  # question 5 wrong, question 6 right
    assert circular.circular_scores(list(reversed(items))).overall == 50.0


def test_score_table_keys_and_missing_names() -> None:
    items = [_item(1, True, "image_scene", "Coarse Perception"), _item(2, False, "ocr", "Coarse Perception")]
    table = circular.score_table(circular.circular_scores(items), "gpt_eval_score")
    assert dict(table) == {
        "gpt_eval_score": 50.0,
        "mmbench_category_image_scene": 100.0,
        "mmbench_category_ocr": 0.0,
        "mmbench_l2_coarse_perception": 50.0,
    }
    assert math.isnan(table["mmbench_category_never_seen"])  # a resample without that category
    assert (
        circular.slug("Fine-grained Perception (single-instance)")
        == "fine_grained_perception_single_instance"
    )


def test_no_items_is_nan() -> None:
    scores = circular.circular_scores([])
    assert math.isnan(scores.overall) and scores.by_category == {} and scores.questions == 0
