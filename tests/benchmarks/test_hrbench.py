"""hrbench: the option rule without the article reading, single/cross/average by cycle category."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring.choice import macro_mean
from lmms_eval.scoring.circular import extract_choice

OPTIONS = {"A": "red", "B": "blue", "C": "green", "D": "white"}


# each checked against the published package (None: the published task asks its judge)
@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("B", "B"),
        ("B)", "B"),
        ("{B}", "B"),
        ("#B", "B"),
        ("the answer is B", "B"),
        ("A big red cup", "A"),  # a leading A is option A (no article rule)
        ("Blue", "B"),  # the one option text
        ("A big cup, so B", None),
        ("A B", None),
        ("b is it", None),
        ("-B-", None),
        ("'B'", None),
        ("white and blue", None),
        ("whitish", None),
    ],
)
def test_hrbench_choice(response: str, letter: str | None) -> None:
    assert extract_choice(response, OPTIONS, article_rule=False) == letter


def test_article_rule_kept_by_default() -> None:
    assert extract_choice("A dog is here", OPTIONS) is None
    assert extract_choice("A dog is here", OPTIONS, article_rule=False) == "A"


def test_cycle_mean() -> None:
    scores = [("x", 1), ("x", 1), ("x", 0), ("y", 1), ("z", 0), ("z", 0)]
    items = [{"cycle_category": c, "gpt_score": s} for c, s in scores]
    assert macro_mean(items, "cycle_category", "gpt_score") == pytest.approx((2 / 3 + 1 + 0) / 3)


def _b64(colour: tuple[int, int, int]) -> str:
    buffer = io.BytesIO()
    solid_image(colour).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


# (category, cycle, gold, answer)
DOCS = [
    ("single", "c1", "A", "A"),
    ("single", "c1", "B", "red"),  # wrong
    ("single", "c2", "C", "(C)"),
    ("cross", "c3", "D", "white"),
    ("cross", "c4", "A", "A or B"),  # unresolved: wrong
]


@pytest.fixture
def hr_data(hub_dataset: Any) -> None:
    import datasets

    rows = [
        {
            "index": i,
            "image": _b64((i * 50, 0, 0)),
            "question": "What colour is the flag?",
            **OPTIONS,
            "answer": gold,
            "category": category,
            "cycle_category": cycle,
        }
        for i, (category, cycle, gold, _) in enumerate(DOCS)
    ]
    features = {k: datasets.Value("string") for k in rows[0]} | {"index": datasets.Value("int64")}
    for split in ("hrbench_4k", "hrbench_8k"):
        hub_dataset("DreamMr/HR-Bench", split, rows, features, config="hrbench_version_split")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return DOCS[int(doc["index"])][3]


def test_run(hr_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer)
    results = run_benchmark("hrbench", _answer, model=model)["results"]
    for task in ("hrbench4k", "hrbench8k"):
        scores = results[task]
        assert scores["single,none"] == pytest.approx((0.5 + 1.0) / 2)  # c1 half right, c2 right
        assert scores["cross,none"] == pytest.approx(0.5)  # c3 right, c4 wrong
        assert scores["average,none"] == pytest.approx((0.5 + 1 + 1 + 0) / 4)
    content = model.seen["hrbench4k"][1][0]["content"]
    assert content[0]["url"].getpixel((0, 0)) == (50, 0, 0)
    prompt = (
        "What colour is the flag?\nA. red\nB. blue\nC. green\nD. white\nAnswer the option letter directly."
    )
    assert content[1]["text"] == prompt
