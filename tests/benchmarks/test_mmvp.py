"""mmvp: option parsing, the published letter rule, pair accuracy, the strict keys beside them."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import mmvp

POST = "\nAnswer with the option's letter from the given choices directly."


# each checked against the published package (options a and b)
@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("b", "B"),
        ("(a)", "A"),
        ("The answer is B, not A", "B"),  # the answer statement first
        ("the answer is bad", "B"),
        ("x b y (a)", "B"),  # the first token letter
        ("the option a is wrong", "A"),
        ("I think b", "B"),
        ("cab", "B"),  # a letter ending the output
        ("Because", "B"),  # a letter starting the output
        ("A. Left", "A"),
        ("it is b.", ""),
        ("[b]", ""),
        ("**B**", ""),
        ("C", ""),  # not an option
        ("Left", ""),
    ],
)
def test_published_letter(response: str, letter: str) -> None:
    assert mmvp.published_letter(response, 2) == letter


def test_options_gold_and_pairs() -> None:
    assert mmvp.parse_options("(a) red car (b) blue car (c) none") == ["red car", "blue car", "none"]
    assert mmvp.gold_letter("(b)") == "B"
    items = [
        {"pair_index": k // 2, "is_correct": ok}
        for k, ok in enumerate([True, True, True, False, False, False])
    ]
    assert mmvp.pair_accuracy(items) == pytest.approx(1 / 3)


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "Index": datasets.Value("int64"),
            "Question": datasets.Value("string"),
            "Options": datasets.Value("string"),
            "Correct Answer": datasets.Value("string"),
            "image": datasets.Image(),
        }
    )


# (gold, scripted answer): published right?, strict right?
DOCS = [("(a)", "a"), ("(b)", "b"), ("(a)", "Because"), ("(b)", "**B**")]


@pytest.fixture
def mmvp_data(hub_dataset: Any) -> None:
    rows = [
        {
            "Index": i + 1,
            "Question": "Is the dog facing left or right?",
            "Options": "(a) Left (b) Right",
            "Correct Answer": gold,
            "image": solid_image((0, 0, i * 50)),
        }
        for i, (gold, _) in enumerate(DOCS)
    ]
    hub_dataset("lmms-lab-eval/MMVP", "train", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return DOCS[int(doc["Index"]) - 1][1]


def test_run(mmvp_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    scores = run_benchmark("mmvp", _answer, model=model)["results"]["mmvp"]
    # published: right, right, wrong ("Because" is B), wrong ("**B**" is nothing) -> pairs 1 of 2
    assert scores["mmvp_accuracy,none"] == pytest.approx(0.5)
    assert scores["mmvp_pair_accuracy,none"] == pytest.approx(0.5)
    # strict: right, right, wrong, right -> pairs 1 of 2
    assert scores["mmvp_accuracy_strict,none"] == pytest.approx(0.75)
    assert scores["mmvp_pair_accuracy_strict,none"] == pytest.approx(0.5)
    text, visuals = model.seen["mmvp"][1]
    assert text == f"Is the dog facing left or right?\nA. Left\nB. Right{POST}"
    assert [v.getpixel((0, 0)) for v in visuals] == [(0, 0, 50)]
