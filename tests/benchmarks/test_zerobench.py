"""zerobench: normalised exact match (numbers by value), multi-image prompts, the 0-1 mean."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring.zerobench import exact_match

RED, BLUE = (200, 0, 0), (0, 0, 200)


@pytest.mark.parametrize(
    ("prediction", "gold", "match"),
    [
        ("12", "12", True),
        (" 12.\n", "12", True),  # one trailing full stop
        ("12..", "12", False),
        ("1,000", "1000", True),
        ("12.50", "12.5", True),
        ("0012", "12", True),
        (".12", "0.12", True),
        ("`12`", "12", True),
        ("Blue  Car.", "blue car", True),
        ("Blue car!", "blue car", False),
        ("12%", "12", False),
        ("+12", "12", False),
        ("1e3", "1000", False),
        ("The answer is 12", "12", False),
        ("\\boxed{12}", "12", False),
    ],
)
def test_exact_match(prediction: str, gold: str, match: bool) -> None:
    assert exact_match(prediction, gold) is match


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "question_id": datasets.Value("string"),
            "question_text": datasets.Value("string"),
            "question_images_decoded": datasets.Sequence(datasets.Image()),
            "question_answer": datasets.Value("string"),
            "question_images": datasets.Sequence(datasets.Value("string")),
            "image_attribution": datasets.Value("string"),
        }
    )


DOCS = [("How many dots?", "12", "12."), ("Which car?", "blue car", "Blue car"), ("Sum?", "1000", "1e3")]


@pytest.fixture
def zerobench_data(hub_dataset: Any) -> None:
    rows = [
        {
            "question_id": str(i),
            "question_text": question,
            "question_images_decoded": [solid_image(RED), solid_image(BLUE)],
            "question_answer": gold,
            "question_images": ["a.png", "b.png"],
            "image_attribution": "",
        }
        for i, (question, gold, _) in enumerate(DOCS)
    ]
    hub_dataset("jonathan-roberts1/zerobench", "zerobench", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return DOCS[int(doc["question_id"])][2]


def test_run(zerobench_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    scores = run_benchmark("zerobench", _answer, model=model)["results"]["zerobench"]
    assert scores["zerobench_exact_match,none"] == pytest.approx(2 / 3)
    [message] = model.seen["zerobench"][0]
    first, second, text = message["content"]
    assert [first["url"].getpixel((0, 0)), second["url"].getpixel((0, 0))] == [RED, BLUE]
    assert text == {"type": "text", "text": "How many dots?\nAnswer with only the final answer."}
