"""RefCOCO / RefCOCO+ / RefCOCOg: box writing (one doc per expression) and region captioning."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "question_id": datasets.Value("string"),
            "image": datasets.Image(),
            "answer": datasets.List(datasets.Value("string")),
            "bbox": datasets.List(datasets.Value("float64")),
            "segmentation": datasets.List(datasets.Value("float64")),
        }
    )


ROWS = [
    # question id, expressions, COCO box (x, y, w, h) in a 200 x 100 image
    ("r1", ["left dog", "the brown dog"], [20.0, 10.0, 40.0, 20.0]),  # fractions (0.1, 0.1, 0.3, 0.3)
    ("r2", ["red car"], [100.0, 50.0, 100.0, 50.0]),  # fractions (0.5, 0.5, 1.0, 1.0)
]
BOXES = {"left dog": "[0.1, 0.1, 0.3, 0.3]", "the brown dog": "[0.1, 0.1, 0.2, 0.2]", "red car": "no idea"}


@pytest.fixture
def refcoco_data(hub_dataset: Any) -> None:
    rows = [
        {
            "question_id": qid,
            "image": solid_image((0, 0, 0), (200, 100)),
            "answer": answers,
            "bbox": box,
            "segmentation": [box[0], box[1], box[0] + box[2], box[1], box[0] + box[2], box[1] + box[3]],
        }
        for qid, answers, box in ROWS
    ]
    for repo in ("lmms-lab-encoder/RefCOCO", "lmms-lab-encoder/RefCOCOplus", "lmms-lab-encoder/RefCOCOg"):
        hub_dataset(repo, "val", rows, _features())


def _box(task: str, doc: dict[str, Any]) -> str:
    return BOXES[doc["answer"]]


@pytest.mark.parametrize("task", ["refcoco_bbox_rec_val", "refcoco+_bbox_rec_val", "refcocog_bbox_rec_val"])
def test_rec_one_doc_per_expression_and_box_scores(refcoco_data: None, run_benchmark: Any, task: str) -> None:
    model = ScriptedModel(_box, chat=True)
    results = run_benchmark(task, _box, model=model)
    scores = results["results"][task]
    assert results["n-samples"][task]["effective"] == 3  # two expressions + one
    # IoU: 1 (exact), 1/4 (a quarter of the box), 0 (no box)
    assert scores["refcoco_IoU,none"] == pytest.approx(1.25 / 3)
    assert scores["refcoco_ACC@0.1,none"] == pytest.approx(2 / 3)
    assert scores["refcoco_ACC@0.5,none"] == pytest.approx(1 / 3)
    assert scores["refcoco_Center_ACC,none"] == pytest.approx(2 / 3)
    [message] = model.seen[task][1]
    assert message["content"][1]["text"].endswith("the region this sentence describes: the brown dog")


def test_caption_variants_outline_the_region(refcoco_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(lambda t, d: "the dog on the left", chat=True)
    results = run_benchmark(["refcoco_bbox_val", "refcoco_seg_val"], model.answer, model=model)["results"]
    for task in ("refcoco_bbox_val", "refcoco_seg_val"):
        assert results[task]["refcoco_Bleu_1,none"] > 0
        assert "refcoco_CIDEr,none" in results[task]
    [boxed] = model.seen["refcoco_bbox_val"][0]
    image, text = boxed["content"]
    assert text["text"] == "Provide a short description for this region."
    assert image["url"].getpixel((20, 10)) == (255, 0, 0) and image["url"].getpixel((60, 30)) == (255, 0, 0)
    assert image["url"].getpixel((21, 11)) == (0, 0, 0)  # one pixel wide
    [outlined] = model.seen["refcoco_seg_val"][0]
    assert outlined["content"][0]["url"].getpixel((20, 10)) == (255, 255, 255)


def test_caption_scores_match_the_coco_metrics(refcoco_data: None, run_benchmark: Any) -> None:
    from lmms_eval.scoring import caption

    answers = {"r1": "the left dog", "r2": "a red car"}
    results = run_benchmark("refcoco_bbox_val", lambda t, d: answers[d["question_id"]])["results"]
    expected = caption.coco_caption_scores(
        ["the left dog", "a red car"], [["left dog", "the brown dog"], ["red car"]]
    )
    assert results["refcoco_bbox_val"]["refcoco_CIDEr,none"] == pytest.approx(expected["CIDEr"])
    assert results["refcoco_bbox_val"]["refcoco_Bleu_1,none"] == pytest.approx(expected["Bleu_1"])
