"""seedbench: image and video (frame list) questions, the first-character rule, per-type keys."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer with the option's letter from the given choices directly."


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "answer": datasets.Value("string"),
            "choice_a": datasets.Value("string"),
            "choice_b": datasets.Value("string"),
            "choice_c": datasets.Value("string"),
            "choice_d": datasets.Value("string"),
            "data_id": datasets.Value("string"),
            "data_type": datasets.Value("string"),
            "image": datasets.Sequence(datasets.Image()),
            "question": datasets.Value("string"),
            "question_id": datasets.Value("string"),
            "question_type_id": datasets.Value("int16"),
        }
    )


def _row(qid: str, data_type: str, answer: str, frames: int) -> dict[str, Any]:
    return {
        "answer": answer,
        "choice_a": "a cat",
        "choice_b": "a dog",
        "choice_c": "a bird",
        "choice_d": "a fish",
        "data_id": f"{qid}.jpg",
        "data_type": data_type,
        "image": [solid_image((10 * k, 0, 0)) for k in range(frames)],
        "question": f"What animal is shown in {qid}?",
        "question_id": qid,
        "question_type_id": 1 if data_type == "image" else 10,
    }


# question_id -> (data type, gold, output, correct?)
CASES = {
    "i1": ("image", "B", "B", True),
    "i2": ("image", "C", "c. a bird", True),  # first character, case ignored
    "i3": ("image", "A", "(A)", False),  # "(" is the first character
    "i4": ("image", "D", "The answer is D", False),
    "i5": ("image", "B", "Because it barks", True),  # the rule only sees "B"
    "v1": ("video", "A", "A", True),
    "v2": ("video", "D", "B", False),
}


@pytest.fixture
def seed_rows() -> list[dict[str, Any]]:
    return [_row(qid, kind, gold, 1 if kind == "image" else 3) for qid, (kind, gold, _, _) in CASES.items()]


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[doc["question_id"]][2]


def test_per_type_and_overall_accuracy(hub_dataset: Any, run_benchmark: Any, seed_rows: Any) -> None:
    hub_dataset("lmms-lab-encoder/SEED-Bench", "test", seed_rows, _features())
    scores = run_benchmark("seedbench", _answer)["results"]["seedbench"]
    # image: i1, i2, i5 right of 5 -> 0.6; video: v1 right of 2 -> 0.5; all: 4 / 7
    assert scores["seed_image,none"] == pytest.approx(0.6)
    assert scores["seed_video,none"] == pytest.approx(0.5)
    assert scores["seed_all,none"] == pytest.approx(4 / 7)


def test_image_only_copy_has_no_video_key(hub_dataset: Any, run_benchmark: Any, seed_rows: Any) -> None:
    hub_dataset("lmms-lab-encoder/SEED-Bench", "test", seed_rows[:2], _features())
    scores = run_benchmark("seedbench", _answer)["results"]["seedbench"]
    assert scores["seed_image,none"] == 1.0 and scores["seed_all,none"] == 1.0
    assert "seed_video,none" not in scores


def test_prompts_show_every_frame(hub_dataset: Any, run_benchmark: Any, seed_rows: Any) -> None:
    hub_dataset("lmms-lab-encoder/SEED-Bench", "test", seed_rows, _features())
    expected = "What animal is shown in v1?\nA. a cat\nB. a dog\nC. a bird\nD. a fish" + POST
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("seedbench", _answer, model=chat)
    [message] = chat.seen["seedbench"][5]
    *frames, text = message["content"]
    assert [f["url"].getpixel((0, 0)) for f in frames] == [(0, 0, 0), (10, 0, 0), (20, 0, 0)]
    assert text == {"type": "text", "text": expected}
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("seedbench", _answer, model=simple)
    text, visuals = simple.seen["seedbench"][5]
    assert text == expected and len(visuals) == 3
    text, visuals = simple.seen["seedbench"][0]
    assert text.startswith("What animal is shown in i1?\nA. a cat\n") and len(visuals) == 1
