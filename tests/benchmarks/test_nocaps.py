"""nocaps_val and flickr30k_test: the COCO caption metrics under their own result keys."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import caption

CAPTIONS = {0: "a dog runs on the grass", 1: "a red car parked on a street"}
REFERENCES = {
    0: ["a dog running on grass", "the brown dog runs across a lawn"],
    1: ["a red car on the street", "a parked red car"],
}
KEYS = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr")


def _expected() -> dict[str, float]:
    return caption.coco_caption_scores([CAPTIONS[0], CAPTIONS[1]], [REFERENCES[0], REFERENCES[1]])


def test_nocaps_val(hub_dataset: Any, run_benchmark: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "image_id": datasets.Value("int64"),
            "image": datasets.Image(),
            "annotations_captions": datasets.List(datasets.Value("string")),
        }
    )
    rows = [{"image_id": i, "image": solid_image(), "annotations_captions": REFERENCES[i]} for i in (0, 1)]
    hub_dataset("lmms-lab-encoder/NoCaps", "validation", rows, features)
    model = ScriptedModel(lambda t, d: CAPTIONS[d["image_id"]], chat=True)
    scores = run_benchmark("nocaps_val", model.answer, model=model)["results"]["nocaps_val"]
    expected = _expected()
    for key in KEYS:
        assert scores[f"nocaps_{key},none"] == pytest.approx(expected[key]), key
    [message] = model.seen["nocaps_val"][0]
    assert message["content"][1]["text"] == "Provide a one-sentence caption for the provided image."


def test_flickr30k(hub_dataset: Any, run_benchmark: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "img_id": datasets.Value("string"),
            "image": datasets.Image(),
            "caption": datasets.List(datasets.Value("string")),
        }
    )
    rows = [{"img_id": str(i), "image": solid_image(), "caption": REFERENCES[i]} for i in (0, 1)]
    hub_dataset("lmms-lab-encoder/flickr30k", "test", rows, features)
    scores = run_benchmark("flickr30k", lambda t, d: CAPTIONS[int(d["img_id"])])["results"]["flickr30k_test"]
    expected = _expected()
    for key in KEYS:
        assert scores[f"flickr_{key},none"] == pytest.approx(expected[key]), key
