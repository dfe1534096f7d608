"""MMBench: prompts (hint, option E), CircularEval, the judge variant, the test submission table."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST_EN = "\nAnswer with the option's letter from the given choices directly."
POST_CN = "\n请直接使用所提供的选项字母作为答案回答。"
INTRO = "There are several options:"  # the published wording, in English for the cn config too
COLUMNS = ["index", "question", "hint", "A", "B", "C", "D", "E", "answer", "prediction"]
COLUMNS += ["category", "L2-category", "source", "split"]


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    return datasets.Features(
        {
            "index": datasets.Value("int64"),
            "question": text,
            "hint": text,
            "answer": text,
            "A": text,
            "B": text,
            "C": text,
            "D": text,
            "E": text,
            "category": text,
            "L2-category": text,
            "image": datasets.Image(),
            "source": text,
            "comment": text,
            "split": text,
        }
    )


def _row(
    index: int,
    question: str,
    options: list[str],
    answer: str,
    category: str,
    l2: str,
    hint: str | None = "nan",
    split: str = "dev",
) -> dict[str, Any]:
    row: dict[str, Any] = {"index": index, "question": question, "hint": hint, "answer": answer}
    row.update({letter: options[i] if i < len(options) else "nan" for i, letter in enumerate("ABCDE")})
    row.update({"category": category, "L2-category": l2, "image": solid_image((index % 250, 0, 0))})
    row.update({"source": "synthetic", "comment": "nan", "split": split})
    return row


COARSE, SINGLE, ATTRIBUTE = (
    "Coarse Perception",
    "Fine-grained Perception (single-instance)",
    "Attribute Reasoning",
)
WEATHER = ["sunny", "rainy", "snowy", "foggy"]
DEV = [
    # question 1: three circular variants (options rotated), all answered correctly
    (_row(1, "What is the weather?", WEATHER, "A", "image_scene", COARSE, hint="Look at the sky."), "A"),
    (_row(1_000_001, "What is the weather?", WEATHER[1:] + WEATHER[:1], "D", "image_scene", COARSE), "(D)"),
    (_row(2_000_001, "What is the weather?", WEATHER[2:] + WEATHER[:2], "C", "image_scene", COARSE), "sunny"),
    # question 2: one variant (listed first) is wrong, so the question is wrong
    (
        _row(1_000_002, "What does the sign say?", ["go", "exit", "wait", "stop"], "D", "ocr", SINGLE),
        "no idea",
    ),
    (_row(2, "What does the sign say?", ["stop", "go", "exit", "wait"], "A", "ocr", SINGLE), "A."),
    # question 3: five options, hint "nan", answer E
    (_row(3, "Which letter?", ["p", "q", "r", "s", "t"], "E", "ocr", ATTRIBUTE), "The answer is E"),
    # question 4: two letters and two option texts -> unresolved by the rules
    (
        _row(4, "Which colour?", ["red", "blue", "green", "yellow"], "C", "image_emotion", COARSE, hint=None),
        "Either B blue or C green",
    ),
]
CN = [
    (_row(7, "天气如何?", ["晴", "雨", "雪", "雾"], "A", "image_scene", COARSE), "A"),
    (_row(1_000_007, "天气如何?", ["雨", "雪", "雾", "晴"], "D", "image_scene", COARSE), "B"),
    (_row(8, "这是什么?", ["猫", "狗", "鸟", "鱼"], "B", "ocr", SINGLE), "狗"),
]
TEST = [
    (
        _row(11, "Pick one.", ["a1", "b1", "c1", "d1"], "nan", "ocr", SINGLE, hint="A hint.", split="test"),
        " B ",
    ),
    (_row(12, "Pick again.", ["a2", "b2", "c2", "d2", "e2"], "nan", "ocr", COARSE, split="test"), "E"),
]
ANSWERS = {row["question"] + str(row["index"]): out for row, out in DEV + CN + TEST}


def _answer(task: str, doc: dict[str, Any]) -> str:
    return ANSWERS[doc["question"] + str(doc["index"])]


@pytest.fixture
def mmbench_data(hub_dataset: Any) -> None:
    hub_dataset("lmms-lab-encoder/MMBench", "dev", [row for row, _ in DEV], _features(), config="en")
    hub_dataset("lmms-lab-encoder/MMBench", "test", [row for row, _ in TEST], _features(), config="en")
    hub_dataset("lmms-lab-encoder/MMBench", "dev", [row for row, _ in CN], _features(), config="cn")


def test_circular_scores_and_breakdowns(mmbench_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("mmbench_en_dev", _answer)["results"]["mmbench_en_dev"]
    # questions 1 (all variants right) and 3 right; 2 (one variant wrong) and 4 (unresolved) wrong
    assert scores["gpt_eval_score,none"] == 50.0
    assert scores["mmbench_category_image_scene,none"] == 100.0  # question 1
    assert scores["mmbench_category_ocr,none"] == 50.0  # questions 2 (wrong), 3 (right)
    assert scores["mmbench_category_image_emotion,none"] == 0.0  # question 4
    assert scores["mmbench_l2_coarse_perception,none"] == 50.0  # questions 1 (right), 4 (wrong)
    assert scores["mmbench_l2_fine_grained_perception_single_instance,none"] == 0.0  # question 2
    assert scores["mmbench_l2_attribute_reasoning,none"] == 100.0  # question 3
    assert scores["samples"] == 7


def test_deterministic_and_bootstrap_tolerates_small_categories(
    mmbench_data: None, run_benchmark: Any
) -> None:
    first = run_benchmark("mmbench_en_dev", _answer, bootstrap_iters=50)["results"]["mmbench_en_dev"]
    second = run_benchmark("mmbench_en_dev", _answer, bootstrap_iters=50)["results"]["mmbench_en_dev"]
    assert first == second
    assert isinstance(first["gpt_eval_score_stderr,none"], float)


def test_chat_prompt_with_hint(mmbench_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    run_benchmark("mmbench_en_dev", _answer, model=model, limit=1)
    [message] = model.seen["mmbench_en_dev"][0]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (1, 0, 0)
    # published layout: "{hint} {question} There are several options:\n" + options + "\n" + post
    options = "A. sunny\nB. rainy\nC. snowy\nD. foggy"
    assert text["text"] == f"Look at the sky. What is the weather? {INTRO}\n{options}\n" + POST_EN


def test_simple_prompt_without_hint_and_with_option_e(mmbench_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    run_benchmark("mmbench_en_dev", _answer, model=model)
    text, visuals = model.seen["mmbench_en_dev"][5]  # hint "nan", five options
    assert text == f"Which letter? {INTRO}\nA. p\nB. q\nC. r\nD. s\nE. t\n" + POST_EN
    assert [v.getpixel((0, 0)) for v in visuals] == [(3, 0, 0)]
    text, _ = model.seen["mmbench_en_dev"][6]  # hint None, option E "nan"
    assert text == f"Which colour? {INTRO}\nA. red\nB. blue\nC. green\nD. yellow\n" + POST_EN


def test_cn_dev_and_group(mmbench_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    results = run_benchmark("mmbench", _answer, model=model)
    assert results["results"]["mmbench_en_dev"]["gpt_eval_score,none"] == 50.0
    # question 7: variant 1000007 answered B (wrong); question 8: the option text "狗" -> B (right)
    assert results["results"]["mmbench_cn_dev"]["gpt_eval_score,none"] == 50.0
    assert model.seen["mmbench_cn_dev"][2][0] == f"这是什么? {INTRO}\nA. 猫\nB. 狗\nC. 鸟\nD. 鱼\n" + POST_CN


def test_judge_variant_judges_only_unresolved_answers(
    mmbench_data: None, run_benchmark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TYPE", "dummy")
    results = run_benchmark("mmbench_en_dev_judge", _answer, output_path=str(tmp_path))
    # the dummy judge finds the correct option "c green" in "either b blue or c green" (question 4
    # becomes right) but not "d stop" in "no idea" (question 2 stays wrong): 3 of 4 questions
    assert results["results"]["mmbench_en_dev_judge"]["gpt_eval_score,none"] == 75.0
    [path] = tmp_path.rglob("*_samples_mmbench_en_dev_judge.jsonl")
    records = {s["doc_id"]: s["gpt_eval_score"] for s in map(json.loads, path.read_text().splitlines())}
    judged = {
        doc_id: (r["correct"], r["judge"]["reply"]) for doc_id, r in records.items() if r["via"] == "judge"
    }
    assert judged == {3: (False, "0"), 6: (True, "1")}
    assert {r["via"] for doc_id, r in records.items() if doc_id not in judged} == {"rule"}


def _read_xlsx(path: Path) -> list[list[Any]]:
    import openpyxl

    sheet = openpyxl.load_workbook(path).active
    assert sheet is not None
    return [["" if cell is None else cell for cell in row] for row in sheet.iter_rows(values_only=True)]


def _expected_rows() -> list[list[Any]]:
    return [
        COLUMNS,
        [11, "Pick one.", "A hint.", "a1", "b1", "c1", "d1", "", "", "B", "ocr", SINGLE, "synthetic", "test"],
        [12, "Pick again.", "", "a2", "b2", "c2", "d2", "e2", "", "E", "ocr", COARSE, "synthetic", "test"],
    ]


def test_test_split_writes_xlsx(mmbench_data: None, run_benchmark: Any, tmp_path: Path) -> None:
    results = run_benchmark("mmbench_en", _answer, output_path=str(tmp_path))
    assert results["results"]["mmbench_en_dev"]["gpt_eval_score,none"] == 50.0
    assert results["results"]["mmbench_en_test"]["submission,none"] is None
    [path] = results["output_files"]["submissions"]["mmbench_en_test"]
    assert Path(path).name == "mmbench_en_test_submission.xlsx"
    assert _read_xlsx(Path(path)) == _expected_rows()


def test_test_split_writes_tsv_without_openpyxl(
    mmbench_data: None, run_benchmark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # import openpyxl -> ImportError
    results = run_benchmark("mmbench_en_test", _answer, output_path=str(tmp_path))
    [path] = results["output_files"]["submissions"]["mmbench_en_test"]
    assert Path(path).name == "mmbench_en_test_submission.tsv"
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    assert rows == [[str(cell) for cell in row] for row in _expected_rows()]
