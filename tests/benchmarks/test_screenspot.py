"""ScreenSpot (rec, reg), ScreenSpot-v2 and ScreenSpot-Pro on synthetic local copies."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image


def _features(**columns: Any) -> Any:
    import datasets

    return datasets.Features({"image": datasets.Image(), **columns})


def _str() -> Any:
    import datasets

    return datasets.Value("string")


def _floats() -> Any:
    import datasets

    return datasets.List(datasets.Value("float64"))


# instruction, source, type, gold box (fractions), scripted box answer, scripted caption
SCREENSPOT = [
    ("open the menu", "ios", "text", [0.1, 0.1, 0.3, 0.3], "[0.1, 0.1, 0.3, 0.3]", "open the menu"),
    ("tap search", "android", "icon", [0.1, 0.1, 0.3, 0.3], "[0.1, 0.1, 0.4, 0.4]", "search"),
    ("close window", "windows", "text", [0.5, 0.5, 0.7, 0.7], "I cannot tell.", "close the window"),
    ("star the repo", "gitlab", "icon", [0.1, 0.1, 0.3, 0.3], "[100, 100, 200, 200]", "star"),
]


@pytest.fixture
def screenspot_data(hub_dataset: Any) -> None:
    rows = [
        {
            "file_name": f"shot{i}.png",
            "image": solid_image((0, 0, 0), (200, 100)),
            "bbox": box,
            "instruction": instruction,
            "data_type": kind,
            "data_source": source,
        }
        for i, (instruction, source, kind, box, _, _) in enumerate(SCREENSPOT)
    ]
    features = _features(
        file_name=_str(), bbox=_floats(), instruction=_str(), data_type=_str(), data_source=_str()
    )
    hub_dataset("rootsautomation/ScreenSpot", "test", rows, features)


def _row(doc: dict[str, Any]) -> tuple[Any, ...]:
    return next(r for r in SCREENSPOT if r[0] == doc["instruction"])


def _answer(task: str, doc: dict[str, Any]) -> str:
    return _row(doc)[4] if task == "screenspot_rec_test" else _row(doc)[5]


def test_rec_iou_thresholds_centre_and_breakdown(screenspot_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("screenspot_rec_test", _answer)["results"]["screenspot_rec_test"]
    # IoU per doc: 1, 4/9 (0.04 / 0.09), 0 (no box), 1/4 (0-1000 grid: [0.1, 0.2]^2 in the gold box)
    assert scores["screenspot_IoU,none"] == pytest.approx((1 + 4 / 9 + 0 + 0.25) / 4)
    assert scores["screenspot_ACC@0.1,none"] == pytest.approx(3 / 4)
    assert scores["screenspot_ACC@0.3,none"] == pytest.approx(2 / 4)
    assert scores["screenspot_ACC@0.5,none"] == pytest.approx(1 / 4)
    assert scores["screenspot_Center_ACC,none"] == pytest.approx(3 / 4)
    assert scores["screenspot_Center_ACC_mobile_text,none"] == 1.0
    assert scores["screenspot_Center_ACC_desktop_text,none"] == 0.0
    assert scores["screenspot_Center_ACC_web_icon,none"] == 1.0
    assert "screenspot_Center_ACC_desktop_icon,none" not in scores  # no such documents


def test_reg_marks_the_box_and_scores_cider(screenspot_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    results = run_benchmark("screenspot", _answer, model=model)["results"]
    assert results["screenspot_reg_test"]["screenspot_CIDEr,none"] > 0
    [message] = model.seen["screenspot_reg_test"][0]
    image, text = message["content"]
    assert text["text"] == "Direct a user to interact with the highlighted region [0.10, 0.10, 0.30, 0.30]."
    # the box (20, 10)-(60, 30) in pixels is outlined in red, 3 pixels wide, inside is untouched
    assert image["url"].getpixel((20, 10)) == (255, 0, 0)
    assert image["url"].getpixel((22, 20)) == (255, 0, 0)
    assert image["url"].getpixel((40, 20)) == (0, 0, 0)
    [rec_message] = model.seen["screenspot_rec_test"][0]
    assert rec_message["content"][1]["text"].endswith("corresponds to the command: open the menu")


def test_v2_point_in_box_as_written(hub_dataset: Any, run_benchmark: Any) -> None:
    answers = {"a": "[0.2, 0.2]", "b": "(0.35, 0.2)", "c": "click 0.3, 0.3", "d": "[25, 15]"}
    rows = [
        {"image": solid_image(), "bbox": [0.1, 0.1, 0.3, 0.3], "instruction": k, "data_type": t}
        for k, t in zip("abcd", ["text", "text", "icon", "icon"])
    ]
    hub_dataset(
        "HongxinLi/ScreenSpot_v2",
        "test",
        rows,
        _features(bbox=_floats(), instruction=_str(), data_type=_str()),
    )
    scores = run_benchmark("screenspot_v2", lambda t, d: answers[d["instruction"]])["results"][
        "screenspot_v2"
    ]
    # a: inside; b: x outside; c: on the corner (edges count); d: pixels are not scaled -> outside
    assert scores["screenspot_v2_action_acc,none"] == pytest.approx(2 / 4)
    assert scores["screenspot_v2_text_acc,none"] == pytest.approx(1 / 2)
    assert scores["screenspot_v2_icon_acc,none"] == pytest.approx(1 / 2)


def test_pro_scales_fractions_by_the_stated_size(hub_dataset: Any, run_benchmark: Any) -> None:
    import datasets

    answers = {"a": "[0.25, 0.15]", "b": "[30, 20]", "c": "[0.9, 0.9]", "d": "nothing"}
    rows = [
        {
            "image": solid_image(size=(200, 100)),
            "bbox": [20.0, 10.0, 60.0, 30.0],
            "instruction": k,
            "ui_type": t,
            "img_size": [200, 100],
            "group": g,
        }
        for k, t, g in zip("abcd", ["text", "icon", "icon", "text"], ["CAD", "CAD", "Office", "Office"])
    ]
    features = _features(
        bbox=_floats(),
        instruction=_str(),
        ui_type=_str(),
        img_size=datasets.List(datasets.Value("int64")),
        group=_str(),
    )
    hub_dataset("TIGER-Lab/ScreenSpot-Pro", "test", rows, features)
    scores = run_benchmark("screenspot_pro", lambda t, d: answers[d["instruction"]])["results"][
        "screenspot_pro"
    ]
    # a: (50, 15) in pixels, inside; b: pixels, inside; c: (180, 90) outside; d: no point
    assert scores["screenspot_pro_action_acc,none"] == pytest.approx(2 / 4)
    assert scores["screenspot_pro_text_acc,none"] == pytest.approx(1 / 2)
    assert scores["screenspot_pro_icon_acc,none"] == pytest.approx(1 / 2)
    assert scores["screenspot_pro_cad_acc,none"] == 1.0
    assert scores["screenspot_pro_office_acc,none"] == 0.0
