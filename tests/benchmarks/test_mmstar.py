"""mmstar: letter extraction, per-category keys with spaces, macro averages over l2 categories."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer with the option's letter from the given choices directly"  # no full stop (published)


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "index": datasets.Value("int64"),
            "question": datasets.Value("string"),
            "image": datasets.Image(),
            "answer": datasets.Value("string"),
            "category": datasets.Value("string"),
            "l2_category": datasets.Value("string"),
            "meta_info": {
                "source": datasets.Value("string"),
                "split": datasets.Value("string"),
                "image_path": datasets.Value("string"),
            },
        }
    )


# (category, l2_category, gold, output, correct?)
CASES = [
    ("coarse perception", "image scene and topic", "A", "A", True),
    ("coarse perception", "image scene and topic", "B", "The answer is (B).", True),
    ("coarse perception", "image scene and topic", "C", "A cat is there", False),  # article, no letter
    ("coarse perception", "image style & quality", "D", "C", False),
    ("math", "numeric commonsense and calculation", "B", "B. 12", True),
    ("science & technology", "biology & chemistry & physics", "A", "Option A", True),
    ("science & technology", "biology & chemistry & physics", "C", "I am not sure", False),
]


@pytest.fixture
def mmstar_data(hub_dataset: Any) -> None:
    rows = [
        {
            "index": i,
            "question": f"Question {i}?\nOptions: A: red, B: green, C: blue, D: black",
            "image": solid_image((0, i * 30, 0)),
            "answer": gold,
            "category": category,
            "l2_category": l2,
            "meta_info": {"source": "synthetic", "split": "val", "image_path": f"images/{i}.jpg"},
        }
        for i, (category, l2, gold, _, _) in enumerate(CASES)
    ]
    hub_dataset("Lin-Chen/MMStar", "val", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[doc["index"]][3]


def test_macro_averages_per_category_and_overall(mmstar_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("mmstar", _answer)["results"]["mmstar"]
    # coarse perception: l2 means scene 2/3 and style 0 -> (2/3 + 0) / 2 = 1/3 (micro would be 2/4)
    assert scores["coarse perception,none"] == pytest.approx(1 / 3)
    assert scores["math,none"] == pytest.approx(1.0)
    assert scores["science & technology,none"] == pytest.approx(0.5)
    # average over the 4 l2 categories: (2/3 + 0 + 1 + 1/2) / 4 = 13/24; the micro mean is 4/7
    assert scores["average,none"] == pytest.approx(13 / 24)
    assert scores["average,none"] != pytest.approx(4 / 7)
    # categories without documents get no key
    assert "fine-grained perception,none" not in scores and "logical reasoning,none" not in scores


def test_two_runs_in_one_process_agree(mmstar_data: None, run_benchmark: Any) -> None:
    first = run_benchmark("mmstar", _answer, bootstrap_iters=20)["results"]["mmstar"]
    second = run_benchmark("mmstar", _answer, bootstrap_iters=20)["results"]["mmstar"]
    assert first == second
    assert isinstance(first["average_stderr,none"], float)


def test_prompts(mmstar_data: None, run_benchmark: Any) -> None:
    expected = "Question 1?\nOptions: A: red, B: green, C: blue, D: black" + POST
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("mmstar", _answer, model=chat, limit=2)
    [message] = chat.seen["mmstar"][1]
    image, text = message["content"]
    assert image["url"].getpixel((0, 0)) == (0, 30, 0)
    assert text == {"type": "text", "text": expected}
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("mmstar", _answer, model=simple, limit=2)
    text, visuals = simple.seen["mmstar"][1]
    assert text == expected and [v.getpixel((0, 0)) for v in visuals] == [(0, 30, 0)]


RULE_PROBES = {  # index -> output where the published letter rule and ours disagree
    0: "A cat sits on the mat",  # gold A: published A (a leading letter), ours none
    1: "b",  # gold B: published none (case-sensitive), ours B
    2: "The answer is C, not B",  # gold C: published B (last letter after "answer is"), ours C
    3: "Blue",  # gold D: published B (a capital anywhere), ours none
}


def test_published_keys_and_strict_keys(mmstar_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("mmstar", lambda task, doc: RULE_PROBES.get(doc["index"], "Z"))["results"][
        "mmstar"
    ]
    # scene (docs 0-2): published 1/3, strict 2/3; style (doc 3): 0 on both
    assert scores["coarse perception,none"] == pytest.approx((1 / 3 + 0) / 2)
    assert scores["coarse perception_strict,none"] == pytest.approx((2 / 3 + 0) / 2)
