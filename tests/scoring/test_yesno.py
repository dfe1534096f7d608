"""Unit tests of lmms_eval.scoring.yesno: MME, POPE and HallusionBench rules, worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from lmms_eval.errors import DatasetError
from lmms_eval.llm_judge.providers.dummy import DummyJudge
from lmms_eval.scoring.yesno import (
    hb_gold,
    hb_judged_items,
    hb_rule_items,
    hb_scores,
    mme_category_scores,
    mme_item,
    mme_items,
    mme_report,
    mme_split,
    parse_mme_answer,
    parse_yes_no,
    pope_counts,
    pope_metric,
    pope_metric_batch,
    pope_prediction,
    pope_scores,
)

# -- MME ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("Yes", "yes"),
        ("No.", "no"),  # "." removed
        ("Y", "yes"),  # y/n mapped
        ("n", "no"),
        ("y.", "yes"),
        ("Yes, there is a dog.", "yes"),  # "yes" in the first 4 characters
        ("Nope", "no"),  # "no" in the first 4 characters
        ("not sure", "no"),  # published quirk: "no" of "not" is in the first 4 characters
        (" yes", "yes"),
        ("The answer is yes", "other"),  # yes only after the first 4 characters
        ("I think no", "other"),
        ("maybe", "other"),
        ("", "other"),
        ("a yes", "other"),  # first 4 characters "a ye": neither yes nor no
    ],
)
def test_parse_mme_answer(prediction: str, expected: str) -> None:
    assert parse_mme_answer(prediction) == expected


def test_mme_yes_is_looked_for_before_no_in_the_first_four_characters() -> None:
    assert parse_mme_answer("yes no") == "yes"  # head "yes "
    assert parse_mme_answer("noyes") == "no"  # head "noye": no "yes" in it -> no
    assert parse_mme_answer("nyes") == "yes"  # head "nyes": "yes" found first


def _mme(qid: str, category: str, *scores: float) -> list[dict[str, Any]]:
    return [{"question_id": qid, "category": category, "score": s} for s in scores]


def test_mme_acc_plus_needs_both_questions() -> None:
    # one image, one of two right: acc = 1/2*100 = 50, acc+ = 0 -> 50
    assert mme_category_scores(_mme("a.jpg", "count", 1.0, 0.0)) == {"count": 50.0}
    # both right: 100 + 100 = 200; both wrong: 0
    assert mme_category_scores(_mme("a.jpg", "count", 1.0, 1.0)) == {"count": 200.0}
    assert mme_category_scores(_mme("a.jpg", "count", 0.0, 0.0)) == {"count": 0.0}
    # two images (1,1) and (1,0): acc = 3/4*100 = 75, acc+ = 1/2*100 = 50 -> 125
    items = _mme("a.jpg", "count", 1.0, 1.0) + _mme("b.jpg", "count", 1.0, 0.0)
    assert mme_category_scores(items) == {"count": 125.0}


def test_mme_report_sums_categories_of_each_split() -> None:
    items = (
        _mme("e1", "existence", 1.0, 1.0)  # existence 200
        + _mme("c1", "count", 1.0, 0.0)  # count 50
        + _mme("o1", "OCR", 1.0, 1.0)
        + _mme("o2", "OCR", 0.0, 0.0)  # OCR: acc 50 + acc+ 50 = 100
    )
    assert mme_report(items, "perception") == {
        "mme_perception_score": 350.0,  # 200 + 50 + 100
        "mme_existence_score": 200.0,
        "mme_count_score": 50.0,
        "mme_ocr_score": 100.0,
    }
    cognition = _mme("t1", "text_translation", 1.0, 1.0) + _mme("k1", "code_reasoning", 0.0, 1.0)
    assert mme_report(cognition, "cognition") == {
        "mme_cognition_score": 250.0,  # 200 + 50
        "mme_text_translation_score": 200.0,
        "mme_code_reasoning_score": 50.0,
    }


def test_mme_image_without_two_questions_is_an_error_naming_it() -> None:
    items = _mme("a.jpg", "color", 1.0, 1.0) + _mme("odd.jpg", "color", 1.0)
    with pytest.raises(DatasetError, match=r"image 'odd\.jpg' \(category 'color'\) has 1 scored"):
        mme_category_scores(items)
    with pytest.raises(DatasetError, match=r"'three\.jpg'.* has 3"):
        mme_report(_mme("three.jpg", "color", 1.0, 1.0, 1.0), "perception")


def test_mme_items_carry_the_pair_score_for_resamples() -> None:
    rows = [
        ("a.jpg", "count", "Yes", "yes"),
        ("b.jpg", "count", "Yes", "yes"),
        ("a.jpg", "count", "No", "no"),  # a: both right -> 100 + 100 = 200
        ("b.jpg", "count", "No", "yes"),  # b: one right -> 50 + 0 = 50
    ]
    items = mme_items(rows)
    assert [i["image_score"] for i in items] == [200.0, 50.0, 200.0, 50.0]
    # on the full records the resample rule agrees with acc + acc+: (200+50+200+50)/4 = 125
    assert mme_report(items, "perception") == {"mme_perception_score": 125.0, "mme_count_score": 125.0}
    assert mme_report(items, "perception", resample=True)["mme_count_score"] == 125.0
    # a resample holding question a twice and b once: images drawn a, a, b -> (200+200+50)/3 = 150
    resample = mme_report([items[0], items[2], items[1]], "perception", resample=True)
    assert resample["mme_perception_score"] == 150.0
    assert math.isnan(resample["mme_existence_score"])  # a category the resample lacks


def test_mme_item_and_split() -> None:
    assert mme_item("q", "count", "Yes", "y")["score"] == 1.0
    assert mme_item("q", "count", "No", "Yes.")["score"] == 0.0
    assert mme_item("q", "count", "No", "maybe")["score"] == 0.0  # "other" is never right
    assert mme_split("OCR") == "perception"
    assert mme_split("code_reasoning") == "cognition"
    with pytest.raises(DatasetError, match="unknown category 'colour'"):
        mme_split("colour")
    with pytest.raises(ValueError, match="split must be one of"):
        mme_report([], "reasoning")


# -- POPE -----------------------------------------------------------------------------------------


def _pope(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"prediction": pope_prediction(p), "answer": g} for p, g in pairs]


# gold yes: "yes"(TP) "yes"(TP) "no"(FN) "Yes."(neither: not FN) ; gold no: "yes"(FP) "no" "no" "maybe"
POPE_CASE = [
    ("yes", "yes"),
    (" YES ", "yes"),
    ("no", "yes"),
    ("Yes.", "yes"),
    ("yes", "no"),
    ("No", "no"),
    ("no", "no"),
    ("maybe", "no"),
]


def test_pope_prediction_is_not_parsed() -> None:
    assert pope_prediction("  Yes\n") == "yes"
    assert pope_prediction("Yes.") == "yes."  # kept: counts as wrong
    assert pope_prediction("Yes, there is") == "yes, there is"


def test_pope_confusion_table_by_hand() -> None:
    counts = pope_counts(_pope(POPE_CASE))
    # correct: yes/yes, YES/yes, No/no, no/no = 4 of 8; TP 2, FP 1, FN 1 ("Yes." is not a FN), gold yes 4
    assert (counts.n, counts.correct, counts.tp, counts.fp, counts.fn, counts.gold_yes) == (8, 4, 2, 1, 1, 4)
    scores = pope_scores(counts)
    assert scores["accuracy"] == 0.5  # 4/8
    assert scores["precision"] == pytest.approx(2 / 3)  # 2/(2+1)
    assert scores["recall"] == pytest.approx(2 / 3)  # 2/(2+1), "Yes." left out of FN
    assert scores["f1_score"] == pytest.approx(2 / 3)  # 2PR/(P+R) with P=R=2/3
    assert scores["yes_ratio"] == 0.5  # gold yes 4/8, whatever the model said


def test_pope_unequal_precision_recall_and_empty_denominators() -> None:
    items = _pope([("yes", "yes"), ("no", "yes"), ("no", "yes"), ("no", "no")])
    scores = pope_scores(pope_counts(items))
    # TP 1, FP 0, FN 2: P = 1, R = 1/3, F1 = 2*(1/3)/(4/3) = 0.5; acc 2/4; yes_ratio 3/4
    assert scores == pytest.approx(
        {"accuracy": 0.5, "precision": 1.0, "recall": 1 / 3, "f1_score": 0.5, "yes_ratio": 0.75}
    )
    nothing_yes = pope_scores(pope_counts(_pope([("no", "yes"), ("no", "no")])))
    assert nothing_yes["precision"] == 0.0 and nothing_yes["f1_score"] == 0.0  # 0/0 -> 0
    assert pope_metric([], "accuracy") == 0.0
    with pytest.raises(ValueError, match="unknown POPE metric"):
        pope_metric(items, "f1")


@pytest.mark.parametrize("name", ["accuracy", "precision", "recall", "f1_score", "yes_ratio"])
def test_pope_batch_matches_plain(name: str) -> None:
    items = _pope(POPE_CASE)
    idx = np.random.default_rng(7).integers(0, len(items), size=(25, len(items)))
    expected = [pope_metric([items[i] for i in row], name) for row in idx]
    assert pope_metric_batch(items, idx, name) == pytest.approx(expected)


# -- HallusionBench -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes", "yes"),
        ("No, it is not.", "no"),
        ("yes, but there is no cat", "yes"),  # the first word decides
        ("The chart shows that the answer is yes.", "yes"),  # the only yes/no word
        ("There is no such line.", "no"),
        ("y", "yes"),
        ("N", "no"),
        ("Either yes or no.", None),  # both words: unresolved
        ("I cannot tell.", None),
        ("Nobody knows", None),  # "nobody" is not the word "no"
        ("", None),
    ],
)
def test_parse_yes_no(text: str, expected: str | None) -> None:
    assert parse_yes_no(text) == expected


def test_hb_gold() -> None:
    assert hb_gold("1") == "yes" and hb_gold("0") == "no"
    with pytest.raises(DatasetError, match=r"question 'q7' has gt_answer '2'"):
        hb_gold("2", "q7")


def _hb(cat: str, sub: str, set_id: str, fig: str, qid: str, correct: bool) -> dict[str, Any]:
    return {
        "category": cat,
        "subcategory": sub,
        "set_id": set_id,
        "figure_id": fig,
        "question_id": qid,
        "correct": correct,
    }


def test_hb_scores_group_by_question_and_figure() -> None:
    items = [
        # VD set 0: two questions (q0, q1) asked of two figures (f0, f1); q1 on f1 is wrong
        _hb("VD", "chart", "0", "0", "0", True),
        _hb("VD", "chart", "0", "1", "0", True),
        _hb("VD", "chart", "0", "0", "1", True),
        _hb("VD", "chart", "0", "1", "1", False),
        # VS set 0 (same ids, other category: separate groups), all right
        _hb("VS", "map", "0", "0", "0", True),
        _hb("VS", "map", "0", "0", "1", True),
    ]
    # aAcc: 5/6 right; VD 3/4; VS 2/2
    assert hb_scores(items, "aAcc") == pytest.approx({"aAcc": 500 / 6, "aAcc_VD": 75.0, "aAcc_VS": 100.0})
    # qAcc groups: VD q0 (f0 ok, f1 ok) ok; VD q1 (f1 wrong) no; VS q0 ok; VS q1 ok -> 3/4
    assert hb_scores(items, "qAcc") == {"qAcc": 75.0, "qAcc_VD": 50.0, "qAcc_VS": 100.0}
    # fAcc groups: VD f0 (q0, q1 ok) ok; VD f1 (q1 wrong) no; VS f0 ok -> 2/3
    assert hb_scores(items, "fAcc") == pytest.approx({"fAcc": 200 / 3, "fAcc_VD": 50.0, "fAcc_VS": 100.0})
    with pytest.raises(ValueError, match="unknown HallusionBench metric"):
        hb_scores(items, "acc")


def _hb_doc(qid: str, gt: str, question: str = "Is it?") -> dict[str, Any]:
    doc = _hb("VD", "chart", "0", "0", qid, True)
    del doc["correct"]
    return {**doc, "gt_answer": gt, "question": question}


def test_hb_rule_items_count_unresolved_as_wrong() -> None:
    docs = [_hb_doc("0", "1"), _hb_doc("1", "0"), _hb_doc("2", "1")]
    items = hb_rule_items(docs, ["Yes, it is.", "yes", "Hard to say"])
    assert [i["correct"] for i in items] == [True, False, False]
    assert [i["parsed"] for i in items] == ["yes", "yes", None]
    assert not any(i["judged"] for i in items)


def test_hb_judge_sees_only_unresolved_answers() -> None:
    docs = [_hb_doc("0", "1"), _hb_doc("1", "0"), _hb_doc("2", "1"), _hb_doc("3", "0")]
    outputs = ["Yes", "I would say yes and no", "It might be yes, or no", "cannot tell"]
    judge = DummyJudge()  # "contains": correct when the gold word is in the answer
    items = hb_judged_items(docs, outputs, judge)
    assert judge.calls == 3  # docs 1, 2, 3; doc 0 was read by the rule
    assert [i["judged"] for i in items] == [False, True, True, True]
    # doc 1 gold "No" is in "...yes and no" -> right; doc 2 gold "Yes" in it -> right; doc 3 -> wrong
    assert [i["correct"] for i in items] == [True, True, True, False]


def test_hb_judge_failure_counts_as_wrong() -> None:
    items = hb_judged_items([_hb_doc("0", "1")], ["unclear"], DummyJudge(fail=True))
    assert items[0]["correct"] is False and items[0]["judged"] is True
    assert "configured to fail" in items[0]["judge_error"]
