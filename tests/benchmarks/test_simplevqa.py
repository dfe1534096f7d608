"""simplevqa: short-phrase prompt and exact match after normalisation; base64 images."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

# question, gold, scripted answer, correct?
ROWS = [
    ("  Which city is this?  ", "Paris", "Paris.", 1.0),
    ("Which museum?", "The Louvre", "louvre", 1.0),
    ("How many towers?", "3", "three", 1.0),
    ("Which country?", "France", "It is France.", 0.0),
]


def _b64(colour: tuple[int, int, int]) -> str:
    buffer = io.BytesIO()
    solid_image(colour).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_exact_match_prompt_and_base64_image(hub_dataset: Any, run_benchmark: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "image": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
        }
    )
    rows = [
        {"image": _b64((10 * i, 0, 0)), "question": q, "answer": a} for i, (q, a, _, _) in enumerate(ROWS)
    ]
    hub_dataset("m-a-p/SimpleVQA", "test", rows, features)

    def answer(task: str, doc: dict[str, Any]) -> str:
        return next(r[2] for r in ROWS if r[0] == doc["question"])

    model = ScriptedModel(answer, chat=False)
    scores = run_benchmark("simplevqa", answer, model=model)["results"]["simplevqa"]
    assert scores["exact_match,none"] == pytest.approx(sum(r[3] for r in ROWS) / len(ROWS))
    prompt, [image] = model.seen["simplevqa"][0]
    assert prompt == "Which city is this?\nAnswer the question using a short phrase."
    assert image.getpixel((0, 0)) == (0, 0, 0)
