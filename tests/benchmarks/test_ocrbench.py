"""ocrbench: prompts, substring matching (HME100k without spaces), per-type keys, --limit."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "dataset": datasets.Value("string"),
            "question": datasets.Value("string"),
            "question_type": datasets.Value("string"),
            "answer": datasets.List(datasets.Value("string")),
            "image": datasets.Image(),
        }
    )


# source dataset, question, question type, answers, scripted output, correct?
ROWS = [
    (
        "IIIT5K",
        "what is written in the image?",
        "Regular Text Recognition",
        ["COFFEE"],
        "It says coffee.",
        True,
    ),
    ("IC13", "what is written in the image?", "Regular Text Recognition", ["shop"], "sh op", False),
    ("WordArt", "what is the word?", "Artistic Text Recognition", ["Ｍｏｏｎ"], "MOON", True),
    (
        "HME100k",
        "Write the expression in LaTeX.",
        "Handwritten Mathematical Expression Recognition",
        ["x ^ { 2 }"],
        "x^{2}",
        True,
    ),
    (
        "docVQA",
        "What is the total?",
        "Doc-oriented VQA",
        ["$12", "12 dollars"],
        "the total is\n12 dollars",
        True,
    ),
    ("FUNSD", "What is the name?", "Key Information Extraction", ["john smith"], "smith", False),
]


@pytest.fixture
def ocrbench_data(hub_dataset: Any) -> None:
    rows = [
        {"dataset": d, "question": q, "question_type": t, "answer": a, "image": solid_image((i * 40, 20, 20))}
        for i, (d, q, t, a, _, _) in enumerate(ROWS)
    ]
    hub_dataset("echo840/OCRBench", "test", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for d, q, *_, out, _ in ROWS if d == doc["dataset"] and q == doc["question"])


def test_accuracy_and_per_type_keys(ocrbench_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("ocrbench", _answer)["results"]["ocrbench"]
    # correct: rows 0, 2, 3, 4 -> 4 of the 6 evaluated documents
    assert scores["ocrbench_accuracy,none"] == pytest.approx(4 / 6)
    assert scores["ocrbench_regular_text_recognition,none"] == pytest.approx(0.5)  # rows 0, 1
    assert scores["ocrbench_artistic_text_recognition,none"] == 1.0
    assert scores["ocrbench_text_recognition,none"] == pytest.approx(2 / 3)  # rows 0, 1, 2
    assert scores["ocrbench_handwritten_mathematical_expression_recognition,none"] == 1.0
    assert scores["ocrbench_doc_oriented_vqa,none"] == 1.0
    assert scores["ocrbench_key_information_extraction,none"] == 0.0
    assert "ocrbench_scene_text_centric_vqa,none" not in scores  # no such documents


def test_limit_divides_by_evaluated_docs_and_runs_repeat(ocrbench_data: None, run_benchmark: Any) -> None:
    first = run_benchmark("ocrbench", _answer, limit=3)["results"]["ocrbench"]
    # rows 0-2: 2 correct of 3 evaluated (the published code divided by a fixed 1000 -> 0.002)
    assert first["ocrbench_accuracy,none"] == pytest.approx(2 / 3)
    second = run_benchmark("ocrbench", _answer, limit=3)["results"]["ocrbench"]
    assert second["ocrbench_accuracy,none"] == first["ocrbench_accuracy,none"]  # no global counter


def test_chat_and_simple_prompts(ocrbench_data: None, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("ocrbench", _answer, model=chat, limit=1)
    [message] = chat.seen["ocrbench"][0]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (0, 20, 20)
    assert text == {"type": "text", "text": "what is written in the image?"}

    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("ocrbench", _answer, model=simple, limit=4)
    prompt, visuals = simple.seen["ocrbench"][3]
    assert prompt == "Write the expression in LaTeX."
    assert len(visuals) == 1 and visuals[0].getpixel((0, 0)) == (120, 20, 20)
