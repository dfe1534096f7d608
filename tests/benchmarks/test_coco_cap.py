"""COCO Caption 2017 tasks end to end on a synthetic lmms-lab-encoder/COCO-Caption2017 copy."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring.caption import coco_caption_scores

REPO = "lmms-lab-encoder/COCO-Caption2017"
PROMPT = "Provide a one-sentence caption for the provided image."
KEYS = [
    "coco_Bleu_1",
    "coco_Bleu_2",
    "coco_Bleu_3",
    "coco_Bleu_4",
    "coco_METEOR",
    "coco_ROUGE_L",
    "coco_CIDEr",
]


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "question_id": datasets.Value("string"),
            "image": datasets.Image(),
            "answer": datasets.Sequence(datasets.Value("string")),
            "id": datasets.Value("int64"),
        }
    )


ROWS = [
    {
        "question_id": "000000000139.jpg",
        "image": solid_image((200, 0, 0)),
        "answer": ["A dog runs on grass.", "A brown dog running across a lawn."],
        "id": 0,
    },
    {
        "question_id": "000000000285.jpg",
        "image": solid_image((0, 200, 0)),
        "answer": ["Two red cars parked outside.", "Cars parked by the road."],
        "id": 1,
    },
]
PERFECT = {"0": "a dog runs on grass", "1": "two red cars parked outside"}
MIXED = {"0": "A dog is running on the grass.", "1": "A bear sleeping."}


def _scripted(captions: dict[str, str]) -> Any:
    return lambda task, doc: captions[str(doc["id"])]


@pytest.fixture
def coco_data(hub_dataset: Any) -> None:
    hub_dataset(REPO, "val", ROWS, _features())


def test_captions_equal_to_a_reference(coco_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("coco2017_cap_val", _scripted(PERFECT))["results"]["coco2017_cap_val"]
    # every candidate n-gram is in a reference and c = r = 10 -> BLEU-1..4 = 1 (up to the 1e-9 smoothing)
    for n in range(1, 5):
        assert scores[f"coco_Bleu_{n},none"] == pytest.approx(1.0, abs=1e-8)
    assert scores["coco_ROUGE_L,none"] == pytest.approx(1.0)
    # METEOR (1.5 parameters): 10 exact matches in 2 chunks over the corpus -> Fmean 1,
    # penalty 0.6 (2/10)^0.2 = 0.43487 -> 0.56513 (METEOR 1.5 penalises even identical captions)
    assert scores["coco_METEOR,none"] == pytest.approx(1 - 0.6 * 0.2**0.2)
    # CIDEr-D: no n-gram is shared across the two images -> every df = 1, idf = L = log 2.
    # image 1 vs its reference 1 (identical, 5 tokens): cosine 1 at orders 1..4.
    #   vs "a brown dog running across a lawn": order 1: a (L vs 2L) and dog: (L*2L + L*L) / (sqrt(5) L * 3L)
    #   = 1/sqrt(5); no shared bigram; lengths 4 vs 6 bigrams -> penalty exp(-1/18).
    #   score = 10 * (4 + exp(-1/18)/sqrt(5)) / 4 orders / 2 references
    # image 2 vs its reference 1 (identical): 1 at orders 1..4.
    #   vs "cars parked by the road": order 1: 2 L^2 / (sqrt(5) L)^2 = 2/5; order 2 ("cars parked"):
    #   L^2 / (2L * 2L) = 1/4; lengths 4 vs 4 -> no penalty. score = 10 * (4 + 0.4 + 0.25) / 4 / 2
    image_1 = 10 * (4 + math.exp(-1 / 18) / math.sqrt(5)) / 4 / 2
    image_2 = 10 * 4.65 / 4 / 2
    assert scores["coco_CIDEr,none"] == pytest.approx((image_1 + image_2) / 2)


def test_scores_match_the_scorer_and_are_deterministic(coco_data: None, run_benchmark: Any) -> None:
    first = run_benchmark("coco2017_cap_val", _scripted(MIXED))["results"]["coco2017_cap_val"]
    second = run_benchmark("coco2017_cap_val", _scripted(MIXED))["results"]["coco2017_cap_val"]
    expected = coco_caption_scores(list(MIXED.values()), [row["answer"] for row in ROWS])
    for key in KEYS:
        assert first[f"{key},none"] == pytest.approx(expected[key.removeprefix("coco_")])
        assert second[f"{key},none"] == first[f"{key},none"]
    # "a bear sleeping" shares only "a" with the references of image 2
    assert first["coco_Bleu_1,none"] < 1.0


def test_bootstrap_error_bars_for_every_metric(coco_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("coco2017_cap_val", _scripted(MIXED), bootstrap_iters=20)["results"][
        "coco2017_cap_val"
    ]
    for key in KEYS:
        stderr = scores[f"{key}_stderr,none"]
        assert isinstance(stderr, float) and math.isfinite(stderr) and stderr >= 0, key


def test_chat_and_simple_prompts(coco_data: None, run_benchmark: Any) -> None:
    chat = ScriptedModel(_scripted(PERFECT), chat=True)
    run_benchmark("coco2017_cap_val", _scripted(PERFECT), model=chat)
    [message] = chat.seen["coco2017_cap_val"][1]
    image, text = message["content"]
    assert image["url"].getpixel((0, 0)) == (0, 200, 0)
    assert text == {"type": "text", "text": PROMPT}
    simple = ScriptedModel(_scripted(PERFECT), chat=False)
    run_benchmark("coco2017_cap_val", _scripted(PERFECT), model=simple)
    text, visuals = simple.seen["coco2017_cap_val"][0]
    assert text == PROMPT
    assert [v.getpixel((0, 0)) for v in visuals] == [(200, 0, 0)]


def test_test_split_writes_the_server_file(hub_dataset: Any, run_benchmark: Any, tmp_path: Path) -> None:
    hub_dataset(REPO, "test", [{**row, "answer": []} for row in ROWS], _features())
    results = run_benchmark("coco2017_cap_test", _scripted(MIXED), output_path=str(tmp_path / "out"))
    [path] = results["output_files"]["submissions"]["coco2017_cap_test"]
    assert json.loads(Path(path).read_text()) == [
        {"image_id": 139, "caption": MIXED["0"]},
        {"image_id": 285, "caption": MIXED["1"]},
    ]
