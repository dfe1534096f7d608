"""vstar_bench: the published letter rule, the option lines of the prompt, the category subtasks."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import vstar

POST = "\nAnswer with the option's letter from the given choices directly."


# each checked against the published package
@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("b", "B"),
        ("Answer: (C)", "A"),  # a letter starting the output wins
        ("The answer is: B", "B"),  # a letter ending the output
        ("the answer is c", "C"),
        ("x (b) (c)", "B"),
        ("A is wrong, the answer is C", "A"),
        ("red .zz answer", "D"),  # "d ." : a letter before a full stop
        ("x b c", "B"),  # between spaces
        ("x b, c", "C"),  # "b," is not between spaces; "c" ends the output
        ("red", "D"),  # the one letter a-d in the output
        ("the cup", "C"),
        ("xddx", None),  # two of them
        ("red Bob", None),
        ("green", None),
        ("E", None),
        ("", None),
    ],
)
def test_published_letter(response: str, letter: str | None) -> None:
    assert vstar.published_letter(response) == letter


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("Q?\n(A) red\n(B) blue", "Q?\nA. red\nB. blue"),
        ("Q? (A) x (B) y", "Q?\nA. x\nB. y"),
        ("Q (A) x (C) y", "Q\nA. x\nB. y"),  # lettered again in order
        ("Q?\nA. x\nB. y", "Q?\nA. x\nB. y"),  # no (A): as is
        ("Q (A)", "Q (A)"),  # no option text: as is
    ],
)
def test_option_lines(text: str, lines: str) -> None:
    assert vstar.option_lines(text) == lines


def _features() -> Any:
    import datasets

    names = ("question_id", "text", "label", "category")
    return datasets.Features({**{n: datasets.Value("string") for n in names}, "image": datasets.Image()})


# (category, gold, answer): published right?, strict right?
DOCS = [
    ("direct_attributes", "A", "A"),  # right, right
    ("direct_attributes", "D", "red"),  # right ("red" reads D), wrong
    ("relative_position", "B", "**B**"),  # right (the one letter b), right
    ("relative_position", "A", "B"),  # wrong, wrong
]


@pytest.fixture
def vstar_data(hub_dataset: Any) -> None:
    rows = [
        {
            "question_id": f"q{i}",
            "text": "What is the colour of the cup?\n(A) red\n(B) blue\n(C) green\n(D) white",
            "label": gold,
            "category": category,
            "image": solid_image((0, i * 60, 0)),
        }
        for i, (category, gold, _) in enumerate(DOCS)
    ]
    hub_dataset("lmms-lab-encoder/vstar-bench", "test", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return DOCS[int(doc["question_id"][1:])][2]


def test_run(vstar_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    tasks = ["vstar_bench", "vstar_bench_direct_attributes", "vstar_bench_relative_position"]
    results = run_benchmark(tasks, _answer, model=model)["results"]
    assert results["vstar_bench"]["vstar_overall_acc,none"] == pytest.approx(75.0)
    assert results["vstar_bench"]["vstar_overall_acc_strict,none"] == pytest.approx(50.0)
    assert results["vstar_bench_direct_attributes"]["vstar_direct_attributes_acc,none"] == pytest.approx(
        100.0
    )
    assert results["vstar_bench_direct_attributes"][
        "vstar_direct_attributes_acc_strict,none"
    ] == pytest.approx(50.0)
    assert results["vstar_bench_relative_position"]["vstar_relative_position_acc,none"] == pytest.approx(50.0)
    text, visuals = model.seen["vstar_bench"][1]
    assert text == f"What is the colour of the cup?\nA. red\nB. blue\nC. green\nD. white{POST}"
    assert [v.getpixel((0, 0)) for v in visuals] == [(0, 60, 0)]
    assert len(model.seen["vstar_bench_relative_position"]) == 2
