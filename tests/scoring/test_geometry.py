"""Box and point reading, IoU and point-in-box, worked by hand."""

from __future__ import annotations

import pytest

from lmms_eval.scoring import geometry


@pytest.mark.parametrize(
    ("text", "box"),
    [
        ("[0.1, 0.1, 0.3, 0.3]", (0.1, 0.1, 0.3, 0.3)),
        ("The box is (0.1,0.1,0.3,0.3).", (0.1, 0.1, 0.3, 0.3)),
        ("[ 0.1,\n0.1, 0.3, 0.3 ]", (0.1, 0.1, 0.3, 0.3)),
        ("[[0.1, 0.1, 0.3, 0.3]] then [0, 0, 1, 1]", (0.1, 0.1, 0.3, 0.3)),  # the first box
        ("[100, 100, 300, 300]", (0.1, 0.1, 0.3, 0.3)),  # above 1: the 0-1000 grid
        ("[0.5, 0.5, 2, 2]", (0.0005, 0.0005, 0.002, 0.002)),  # one number above 1 scales all four
        ("[1, 0, 0, 0]", (1.0, 0.0, 0.0, 0.0)),  # 1 itself is a fraction
        ("[-0.1, 0.1, 0.3, 0.3]", (-0.1, 0.1, 0.3, 0.3)),
    ],
)
def test_parse_box(text: str, box: geometry.Box) -> None:
    assert geometry.parse_box(text) == pytest.approx(box)


@pytest.mark.parametrize(
    "text",
    [
        "0.1 0.1 0.3 0.3",
        "[0.1, 0.1, 0.3]",
        "[0.1, 0.1, 0.3, 0.3, 0.5]",
        "[.1, .1, .3, .3]",
        "[0.1 ,0.1 ,0.3 ,0.3]",
        "",
    ],
)
def test_unreadable_boxes(text: str) -> None:
    assert geometry.parse_box(text) is None


def test_parse_point_takes_the_first_two_numbers() -> None:
    assert geometry.parse_point("[0.25, 0.15]") == (0.25, 0.15)
    assert geometry.parse_point('{"x": 0.2, "y": 0.3}') == (0.2, 0.3)
    assert geometry.parse_point("[0.1, 0.1, 0.3, 0.3]") == (0.1, 0.1)  # a box's first corner
    assert geometry.parse_point("click at .25, .15") == (25.0, 15.0)  # digits after the dot only
    assert geometry.parse_point("(-0.2, 0.2)") == (-0.2, 0.2)
    assert geometry.parse_point("only 3") is None


def test_iou_by_hand() -> None:
    gold = (0.1, 0.1, 0.3, 0.3)  # area 0.04
    assert geometry.box_iou(gold, gold) == pytest.approx(1.0)
    # [0.1, 0.4]^2 has area 0.09 and holds the gold box: 0.04 / 0.09
    assert geometry.box_iou((0.1, 0.1, 0.4, 0.4), gold) == pytest.approx(4 / 9)
    # a quarter of the gold box
    assert geometry.box_iou((0.1, 0.1, 0.2, 0.2), gold) == pytest.approx(0.25)
    # overlap 0.1 x 0.1 = 0.01; union 0.04 + 0.04 - 0.01 = 0.07
    assert geometry.box_iou((0.2, 0.2, 0.4, 0.4), gold) == pytest.approx(1 / 7)
    assert geometry.box_iou((0.3, 0.3, 0.5, 0.5), gold) == 0.0  # touching corners only
    assert geometry.box_iou((0.2, 0.2, 0.1, 0.1), gold) == 0.0  # corners swapped
    assert geometry.box_iou(geometry.EMPTY_BOX, geometry.EMPTY_BOX) == 0.0


def test_box_scores_thresholds_are_inclusive_and_centre_counts_edges() -> None:
    scores = geometry.box_scores((0.0, 0.0, 1.0, 1.0), (0.0, 0.0, 0.5, 1.0))
    assert scores["IoU"] == 0.5
    assert scores["ACC@0.5"] == 1.0 and scores["ACC@0.7"] == 0.0
    assert scores["Center_ACC"] == 1.0  # the centre (0.5, 0.5) is on the gold box's right edge
    quarter = geometry.box_scores((0.1, 0.1, 0.2, 0.2), (0.1, 0.1, 0.3, 0.3))
    assert (quarter["ACC@0.1"], quarter["ACC@0.3"], quarter["Center_ACC"]) == (1.0, 0.0, 1.0)
    missing = geometry.box_scores(None, (0.1, 0.1, 0.3, 0.3))  # no box: scored as (0, 0, 0, 0)
    assert set(missing.values()) == {0.0}


def test_point_in_box_and_scaling() -> None:
    box = (20.0, 10.0, 60.0, 30.0)
    assert geometry.point_in_box((60.0, 30.0), box)  # corner
    assert not geometry.point_in_box((61.0, 30.0), box)
    assert geometry.scale_point((0.25, 0.15), 200, 100) == (50.0, 15.0)
    assert geometry.scale_point((1.0, 1.0), 200, 100) == (200.0, 100.0)
    assert geometry.scale_point((0.25, 150.0), 200, 100) == (0.25, 150.0)  # not both fractions
    assert geometry.scale_point((0.25, 0.15), None, None) == (0.25, 0.15)  # no size known


def test_coco_boxes() -> None:
    assert geometry.xywh_to_xyxy([20, 10, 40, 20]) == (20.0, 10.0, 60.0, 30.0)
    assert geometry.normalise_box((20, 10, 60, 30), 200, 100) == pytest.approx((0.1, 0.1, 0.3, 0.3))


def test_refcoco_rule_reads_square_brackets_as_written() -> None:
    def refcoco(text: str) -> geometry.Box | None:
        return geometry.parse_box(text, parentheses=False, grid=False)

    assert refcoco("[0.1, 0.1, 0.3, 0.3]") == (0.1, 0.1, 0.3, 0.3)
    assert refcoco("(0.1, 0.1, 0.3, 0.3)") is None  # parentheses are not read
    assert refcoco("[0.1, 0.1, 0.3, 0.3)") is None
    assert refcoco("[100, 100, 300, 300]") == (100.0, 100.0, 300.0, 300.0)  # never rescaled
    assert refcoco("[0.2, 0.2, 0.4, 0.4] then [0.1, 0.1, 0.3, 0.3]") == (0.2, 0.2, 0.4, 0.4)
