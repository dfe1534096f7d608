"""ai2d: prompts, the flexible-extract filter and exact_match, on a synthetic Hub-schema copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer with the option's letter from the given choices directly."


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "question": datasets.Value("string"),
            "options": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.Value("string"),
            "image": datasets.Image(),
        }
    )


ROWS = [
    # question, options, answer index, scripted output, correct?
    ("Which stage is the egg?", ["larva", "egg", "pupa", "adult"], "1", "B. egg", True),
    ("What eats grass?", ["cow", "lion", "hawk", "snake"], "0", "a", True),  # raw text, case ignored
    ("Which is the sun?", ["X", "Y", "Z", "W"], "2", "(C)", True),  # raw text, punctuation ignored
    ("Which label is the root?", ["P", "Q", "R", "S"], "3", "D) S", False),  # "D S" != "D"
    ("What comes after pupa?", ["adult", "egg", "larva", "seed"], "0", "B. egg", False),
    ("Which one is a consumer?", ["grass", "tree", "rabbit", "sun"], "2", "The answer is C", False),
]


@pytest.fixture
def ai2d_data(hub_dataset: Any) -> None:
    rows = [
        {"question": q, "options": o, "answer": a, "image": solid_image((i * 40, 0, 0))}
        for i, (q, o, a, _, _) in enumerate(ROWS)
    ]
    hub_dataset("lmms-lab-encoder/ai2d", "test", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for q, _, _, out, _ in ROWS if q == doc["question"])


def test_scores_and_result_key(ai2d_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("ai2d", _answer)
    scores = results["results"]["ai2d"]
    # correct: rows 0, 1, 2 -> 3 / 6 = 0.5
    assert scores["exact_match,flexible-extract"] == pytest.approx(0.5)
    assert not any(key.endswith(",none") for key in scores)
    assert results["n-samples"]["ai2d"]["effective"] == 6


def test_chat_prompt(ai2d_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    run_benchmark("ai2d", _answer, model=model, limit=1)
    [message] = model.seen["ai2d"][0]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (0, 0, 0)
    assert text == {
        "type": "text",
        "text": "Which stage is the egg?\nA. larva\nB. egg\nC. pupa\nD. adult" + POST,
    }


def test_simple_prompt_target_and_filtered_answer(
    ai2d_data: None, run_benchmark: Any, tmp_path: Path
) -> None:
    model = ScriptedModel(_answer, chat=False)
    run_benchmark("ai2d", _answer, model=model, limit=3, output_path=str(tmp_path))
    text, visuals = model.seen["ai2d"][1]
    assert text == "What eats grass?\nA. cow\nB. lion\nC. hawk\nD. snake" + POST
    assert len(visuals) == 1 and visuals[0].getpixel((0, 0)) == (40, 0, 0)
    [path] = tmp_path.rglob("*_samples_ai2d.jsonl")
    samples = [json.loads(line) for line in path.read_text().splitlines()]
    # the gold index becomes a letter; "B. egg" is cut to "B", other outputs stay as they are
    assert [(s["target"], s["filtered_resps"], s["filter"]) for s in samples] == [
        ("B", ["B"], "flexible-extract"),
        ("A", ["a"], "flexible-extract"),
        ("C", ["(C)"], "flexible-extract"),
    ]
