"""mathvision: the published prompt, boxed-answer scoring of letters and numbers, percent accuracy."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import mathvision

SOLUTION = 'Please solve the problem step by step and put your answer in one "\\boxed{}".'
MC = "Answer the question with the option's letter from the given choices directly."
SHAPES = ["circle", "square", "star", "moon", "sun"]


@pytest.mark.parametrize(
    ("response", "correct"),
    [
        ("\\boxed{B}", True),
        ("Step 1 ... so the answer is (B).", True),
        ("\\boxed{square}", True),  # the option's text
        ("\\boxed{C}", False),
        ("\\boxed{A} or \\boxed{B}", True),  # the last box
        ("I cannot tell", False),
    ],
)
def test_multiple_choice(response: str, correct: bool) -> None:
    assert mathvision.is_correct(response, SHAPES, "B") is correct


@pytest.mark.parametrize(
    ("response", "gold", "correct"),
    [
        ("so \\boxed{12}", "12", True),
        ("\\boxed{12.0}", "12", True),
        ("\\boxed{\\frac{1}{2}}", "0.5", True),
        ("The answer is 13", "12", False),
        ("\\boxed{13}", "12", False),
    ],
)
def test_free_form(response: str, gold: str, correct: bool) -> None:
    assert mathvision.is_correct(response, [], gold) is correct


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "question": datasets.Value("string"),
            "options": datasets.Sequence(datasets.Value("string")),
            "image": datasets.Value("string"),
            "decoded_image": datasets.Image(),
            "answer": datasets.Value("string"),
            "solution": datasets.Value("string"),
            "level": datasets.Value("int64"),
            "subject": datasets.Value("string"),
        }
    )


# (question, options, gold, scripted answer)
DOCS = [
    ("Which shape is shaded?", SHAPES, "B", "It is the square, \\boxed{B}"),
    ("Which shape is largest?", SHAPES, "E", "\\boxed{D}"),
    ("How many triangles?", [], "12", "Counting gives \\boxed{12}"),
    ("What is the area?", [], "0.5", "\\boxed{\\frac{1}{2}}"),
    ("What is the angle?", [], "30", "I do not know"),
]


@pytest.fixture
def mathvision_data(hub_dataset: Any) -> None:
    rows = [
        {
            "id": str(i),
            "question": question,
            "options": options,
            "image": f"images/{i}.jpg",
            "decoded_image": solid_image((i * 40, 0, 0)),
            "answer": gold,
            "solution": "",
            "level": 1,
            "subject": "metric geometry - area",
        }
        for i, (question, options, gold, _) in enumerate(DOCS)
    ]
    hub_dataset("MathLLMs/MathVision", "testmini", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return DOCS[int(doc["id"])][3]


def test_accuracy_in_percent(mathvision_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("mathvision_testmini", _answer)["results"]["mathvision_testmini"]
    assert scores["mathvision_standard_eval,none"] == 60.0  # 3 of 5


def test_prompts(mathvision_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    run_benchmark("mathvision_testmini", _answer, model=model)
    text, visuals = model.seen["mathvision_testmini"][0]
    options = "\n".join(f"{letter}. {shape}" for letter, shape in zip("ABCDE", SHAPES))
    assert text == f"{SOLUTION}Which shape is shaded?\nChoices: {options}\n{MC}"
    assert [v.getpixel((0, 0)) for v in visuals] == [(0, 0, 0)]
    assert model.seen["mathvision_testmini"][2][0] == f"{SOLUTION}How many triangles?"
