"""mia_bench: the MIA-Bench grader prompt, per-component reading of the grade, mean total."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import solid_image

from lmms_eval.scoring import mia_bench

# instruction, components, weights, model answer, the judge's reply, total worked by hand
ROWS = [
    (
        "Describe it in two sentences.",
        ["two sentences"],
        [10],
        "It is red. It is round.",
        "score of component 1: 10/10, total score: 10/10",
        1.0,
    ),
    (
        "Name the colour, in French.",
        ["colour", "French"],
        [5, 5],
        "Rouge.",
        "Score of component 1: 4/5\nScore of component 2: 5/5\nTotal score: 9/10",
        0.9,
    ),
    (
        "List three objects.",
        ["three", "objects"],
        [2, 8],
        "A ball.",
        "score of component 1: 0/2, score of component 2: 4/8",
        0.25,
    ),
    ("Write a haiku.", ["haiku"], [10], "Roses.", "I cannot grade this.", 0.0),
]


def test_prompt_wording_for_one_to_five_components() -> None:
    one = mia_bench.judge_prompt("Do it.", ["C1"], [10], "resp")
    assert one.startswith("Here is an instruction for a multimodal LLM: ' Do it. You need to grade")
    assert "The first component is:' C1' The response is:' resp'" in one
    assert "The first component is worth 10 scores." in one
    three = mia_bench.judge_prompt("Do it.", ["a", "b", "c"], [5, 3, 2], "r")
    assert (
        "The first component is:' a', and the second component is:' b', and the third component is:' c'"
        in three
    )
    assert "The first second, and third component is each worth 5, 3 and 2 scores." in three
    five = mia_bench.judge_prompt("Do it.", list("abcde"), [1, 2, 3, 2, 2], "r")
    assert (
        "The first second, third, fourth and fifth component is each worth 1, 2, 3, 2 and 2 scores." in five
    )
    with pytest.raises(ValueError, match="1 to 5 components"):
        mia_bench.judge_prompt("Do it.", list("abcdef"), [1] * 6, "r")


def test_parse_scores() -> None:
    assert mia_bench.parse_scores("score of component 1: 3 / 4, total score:8/10", ["a"]) == {
        "a": 0.75,
        "total_score": 0.8,
    }
    assert mia_bench.parse_scores("total score: 12/10", ["a"])["total_score"] == 1.0  # capped
    assert mia_bench.parse_scores("total score: 9.5/10", ["a"])["total_score"] == 0.0  # integers only
    # no total: the plain mean of the graded components (weights ignored), here 1 and 0.5
    graded = mia_bench.parse_scores("score of component 1: 2/2, score of component 3: 4/8", ["a", "b", "c"])
    assert graded == {"a": 1.0, "b": 0.0, "c": 0.5, "total_score": 0.75}
    assert mia_bench.parse_scores("no grade", ["a", "b"])["total_score"] == 0.0


def test_mean_total_through_the_judge(
    hub_dataset: Any, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    from lmms_eval import llm_judge
    from lmms_eval.llm_judge import DummyJudge, Request
    from lmms_eval.llm_judge.base import ProviderReply

    features = datasets.Features(
        {
            "image": datasets.Image(),
            "instruction": datasets.Value("string"),
            "num_of_component": datasets.Value("int64"),
            "components": datasets.List(datasets.Value("string")),
            "component_weight": datasets.List(datasets.Value("int64")),
        }
    )
    rows = [
        {
            "image": solid_image(),
            "instruction": i,
            "num_of_component": len(c),
            "components": c,
            "component_weight": w,
        }
        for i, c, w, _, _, _ in ROWS
    ]
    hub_dataset("lmms-lab-encoder/MIA-Bench", "test", rows, features)

    class Judge(DummyJudge):
        def _invoke(self, request: Request) -> ProviderReply:
            text = request.prompt_text()
            reply = next(r[4] for r in ROWS if f"The response is:' {r[3]}'" in text)
            return ProviderReply(text=reply, latency_s=0.0, attempts=1)

    monkeypatch.setenv("API_TYPE", "dummy")
    monkeypatch.setattr(llm_judge, "get_server", lambda *a, **k: Judge())
    answers = {r[0]: r[3] for r in ROWS}
    scores = run_benchmark("mia_bench", lambda t, d: answers[d["instruction"]])["results"]["mia_bench"]
    # the third reply has no total: the mean of 0/2 and 4/8 = 0.25
    assert scores["gpt_eval_score,none"] == pytest.approx(sum(r[5] for r in ROWS) / len(ROWS))
