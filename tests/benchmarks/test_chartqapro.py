"""chartqapro: context and conversation prompts, relaxed accuracy per question type."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring.chartqapro import relaxed_score

# question type, questions, answers, years, paragraph, scripted answer, score worked by hand
ROWS = [
    ("Factoid", ["What is the peak?"], ["42"], ["NO"], "", "40", 1.0),  # |40 - 42| / 42 < 5%
    ("Factoid", ["Which fruit?"], ["apple"], ["NO"], "", "apples", 1 - 1 / 6),  # ANLS
    ("Multi Choice", ["Which is larger? a) A b) B"], ["b"], ["NO"], "", "b) B", 0.0),  # exactly
    ("Fact Checking", ["A exceeds B."], ["False"], ["NO"], "", "false.", 1.0),
    ("Hypothetical", ["If sales doubled?"], ["84"], ["NO"], "Sales were 42.", "84", 1.0),
    ("Conversational", ["What is the max?", "And the min?"], ["42", "3"], ["NO", "NO"], "", "3", 1.0),
    ("Factoid", ["Which year?"], ["2019"], ["YES"], "", "2020", 0.0),  # a year: exactly, not within 5%
]


def test_relaxed_score_by_hand() -> None:
    assert relaxed_score("42%", ["42"], "Factoid", ["NO"]) == 1.0  # % dropped, not divided by 100
    assert relaxed_score("0.01", ["0"], "Factoid", ["NO"]) == 0.0  # a zero gold must be met exactly
    assert relaxed_score("[1, 3]", ["[1, 2]"], "Factoid", ["NO"]) == 0.5  # lists element by element
    assert relaxed_score("[1]", ["[1, 2]"], "Factoid", ["NO"]) == 0.5
    assert relaxed_score("1, 2", ["[1, 2]"], "Factoid", ["NO"]) == 0.0  # not written as a list
    assert relaxed_score("[42]", ["42"], "Factoid", ["NO"]) == 1.0
    assert relaxed_score("United Sates", ["United States"], "Factoid", ["NO"]) == pytest.approx(12 / 13)
    assert relaxed_score("banana", ["apple"], "Factoid", ["NO"]) == 0.0  # ANLS below 0.5


def test_run_prompts_and_keys(hub_dataset: Any, run_benchmark: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "image": datasets.Image(),
            "Question": datasets.List(datasets.Value("string")),
            "Answer": datasets.List(datasets.Value("string")),
            "Question Type": datasets.Value("string"),
            "Year": datasets.List(datasets.Value("string")),
            "Paragraph": datasets.Value("string"),
        }
    )
    rows = [
        {"image": solid_image(), "Question": q, "Answer": a, "Question Type": t, "Year": y, "Paragraph": p}
        for t, q, a, y, p, _, _ in ROWS
    ]
    hub_dataset("ahmed-masry/ChartQAPro", "test", rows, features)

    def answer(task: str, doc: dict[str, Any]) -> str:
        return next(r[5] for r in ROWS if r[1] == list(doc["Question"]))

    model = ScriptedModel(answer, chat=False)
    scores = run_benchmark("chartqapro", answer, model=model)["results"]["chartqapro"]
    assert scores["relaxed_overall,none"] == pytest.approx(sum(r[6] for r in ROWS) / len(ROWS))
    assert scores["relaxed_factoid,none"] == pytest.approx((1.0 + 5 / 6 + 0.0) / 3)
    assert scores["relaxed_multi_choice,none"] == 0.0
    assert scores["relaxed_conversational,none"] == 1.0
    hypothetical, _ = model.seen["chartqapro"][4]
    assert (
        hypothetical
        == "Context: Sales were 42.\n\nIf sales doubled?\nAnswer the question with a short phrase."
    )
    conversation, _ = model.seen["chartqapro"][5]
    assert (
        conversation
        == "Q1: What is the max?\nA1: 42\nQ2: And the min?\nAnswer the question with a short phrase."
    )
