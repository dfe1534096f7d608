"""MMMU: interleaved prompts, MC / open scoring, per-discipline keys, the test submission file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

MC = "\n\nAnswer with the option's letter from the given choices directly."
OPEN = "\n\nAnswer the question using a single word or phrase."
RED, GREEN, BLUE = (200, 0, 0), (0, 200, 0), (0, 0, 200)


def _features() -> Any:
    import datasets

    fields: dict[str, Any] = {
        "id": datasets.Value("string"),
        "question": datasets.Value("string"),
        "options": datasets.Value("string"),
        "explanation": datasets.Value("string"),
    }
    fields.update({f"image_{k}": datasets.Image() for k in range(1, 8)})
    fields.update(
        {
            "img_type": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "topic_difficulty": datasets.Value("string"),
            "question_type": datasets.Value("string"),
            "subfield": datasets.Value("string"),
        }
    )
    return datasets.Features(fields)


def _row(doc_id: str, question: str, options: str, answer: str, kind: str, **images: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": doc_id,
        "question": question,
        "options": options,
        "explanation": "",
        "img_type": "['Photographs']",
        "answer": answer,
        "topic_difficulty": "Medium",
        "question_type": kind,
        "subfield": "",
    }
    row.update({f"image_{k}": images.get(f"image_{k}") for k in range(1, 8)})
    return row


VAL = [
    # (row, scripted answer, correct?)
    (
        _row(
            "validation_Art_Theory_1",
            "Which painter made <image 1>?",
            "['Monet', 'Manet', 'Degas', 'Renoir']",
            "B",
            "multiple-choice",
            image_1=solid_image(RED),
        ),
        "B",
        True,
    ),
    (
        _row(
            "validation_Physics_2",
            "<image 1> and <image 2>: what is the speed?",
            "[]",
            "5 m",
            "open",
            image_1=solid_image(RED),
            image_2=solid_image(GREEN),
            image_3=solid_image(BLUE),
        ),
        "The speed is 5 m/s",  # key "5 m/s" contains the gold "5 m"
        True,
    ),
    (
        _row(
            "validation_Math_3", "Solve <image 1>.", "[]", "['3', '3.0']", "open", image_1=solid_image(BLUE)
        ),
        "x = 3",  # list-literal gold; key "3" -> 3.0
        True,
    ),
    (
        _row(
            "validation_Accounting_4",
            "What is the cost? <image 1>",
            "['$10', '$20', '$30', '$40']",
            "C",
            "multiple-choice",
            image_1=solid_image(GREEN),
        ),
        "I cannot determine this",  # nothing parses: wrong, no random letter
        False,
    ),
    (
        _row(
            "validation_Clinical_Medicine_5",
            "Which organ is shown in <image 1>?",
            "['heart', 'lung', 'liver', 'kidney']",
            "A",
            "multiple-choice",
            image_1=solid_image(RED),
        ),
        "(B)",
        False,
    ),
    (
        _row(
            "validation_History_6",
            "When was the battle in <image 1>?",
            "[]",
            "1815",
            "open",
            image_1=solid_image(GREEN),
        ),
        "It happened in 1,815",  # number with a thousands comma -> 1815.0
        True,
    ),
    (
        _row(
            "validation_Computer_Science_7",
            "Which diagram is a tree?",
            "['<image 1>', '<image 2>', 'neither', 'both']",
            "A",
            "multiple-choice",
            image_1=solid_image(BLUE),
            image_2=solid_image(RED),
        ),
        "A",
        True,
    ),
]

TEST = [
    (
        _row(
            "test_Art_1",
            "Pick one <image 1>.",
            "['x', 'y', 'z']",
            "",
            "multiple-choice",
            image_1=solid_image(RED),
        ),
        "The answer is (C)",
    ),
    (
        _row(
            "test_Music_2",
            "Pick one <image 1>.",
            "['x', 'y']",
            "",
            "multiple-choice",
            image_1=solid_image(RED),
        ),
        "no idea",
    ),
    (
        _row("test_Physics_3", "How heavy is <image 1>?", "[]", "", "open", image_1=solid_image(RED)),
        "  42 kg ",
    ),
]


@pytest.fixture
def mmmu_data(hub_dataset: Any) -> None:
    hub_dataset("lmms-lab-encoder/MMMU", "validation", [row for row, _, _ in VAL], _features())
    hub_dataset("lmms-lab-encoder/MMMU", "test", [row for row, _ in TEST], _features())


ANSWERS = {row["id"]: out for row, out, _ in VAL} | {row["id"]: out for row, out in TEST}


def _answer(task: str, doc: dict[str, Any]) -> str:
    return ANSWERS[doc["id"]]


def test_val_scores_and_discipline_keys(mmmu_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("mmmu_val", _answer)
    scores = results["results"]["mmmu_val"]
    # strict: docs 1, 2, 3, 6, 7 of 7 correct: 5/7 = 0.714285..., rounded to 5 decimals
    # published: doc 3's list-literal gold is one string (wrong); doc 4 parses nothing and draws the
    # run's first letter, random.Random(0).choice("ABCD") = "D" (gold C: wrong): 4/7 = 0.571428...
    assert scores["mmmu_acc,none"] == 0.57143
    assert scores["mmmu_acc_strict,none"] == 0.71429
    assert scores["mmmu_acc_art_and_design,none"] == 1.0  # doc 1
    assert scores["mmmu_acc_science,none"] == 0.5  # docs 2 (Physics, right), 3 (Math, published: wrong)
    assert scores["mmmu_acc_business,none"] == 0.0  # doc 4 (Accounting), unparsed
    assert scores["mmmu_acc_health_and_medicine,none"] == 0.0  # doc 5, wrong letter
    assert scores["mmmu_acc_humanities_and_social_science,none"] == 1.0  # doc 6
    assert scores["mmmu_acc_tech_and_engineering,none"] == 1.0  # doc 7
    assert "parsed_pred,none" not in scores  # logged with samples only
    assert "mmmu_acc_pass_at_k,none" not in scores and "submission,none" not in scores


def test_samples_carry_the_published_keys(mmmu_data: None, run_benchmark: Any, tmp_path: Path) -> None:
    run_benchmark("mmmu_val", _answer, output_path=str(tmp_path), log_samples=True)
    [path] = tmp_path.rglob("*_samples_mmmu_val.jsonl")
    samples = [json.loads(line) for line in path.read_text().splitlines()]
    by_id = {s["doc"]["id"]: s for s in samples}
    math = by_id["validation_Math_3"]  # open, list-literal gold, answered "x = 3"
    assert math["mmmu_acc_pass_at_k"] == 0.0 == math["mmmu_acc"]  # published: the literal is one string
    assert math["mmmu_acc_strict"] == 1.0  # strict: "3" is one of the alternatives
    assert math["submission"] == {"validation_Math_3": "x = 3"}  # open: the stripped response
    assert by_id["validation_Art_Theory_1"]["submission"] == {"validation_Art_Theory_1": "B"}


def test_runs_are_deterministic(mmmu_data: None, run_benchmark: Any) -> None:
    first = run_benchmark("mmmu_val", _answer)["results"]["mmmu_val"]
    second = run_benchmark("mmmu_val", _answer)["results"]["mmmu_val"]
    assert first == second


def test_chat_prompt_places_images_at_their_tags(mmmu_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    run_benchmark("mmmu_val", _answer, model=model, limit=2)
    [message] = model.seen["mmmu_val"][1]
    parts = message["content"]
    # image_3 is not mentioned, so it is not shown
    assert [p["type"] for p in parts] == ["image", "text", "image", "text"]
    assert parts[0]["url"].getpixel((0, 0)) == RED and parts[2]["url"].getpixel((0, 0)) == GREEN
    assert parts[1]["text"] == " and "
    assert parts[3]["text"] == ": what is the speed?" + OPEN


def test_simple_prompt_keeps_tags_and_lists_options(mmmu_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    run_benchmark("mmmu_val", _answer, model=model)
    text, visuals = model.seen["mmmu_val"][0]
    assert text == "Which painter made <image 1>?\nA. Monet\nB. Manet\nC. Degas\nD. Renoir" + MC
    assert [v.getpixel((0, 0)) for v in visuals] == [RED]
    # images mentioned only in the options, in order of mention
    text, visuals = model.seen["mmmu_val"][6]
    assert text == "Which diagram is a tree?\nA. <image 1>\nB. <image 2>\nC. neither\nD. both" + MC
    assert [v.getpixel((0, 0)) for v in visuals] == [BLUE, RED]


def test_group_writes_the_test_submission(mmmu_data: None, run_benchmark: Any, tmp_path: Path) -> None:
    results = run_benchmark("mmmu", _answer, output_path=str(tmp_path))
    assert results["results"]["mmmu_val"]["mmmu_acc,none"] == 0.57143  # 4/7, 5 decimals (published rule)
    assert results["results"]["mmmu_test"]["submission,none"] is None  # no score: answers hidden
    [path] = results["output_files"]["submissions"]["mmmu_test"]
    assert Path(path).name == "mmmu_test_for_submission.json"
    # MC: the parsed letter, "" when nothing parses; open: the stripped response
    assert json.loads(Path(path).read_text()) == {
        "test_Art_1": "C",
        "test_Music_2": "",
        "test_Physics_3": "42 kg",
    }
