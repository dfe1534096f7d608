"""vizwiz_vqa_val: capitalised question + unanswerable prompt, VQA soft accuracy over ten answers."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

# question, answers, scripted answer, soft accuracy worked by hand
ROWS = [
    ("what is THIS can?", ["soup"] * 2 + ["beans"] * 8, "Soup.", 0.6),  # 2 matches: (2*1/3 + 8*2/3) / 10
    ("what color?", ["unanswerable"] * 4 + ["red"] * 6, "Unanswerable", 1.0),
    ("how many?", ["two"] * 3 + ["three"] * 7, "2", 0.9),  # number words normalised: (3*2/3 + 7) / 10
    ("what is it?", ["yes"] * 10, "Yes, it is.", 0.0),
]


@pytest.fixture
def vizwiz_data(hub_dataset: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "image": datasets.Image(),
            "question": datasets.Value("string"),
            "answers": datasets.List(datasets.Value("string")),
        }
    )
    rows = [{"image": solid_image(), "question": q, "answers": a} for q, a, _, _ in ROWS]
    hub_dataset("lmms-lab-encoder/VizWiz-VQA", "val", rows, features)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(r[2] for r in ROWS if r[0] == doc["question"])


def test_soft_accuracy_and_prompt(vizwiz_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    scores = run_benchmark("vizwiz_vqa_val", _answer, model=model)["results"]["vizwiz_vqa_val"]
    assert scores["exact_match,none"] == pytest.approx(sum(r[3] for r in ROWS) / len(ROWS))
    prompt, _ = model.seen["vizwiz_vqa_val"][0]
    assert prompt == (
        "What is this can?\nWhen the provided information is insufficient, respond with 'Unanswerable'."
        "\nAnswer the question using a single word or phrase."
    )
