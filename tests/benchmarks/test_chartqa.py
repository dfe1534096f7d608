"""chartqa: prompts and relaxed accuracy, overall and per split (human / augmented)."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer the question with a single word."


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "type": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "image": datasets.Image(),
        }
    )


# type, question, answer, scripted output, correct?
ROWS = [
    ("human_test", "What is the peak value?", "100", "105", True),  # 5/100 = 0.05: on the boundary
    ("human_test", "What is the lowest value?", "100", "105.5", False),  # 0.055
    ("human_test", "Which share is largest?", "50%", "0.51", True),  # 0.01/0.5 = 0.02
    ("augmented_test", "What is the change?", "0", "0.0", False),  # zero target: text match only
    ("augmented_test", "Which bar is blue?", "Asia", "asia", True),  # text: case ignored
]


@pytest.fixture
def chartqa_data(hub_dataset: Any) -> None:
    rows = [
        {"type": t, "question": q, "answer": a, "image": solid_image((i * 40, 0, 40))}
        for i, (t, q, a, _, _) in enumerate(ROWS)
    ]
    hub_dataset("lmms-lab-encoder/ChartQA", "test", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for _, q, _, out, _ in ROWS if q == doc["question"])


def test_relaxed_accuracy_per_split(chartqa_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("chartqa", _answer)["results"]["chartqa"]
    assert scores["relaxed_overall,none"] == pytest.approx(3 / 5)  # rows 0, 2, 4
    assert scores["relaxed_human_split,none"] == pytest.approx(2 / 3)  # rows 0, 2 of 0-2
    assert scores["relaxed_augmented_split,none"] == pytest.approx(1 / 2)  # row 4 of 3-4


def test_limit_leaves_out_a_split_without_docs(chartqa_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("chartqa", _answer, limit=2)["results"]["chartqa"]
    assert scores["relaxed_overall,none"] == pytest.approx(0.5)
    assert "relaxed_augmented_split,none" not in scores


def test_chat_and_simple_prompts(chartqa_data: None, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("chartqa", _answer, model=chat, limit=1)
    [message] = chat.seen["chartqa"][0]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (0, 0, 40)
    assert text == {"type": "text", "text": "What is the peak value?" + POST}

    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("chartqa", _answer, model=simple, limit=2)
    prompt, visuals = simple.seen["chartqa"][1]
    assert prompt == "What is the lowest value?" + POST
    assert len(visuals) == 1 and visuals[0].getpixel((0, 0)) == (40, 0, 40)
