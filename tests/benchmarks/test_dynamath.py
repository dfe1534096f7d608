"""dynamath_reasoning: the trailing-number answer, average/worst by id (published) and by seed (strict)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import reasoning_tags
from lmms_eval.tasks.dynamath import utils


# (gold, output, acc): each checked against the published package
@pytest.mark.parametrize(
    ("gold", "output", "acc"),
    [
        ("3.5", "The answer is 3.5", 1),  # no answer block: the number ending the output
        ("3.5", "answer 3.5.", 1),
        ("3.5", "the value is 3.50", 1),
        ("3.5", "-3.5", 1),  # unsigned
        ("-1", "x -1", 0),
        ("3.5", "3.5 cm", 0),
        ("3.5", "(3.5)", 0),
        ("3.5", "$3.5$", 0),
        ("2", "the value is 7/2", 1),  # the number ending it is 2
        ("3.5", "<answer>x</answer> 3.5", 0),  # an answer block wins
        ("B", "The answer is B", 0),
    ],
)
def test_trailing_number(gold: str, output: str, acc: float) -> None:
    assert reasoning_tags.acc_score(output, gold) == acc


def test_group_scores() -> None:
    # (group, acc): group a all right, b half, c wrong
    items: list[Mapping[str, Any]] = [
        {"group": g, "acc": a} for g, a in [("a", 1), ("a", 1), ("b", 1), ("b", 0), ("c", 0)]
    ]
    assert utils.aggregate_average(items) == pytest.approx((1 + 0.5 + 0) / 3)
    assert utils.aggregate_worst(items) == pytest.approx(1 / 3)
    assert utils.aggregate_all(items) == pytest.approx(3 / 5)


# (id, seed question, gold, answer)
DOCS = [
    ("0", "q1", "3", "<answer>3</answer>"),
    ("1", "q1", "4", "4"),
    ("2", "q2", "5", "5"),
    ("3", "q2", "6", "0"),
]


@pytest.fixture
def dm_data(hub_dataset: Any) -> None:
    import datasets

    rows = [
        {
            "id": i,
            "question_id": q,
            "question": f"What is x? ({i})",
            "ground_truth": g,
            "decoded_image": solid_image(),
        }
        for i, q, g, _ in DOCS
    ]
    text = datasets.Value("string")
    features = dict.fromkeys(("id", "question_id", "question", "ground_truth"), text) | {
        "decoded_image": datasets.Image()
    }
    hub_dataset("kcz358/DynaMath", "test", rows, features)


def test_run(dm_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(lambda task, doc: DOCS[int(doc["id"])][3])
    scores = run_benchmark("dynamath_reasoning", lambda t, d: "", model=model)["results"][
        "dynamath_reasoning"
    ]
    # published: one document per id, so worst = average = 3/4
    assert scores["dynamath_average,none"] == pytest.approx(0.75)
    assert scores["dynamath_worst,none"] == pytest.approx(0.75)
    # strict: by seed question, q1 right in both variants, q2 not
    assert scores["dynamath_average_strict,none"] == pytest.approx(0.75)
    assert scores["dynamath_worst_strict,none"] == pytest.approx(0.5)
    system, user = model.seen["dynamath_reasoning"][2]
    assert system["content"][0]["text"] == reasoning_tags.SYSTEM_PROMPT
    assert user["content"][-1]["text"] == "What is x? (2)"
