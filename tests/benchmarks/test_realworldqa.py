"""realworldqa: letter golds through the published reader (``exact_match``) and extract_mcq_answer
(``exact_match_strict``), open golds by whole-output match."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

LETTER_Q = (
    "Which way is the car turning?\nA. left\nB. right\nC. straight\n"
    "Please answer directly with only the letter of the correct option and nothing else."
)


def _features() -> Any:
    import datasets

    return datasets.Features(
        {"image": datasets.Image(), "question": datasets.Value("string"), "answer": datasets.Value("string")}
    )


# (question, gold, output, right under the published rule?, right under ours?)
CASES = [
    (LETTER_Q, "B", "The answer is B.", True, True),  # letter gold: the letter read
    ("Which lane is free? A. left B. right", "A", "A cat blocks it", True, False),  # published: leading A
    ("Which sign is shown? A. stop B. yield C. none", "C", "(C)", True, True),
    ("How many cars are there? Answer with a number.", "3", "3.", True, True),  # open: trailing "." dropped
    ("Is the light green? Answer yes or no.", "Yes", "yes", True, True),  # open: case ignored
    ("How many people? Answer with a number.", "2", "There are 2", False, False),  # open: whole output only
    ("Which side? A. left B. right", "B", "b", False, True),  # published letters are case-sensitive
    ("Which light? A. red B. green C. amber", "B", "The answer is B, not C", False, True),  # published: C
]


@pytest.fixture
def rwqa_data(hub_dataset: Any) -> None:
    rows = [
        {"image": solid_image((0, 0, 40 * i)), "question": q, "answer": gold}
        for i, (q, gold, *_) in enumerate(CASES)
    ]
    hub_dataset("lmms-lab-encoder/RealWorldQA", "test", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for q, _, out, *_ in CASES if q == doc["question"])


def test_letter_and_open_answers(rwqa_data: None, run_benchmark: Any) -> None:
    first = run_benchmark("realworldqa", _answer)["results"]["realworldqa"]
    # published: rows 0-4 right -> 5 / 8; ours: rows 0, 2, 3, 4, 6, 7 -> 6 / 8
    assert first["exact_match,none"] == pytest.approx(5 / 8)
    assert first["exact_match_strict,none"] == pytest.approx(6 / 8)
    second = run_benchmark("realworldqa", _answer)["results"]["realworldqa"]
    assert second == first  # nothing random, nothing carried between runs


def test_prompt_is_the_question(rwqa_data: None, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("realworldqa", _answer, model=chat, limit=1)
    [message] = chat.seen["realworldqa"][0]
    assert message["content"][0]["url"].getpixel((0, 0)) == (0, 0, 0)
    assert message["content"][1] == {"type": "text", "text": LETTER_Q}
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("realworldqa", _answer, model=simple, limit=1)
    text, visuals = simple.seen["realworldqa"][0]
    assert text == LETTER_Q and len(visuals) == 1
