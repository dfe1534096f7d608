"""vqav2_val: prompts and the VQA soft accuracy over answer dicts."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer the question using a single word or phrase."


def _features() -> Any:
    import datasets

    answer = {
        "answer": datasets.Value("string"),
        "answer_confidence": datasets.Value("string"),
        "answer_id": datasets.Value("int64"),
    }
    return datasets.Features(
        {
            "question_type": datasets.Value("string"),
            "multiple_choice_answer": datasets.Value("string"),
            "answers": datasets.List(answer),
            "image_id": datasets.Value("int64"),
            "answer_type": datasets.Value("string"),
            "question_id": datasets.Value("int64"),
            "question": datasets.Value("string"),
            "image": datasets.Image(),
        }
    )


# question, ten answers, scripted output, expected soft accuracy
ROWS = [
    # 1 of 10 says "2" (the digit rule maps "Two" too): (0 + 9/3) / 10 = 0.3
    ("How many dogs?", ["2"] + ["3"] * 9, "Two", 0.3),
    # 2 say "man's": (2 * 1/3 + 8 * 2/3) / 10 = 0.6 (possessives match as written)
    ("Whose hat is it?", ["man's", "man's"] + ["woman's"] * 8, "Man's", 0.6),
    # 3 say "tennis": (3 * 2/3 + 7) / 10 = 0.9; the article is dropped
    ("What sport?", ["tennis"] * 3 + ["badminton"] * 7, "the tennis", 0.9),
    # all 10 agree: 1.0
    ("Is it sunny?", ["yes"] * 10, "Yes", 1.0),
    # nobody said it: 0
    ("What color?", ["red"] * 10, "blue", 0.0),
]


@pytest.fixture
def vqav2_data(hub_dataset: Any) -> None:
    rows = []
    for i, (question, answers, _, _) in enumerate(ROWS):
        rows.append(
            {
                "question_type": "what",
                "multiple_choice_answer": answers[-1],
                "answers": [
                    {"answer": a, "answer_confidence": "yes", "answer_id": k + 1}
                    for k, a in enumerate(answers)
                ],
                "image_id": 9000 + i,
                "answer_type": "other",
                "question_id": 500 + i,
                "question": question,
                "image": solid_image((0, i * 40, 0)),
            }
        )
    hub_dataset("lmms-lab-encoder/VQAv2", "validation", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for q, _, out, _ in ROWS if q == doc["question"])


def test_soft_accuracy_result_key_and_generation(vqav2_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("vqav2_val", _answer)
    scores = results["results"]["vqav2_val"]
    # (0.3 + 0.6 + 0.9 + 1.0 + 0.0) / 5 = 2.8 / 5 = 0.56
    assert scores["exact_match,none"] == pytest.approx(0.56)
    assert results["configs"]["vqav2_val"]["generation_kwargs"]["max_new_tokens"] == 16
    again = run_benchmark("vqav2_val", _answer)["results"]["vqav2_val"]
    assert again["exact_match,none"] == scores["exact_match,none"]


def test_limit_scores_only_evaluated_docs(vqav2_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("vqav2_val", _answer, limit=2)["results"]["vqav2_val"]
    assert scores["exact_match,none"] == pytest.approx(0.45)  # (0.3 + 0.6) / 2


def test_chat_and_simple_prompts(vqav2_data: None, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("vqav2_val", _answer, model=chat, limit=1)
    [message] = chat.seen["vqav2_val"][0]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (0, 0, 0)
    assert text == {"type": "text", "text": "How many dogs?" + POST}

    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("vqav2_val", _answer, model=simple, limit=2)
    prompt, visuals = simple.seen["vqav2_val"][1]
    assert prompt == "Whose hat is it?" + POST
    assert len(visuals) == 1 and visuals[0].getpixel((0, 0)) == (0, 40, 0)
