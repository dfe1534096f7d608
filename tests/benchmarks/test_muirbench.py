"""muirbench: multi-image documents, the published leading-letter reading, the strict key."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.tasks.muirbench.utils import published_answer

POST = "\nAnswer with the option's letter from the given choices directly."


# each checked against the published package's filter
@pytest.mark.parametrize(
    ("response", "read"),
    [
        ("B.", "B"),
        (" B. the second", "B"),
        ("B.C.", "B"),
        ("AB.", "AB."),  # only at the start
        ("x B. y", "x B. y"),
        ("b.", "b."),  # upper case only
        ("(B)", "(B)"),
    ],
)
def test_published_answer(response: str, read: str) -> None:
    assert published_answer(response) == read


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    names = ("idx", "task", "image_relation", "image_type", "question", "answer")
    return datasets.Features(
        {
            **dict.fromkeys(names, text),
            "options": datasets.Sequence(text),
            "image_list": datasets.Sequence(datasets.Image()),
        }
    )


# (gold, answer, image count): published right?, strict right?
DOCS = [("B", "b", 2), ("A", "(A)", 3), ("C", "C. none", 4), ("B", "The answer is B", 2)]


@pytest.fixture
def muir_data(hub_dataset: Any) -> None:
    rows = [
        {
            "idx": str(i),
            "task": "Image-Text Matching" if i < 2 else "Counting",
            "image_relation": "Narrative",
            "image_type": "Photo",
            "question": "Which image <image> matches <image>?",
            "options": ["the first", "the second", "none"],
            "answer": gold,
            "image_list": [solid_image((k * 50, i * 50, 0)) for k in range(count)],
        }
        for i, (gold, _, count) in enumerate(DOCS)
    ]
    hub_dataset("MUIRBENCH/MUIRBENCH", "test", rows, _features())


def test_run(muir_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(lambda task, doc: DOCS[int(doc["idx"])][1])
    scores = run_benchmark("muirbench", lambda t, d: "", model=model)["results"]["muirbench"]
    # published: right ("b"), wrong ("(A)"), right ("C."), wrong; strict: all four right
    assert scores["muirbench_score_overall,none"] == pytest.approx(0.5)
    assert scores["muirbench_score_overall_strict,none"] == pytest.approx(1.0)
    content = model.seen["muirbench"][2][0]["content"]
    assert [c["url"].getpixel((0, 0)) for c in content[:-1]] == [
        (0, 100, 0),
        (50, 100, 0),
        (100, 100, 0),
        (150, 100, 0),
    ]
    question = "Which image <image> matches <image>?\nA. the first\nB. the second\nC. none"
    assert content[-1]["text"] == question + POST
