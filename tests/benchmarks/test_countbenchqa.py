"""countbenchqa: caption + question prompt, exact-digit acc (published) and first-number acc_number."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.tasks.countbenchqa.utils import first_count

# caption, question, number, scripted answer, acc, acc_number
ROWS = [
    ("three dogs on grass", "How many dogs are there?", 3, " 3 ", 1.0, 1.0),
    ("five cups", "How many cups are there?", 5, "There are 5 cups.", 0.0, 1.0),
    ("two cats", "How many cats are there?", 2, "Two.", 0.0, 1.0),
    ("seven pens", "How many pens are there?", 7, "6 or 7", 0.0, 0.0),
]


@pytest.fixture
def countbench_data(hub_dataset: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "image": datasets.Image(),
            "text": datasets.Value("string"),
            "question": datasets.Value("string"),
            "number": datasets.Value("int64"),
        }
    )
    rows = [{"image": solid_image(), "text": t, "question": q, "number": n} for t, q, n, *_ in ROWS]
    hub_dataset("vikhyatk/CountBenchQA", "test", rows, features)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(r[3] for r in ROWS if r[0] == doc["text"])


def test_published_and_lenient_accuracy(countbench_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    scores = run_benchmark("countbenchqa", _answer, model=model)["results"]["countbenchqa"]
    assert scores["acc,none"] == pytest.approx(sum(r[4] for r in ROWS) / len(ROWS))
    assert scores["acc_number,none"] == pytest.approx(sum(r[5] for r in ROWS) / len(ROWS))
    prompt, visuals = model.seen["countbenchqa"][0]
    assert prompt == "three dogs on grass\n\nHow many dogs are there?\nAnswer with a single number."
    assert len(visuals) == 1


def test_first_count() -> None:
    assert first_count("I count 12 birds, not 13") == 12
    assert first_count("Eleven") == 11
    assert first_count("someone") is None  # "one" inside a word is not a number
    assert first_count("") is None
