"""logicvista_reasoning and the published <think>/<answer> scoring (format, first answer, letters)."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import reasoning_tags

TAGGED = "<think>x</think><answer>{}</answer>"


# (gold, output, acc, format): each checked against the published package
@pytest.mark.parametrize(
    ("gold", "output", "acc", "fmt"),
    [
        ("B", TAGGED.format("B"), 1, 1),
        ("B", "<answer>B</answer>", 1, 0),  # no <think>
        ("B", "B", 0, 0),  # no answer block
        ("B", "\\boxed{B}", 1, 1),  # a boxed answer passes the format
        ("B", "x \\boxed{B} y", 1, 1),
        ("B", "\\boxed{}", 0, 0),
        ("B", "pre " + TAGGED.format("B"), 1, 0),  # text before <think>
        ("B", TAGGED.format("B") + " trailing", 1, 0),  # text after </answer>
        ("B", TAGGED.format("B") + "<answer>C</answer>", 1, 1),  # the first answer block
        ("B", "<answer></answer>\\boxed{B}", 0, 1),  # an empty answer block still counts
        ("B", TAGGED.format("square"), 0, 1),
        ("B", "<answer>(B)</answer>", 1, 0),
        ("B", "<answer>The answer is B</answer>", 1, 0),
        ("B", "<answer>b</answer>", 0, 0),  # letters in upper case only
        ("B", "<answer>Answer: b</answer>", 0, 0),
        ("3.5", "<answer>7/2</answer>", 1, 0),  # the same number
    ],
)
def test_reasoning_scores(gold: str, output: str, acc: float, fmt: float) -> None:
    assert reasoning_tags.acc_score(output, gold) == acc
    assert reasoning_tags.format_score(output) == fmt


@pytest.fixture
def lv_data(hub_dataset: Any) -> None:
    import datasets

    rows = [
        {
            "question": f"Which comes next? A. circle B. square ({i})",
            "answer": gold,
            "image": solid_image((i * 70, 0, 0)),
        }
        for i, gold in enumerate(["B", "A", "C"])
    ]
    features = {
        "question": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "image": datasets.Image(),
    }
    hub_dataset("lscpku/LogicVista", "test", rows, features)


ANSWERS = [TAGGED.format("B"), "<answer>A</answer>", "\\boxed{D}"]


def test_run(lv_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(lambda task, doc: ANSWERS[int(doc["question"][-2])])
    scores = run_benchmark("logicvista_reasoning", lambda t, d: "", model=model)["results"][
        "logicvista_reasoning"
    ]
    assert scores["acc_score,none"] == pytest.approx(2 / 3)
    # the run strips <think>...</think> before scoring (the default reasoning_tags, as published), so
    # only the boxed answer keeps the format
    assert scores["format_score,none"] == pytest.approx(1 / 3)
    system, user = model.seen["logicvista_reasoning"][1]
    assert system["content"][0]["text"] == reasoning_tags.SYSTEM_PROMPT
    assert user["content"][0]["url"].getpixel((0, 0)) == (70, 0, 0)
    assert user["content"][1]["text"] == "Which comes next? A. circle B. square (1)"
