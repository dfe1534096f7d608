"""scienceqa / scienceqa_img / scienceqa_full: hints, text-only questions and the letter rule."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer with the option's letter from the given choices directly."
TEXT_FIELDS = ("hint", "task", "grade", "subject", "topic", "category", "skill", "lecture", "solution")


def _features() -> Any:
    import datasets

    fields: dict[str, Any] = {
        "image": datasets.Image(),
        "question": datasets.Value("string"),
        "choices": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("int8"),
    }
    fields.update({name: datasets.Value("string") for name in TEXT_FIELDS})
    return datasets.Features(fields)


def _row(question: str, choices: list[str], answer: int, hint: str, image: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(TEXT_FIELDS, "")
    row.update(
        {
            "image": image,
            "question": question,
            "choices": choices,
            "answer": answer,
            "hint": hint,
            "grade": "g4",
        }
    )
    return row


# question -> scripted output
OUTPUTS = {
    "Which is a mammal?": "B",  # FULL: correct (bare letter)
    "Which word is a noun?": "a. dog",  # FULL, no image: wrong (lowercase leading form)
    "Which magnet attracts?": "C. the north pole",  # FULL and IMG: correct (leading "C.")
    "What is 2 + 2?": "The answer is A",  # FULL, no image: wrong (no rule reads sentences)
    "Which is hotter?": " b ",  # IMG: correct (stripped, case ignored)
}


@pytest.fixture
def scienceqa_data(hub_dataset: Any) -> None:
    red, blue, green = solid_image((255, 0, 0)), solid_image((0, 0, 255)), solid_image((0, 255, 0))
    full = [
        _row("Which is a mammal?", ["frog", "dog", "fish"], 1, "Look at the animals.", red),
        _row("Which word is a noun?", ["dog", "run"], 0, "", None),
        _row("Which magnet attracts?", ["north", "south", "the north pole"], 2, "", blue),
        _row("What is 2 + 2?", ["4", "5", "6", "7"], 0, "Count carefully.", None),
    ]
    img = [
        _row("Which magnet attracts?", ["north", "south", "the north pole"], 2, "", blue),
        _row("Which is hotter?", ["ice", "fire"], 1, "One burns.", green),
    ]
    hub_dataset("lmms-lab-encoder/ScienceQA", "test", full, _features(), config="ScienceQA-FULL")
    hub_dataset("lmms-lab-encoder/ScienceQA", "test", img, _features(), config="ScienceQA-IMG")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return OUTPUTS[doc["question"]]


def test_group_scores_each_config(scienceqa_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("scienceqa_full", _answer)
    # FULL: rows 0 and 2 right of 4 -> 0.5; IMG: both right -> 1.0
    assert results["results"]["scienceqa"]["exact_match,none"] == pytest.approx(0.5)
    assert results["results"]["scienceqa_img"]["exact_match,none"] == pytest.approx(1.0)
    assert results["n-samples"]["scienceqa"]["effective"] == 4
    assert results["n-samples"]["scienceqa_img"]["effective"] == 2
    assert results["group_subtasks"]["scienceqa_full"] == ["scienceqa", "scienceqa_img"]


def test_chat_prompt_with_hint_and_without_image(scienceqa_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    run_benchmark("scienceqa", _answer, model=model)
    [with_hint] = model.seen["scienceqa"][0]
    image, text = with_hint["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (255, 0, 0)
    expected = "Context: Look at the animals.\nWhich is a mammal?\nA. frog\nB. dog\nC. fish" + POST
    assert text == {"type": "text", "text": expected}
    [no_image] = model.seen["scienceqa"][1]  # no image and an empty hint: text only, no context line
    assert no_image["content"] == [{"type": "text", "text": "Which word is a noun?\nA. dog\nB. run" + POST}]


def test_simple_prompt(scienceqa_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    run_benchmark("scienceqa", _answer, model=model)
    text, visuals = model.seen["scienceqa"][3]
    assert text == "Context: Count carefully.\nWhat is 2 + 2?\nA. 4\nB. 5\nC. 6\nD. 7" + POST
    assert visuals == []
    text, visuals = model.seen["scienceqa"][2]
    assert text == "Which magnet attracts?\nA. north\nB. south\nC. the north pole" + POST
    assert [v.getpixel((0, 0)) for v in visuals] == [(0, 0, 255)]
