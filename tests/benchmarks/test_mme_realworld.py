"""mme_realworld: the published letter rule (empty output reads A), the fixed English/Chinese prompts."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import mme_realworld


# each checked against the published package
@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("B", "B"),
        ("The answer is (B)", "B"),
        ("Answer: B", "A"),  # the first capital A-E: the A of Answer
        ("Because", "B"),
        ("The Answer is B", "A"),  # the phrases are deleted case-sensitively
        ("best answer: C", "C"),
        ("b", "B"),  # no capital: the option mark holding the output
        ("(b", "B"),
        ("c)", "C"),
        ("", "A"),  # the empty text is in every mark
        ("The best answer is", "A"),
        ("The best option is e", ""),  # " e" is in no mark
        ("b.", ""),
        ("[b]", ""),
        ("f", ""),
        ("word " * 11, ""),
        ("word " * 11 + "B", "B"),
    ],
)
def test_published_letter(response: str, letter: str) -> None:
    assert mme_realworld.published_letter(response) == letter


def _b64(colour: tuple[int, int, int]) -> str:
    buffer = io.BytesIO()
    solid_image(colour).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


OPTIONS = ["(A) red", "(B) blue", "(C) green", "(D) white", "(E) The image does not show it."]
# (gold, answer): published right?, strict right?
DOCS = [("A", "A"), ("A", ""), ("B", "Answer: B"), ("C", "c)")]


@pytest.fixture
def mr_data(hub_dataset: Any) -> None:
    import datasets

    rows = [
        {
            "index": i,
            "question": "What colour is the car?",
            "multi-choice options": OPTIONS,
            "answer": gold,
            "bytes": _b64((i * 60, 0, 0)),
            "category": "Perception/OCR with Complex Context",
            "l2-category": "license",
        }
        for i, (gold, _) in enumerate(DOCS)
    ]
    text = datasets.Value("string")
    features = dict.fromkeys(rows[0], text) | {
        "index": datasets.Value("int64"),
        "multi-choice options": [text],
    }
    for name in ("MME-RealWorld-Lmms-eval", "MME-RealWorld-CN-Lmms-eval"):
        hub_dataset(f"yifanzhang114/{name}", "train", rows, features)


def test_run(mr_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(lambda task, doc: DOCS[int(doc["index"])][1])
    results = run_benchmark(["mmerealworld", "mmerealworld_cn"], lambda t, d: "", model=model)["results"]
    for task in ("mmerealworld", "mmerealworld_cn"):
        # published: right, right ("" reads A), wrong (A), right; strict: right, wrong, right, right
        assert results[task]["mme_realworld_score,none"] == pytest.approx(0.75)
        assert results[task]["mme_realworld_score_strict,none"] == pytest.approx(0.75)
    en = model.seen["mmerealworld"][1][0]["content"]
    assert en[0]["url"].getpixel((0, 0)) == (60, 0, 0)
    options = "\n".join(OPTIONS)
    assert en[1]["text"] == (
        f"What colour is the car? The choices are listed below:\n{options}\nSelect the best answer to the above "
        "multiple-choice question based on the image. Respond with only the letter (A, B, C, D, or E) of the "
        "correct option.\nThe best answer is: "
    )
    cn = model.seen["mmerealworld_cn"][1][0]["content"][1]["text"]
    assert cn.startswith("What colour is the car? 选项如下所示:\n(A) red")
    assert cn.endswith("\n最佳答案为： ")
