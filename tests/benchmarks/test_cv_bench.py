"""cv_bench: the published first-character letter rule, the strict key beside it, the 2D/3D configs."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import cv_bench


# each checked against the published package
@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("B", "B"),
        ("(b)", "B"),
        ("((B", "B"),
        ("  B. 2", "B"),
        ("\nB", "B"),
        ("Because", "B"),
        ("The answer is B", "T"),
        ("I think (B)", "I"),
        ("Z", "Z"),
        ("**B**", ""),
        ("[B]", ""),
        ("-B", ""),
        ("2", ""),
        ("é", ""),
        ("", ""),
    ],
)
def test_published_letter(response: str, letter: str) -> None:
    assert cv_bench.published_letter(response) == letter


def test_gold_letter() -> None:
    assert cv_bench.gold_letter("(C)") == "C"
    assert cv_bench.gold_letter(" (a) ") == "A"


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "idx": datasets.Value("int64"),
            "type": datasets.Value("string"),
            "task": datasets.Value("string"),
            "source": datasets.Value("string"),
            "image": datasets.Image(),
            "prompt": datasets.Value("string"),
            "choices": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.Value("string"),
        }
    )


# (type, source, gold, answer): published right?, strict right?
DOCS = [
    ("2D", "ADE20K", "(B)", "B"),  # right, right
    ("2D", "COCO", "(A)", "The answer is A"),  # wrong (T), right
    ("3D", "Omni3D", "(B)", "**B**"),  # wrong (nothing), right
    ("3D", "Omni3D", "(A)", "Because it is closer"),  # wrong (reads B), wrong (no letter)
]


def _row(i: int, typ: str, source: str, gold: str) -> dict[str, Any]:
    return {
        "idx": i,
        "type": typ,
        "task": "Count" if typ == "2D" else "Depth",
        "source": source,
        "image": solid_image((i * 40, 0, 0)),
        "prompt": "How many cars are in the image? Select from the following choices.\n(A) 3\n(B) 2",
        "choices": ["3", "2"],
        "answer": gold,
    }


@pytest.fixture
def cv_data(hub_dataset: Any) -> None:
    rows = [_row(i, t, s, g) for i, (t, s, g, _) in enumerate(DOCS)]
    hub_dataset("nyu-visionx/CV-Bench", "test", rows, _features(), config="default")
    hub_dataset(
        "nyu-visionx/CV-Bench", "test", [r for r in rows if r["type"] == "2D"], _features(), config="2D"
    )
    hub_dataset(
        "nyu-visionx/CV-Bench", "test", [r for r in rows if r["type"] == "3D"], _features(), config="3D"
    )


def _answer(task: str, doc: dict[str, Any]) -> str:
    return DOCS[int(doc["idx"])][3]


def test_run(cv_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    results = run_benchmark(["cv_bench", "cv_bench_2d", "cv_bench_3d"], _answer, model=model)["results"]
    # published: right, wrong, wrong, wrong; strict: right, right, right, wrong
    assert results["cv_bench"]["cv_bench_acc,none"] == pytest.approx(0.25)
    assert results["cv_bench"]["cv_bench_acc_strict,none"] == pytest.approx(0.75)
    assert results["cv_bench_2d"]["cv_bench_acc,none"] == pytest.approx(0.5)
    assert results["cv_bench_3d"]["cv_bench_acc,none"] == pytest.approx(0.0)
    assert results["cv_bench_3d"]["cv_bench_acc_strict,none"] == pytest.approx(0.5)
    text, visuals = model.seen["cv_bench"][1]
    note = "Note: You only need to respond with A, B without providing any additional information.\n"
    assert text == f"{note}\nHow many cars are in the image? Select from the following choices.\n(A) 3\n(B) 2"
    assert [v.getpixel((0, 0)) for v in visuals] == [(40, 0, 0)]
