"""MathVista tasks end to end on a synthetic AI4Math/MathVista copy (hub schema, with images)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.llm_judge.providers.dummy import DummyJudge

REPO = "AI4Math/MathVista"
COLOURS = [(200, 0, 0), (0, 200, 0), (0, 0, 200), (200, 200, 0)]


def _features() -> Any:
    import datasets

    string = datasets.Value("string")
    return datasets.Features(
        {
            "pid": string,
            "question": string,
            "image": string,
            "decoded_image": datasets.Image(),
            "choices": datasets.Sequence(string),
            "unit": string,
            "precision": datasets.Value("float64"),
            "answer": string,
            "question_type": string,
            "answer_type": string,
            "metadata": {
                "category": string,
                "context": string,
                "grade": string,
                "img_height": datasets.Value("int64"),
                "img_width": datasets.Value("int64"),
                "language": string,
                "skills": datasets.Sequence(string),
                "source": string,
                "split": string,
                "task": string,
            },
            "query": string,
        }
    )


def _doc(pid: int, task: str, skills: list[str], **fields: Any) -> dict[str, Any]:
    metadata = {
        "category": "math-targeted-vqa",
        "context": "synthetic scene",
        "grade": "high school",
        "img_height": 16,
        "img_width": 16,
        "language": "english",
        "skills": skills,
        "source": "synthetic",
        "split": "testmini",
        "task": task,
    }
    row = {"pid": str(pid), "image": f"images/{pid}.jpg", "decoded_image": solid_image(COLOURS[pid - 1])}
    row.update({"choices": None, "unit": None, "precision": None, "metadata": metadata})
    row.update(fields)
    return row


ROWS = [
    _doc(
        1,
        "geometry problem solving",
        ["geometry reasoning", "algebraic reasoning"],
        question="Find the angle x.",
        choices=["135°", "145°", "155°"],
        answer="145°",
        question_type="multi_choice",
        answer_type="text",
        query="Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, at "
        "the end.\nQuestion: Find the angle x.\nChoices:\n(A) 135°\n(B) 145°\n(C) 155°",
    ),
    _doc(
        2,
        "math word problem",
        ["arithmetic reasoning"],
        question="How many apples are there?",
        answer="1000",
        question_type="free_form",
        answer_type="integer",
        query="Hint: Please answer the question requiring an integer answer and provide the final value, "
        "e.g., 1, 2, 3, at the end.\nQuestion: How many apples are there?",
    ),
    _doc(
        3,
        "figure question answering",
        ["statistical reasoning"],
        question="What is the average?",
        unit="cm",
        precision=2.0,
        answer="2.68",
        question_type="free_form",
        answer_type="float",
        query="Hint: Please answer the question requiring a floating-point number with two decimal places "
        "and provide the final value, e.g., 1.23, 1.34, 1.45, at the end.\nQuestion: What is the average? "
        "(Unit: cm)",
    ),
    _doc(
        4,
        "visual question answering",
        ["numeric commonsense"],
        question="Which planet is shown?",
        answer="Jupiter",
        question_type="free_form",
        answer_type="text",
        query="Hint: Please answer the question and provide the final answer at the end.\n"
        "Question: Which planet is shown?",
    ),
]

# doc 1 right (letter), doc 2 right ("1,000"), doc 3 wrong (2.67 at two decimals), doc 4 unreadable by
# the rules (a long sentence without an answer marker) -> wrong without the judge.
ANSWERS = {
    "1": "The answer is (B).",
    "2": "There are 1,000 apples.",
    "3": "2.6749",
    "4": "I believe the planet with the big rings in this picture is Jupiter for sure",
}


def _answer(task: str, doc: dict[str, Any]) -> str:
    return ANSWERS[doc["pid"]]


@pytest.fixture
def mathvista_data(hub_dataset: Any) -> None:
    hub_dataset(REPO, "testmini", ROWS, _features())


def test_rule_based_scores_and_breakdowns(mathvista_data: None, run_benchmark: Any) -> None:
    scores = run_benchmark("mathvista_testmini_format", _answer)["results"]["mathvista_testmini_format"]
    # 2 of 4 right -> 50.0 (accuracy x100)
    assert scores["llm_as_judge_eval,none"] == pytest.approx(50.0)
    assert (
        scores["acc_gps,none"] == 100.0
        and scores["acc_geo,none"] == 100.0
        and scores["acc_alg,none"] == 100.0
    )
    assert scores["acc_mwp,none"] == 100.0 and scores["acc_ari,none"] == 100.0
    assert scores["acc_fqa,none"] == 0.0 and scores["acc_sta,none"] == 0.0
    assert scores["acc_vqa,none"] == 0.0 and scores["acc_num,none"] == 0.0
    assert math.isnan(scores["acc_tqa,none"])  # no document of that task


def test_chat_prompt_is_the_format_prompt_with_the_image(mathvista_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    run_benchmark("mathvista_testmini_format", _answer, model=model)
    [message] = model.seen["mathvista_testmini_format"][0]
    assert message["role"] == "user"
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == COLOURS[0]
    assert text == {
        "type": "text",
        "text": "Find the angle x.\nChoices:\n(A) 135°\n(B) 145°\n(C) 155°\n"
        "Answer with the option's letter from the given choices directly.",
    }
    [message] = model.seen["mathvista_testmini_format"][2]
    assert message["content"][1]["text"] == (
        "What is the average? (Unit: cm)\n"
        "Answer the question using a single floating-point number with two decimal places."
    )


def test_simple_prompts_of_the_solution_and_cot_variants(mathvista_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    run_benchmark(["mathvista_testmini_solution", "mathvista_testmini_cot"], _answer, model=model)
    text, visuals = model.seen["mathvista_testmini_solution"][1]
    assert text == ROWS[1]["query"]
    assert [v.getpixel((0, 0)) for v in visuals] == [COLOURS[1]]
    text, _ = model.seen["mathvista_testmini_cot"][1]
    assert text == ROWS[1]["query"] + (
        "\nSolve the problem step by step, then write the final answer on the last line as 'Answer: ...'."
    )


def test_group_runs_three_variants_deterministically(mathvista_data: None, run_benchmark: Any) -> None:
    first = run_benchmark("mathvista_testmini", _answer)
    second = run_benchmark("mathvista_testmini", _answer)
    names = ["mathvista_testmini_cot", "mathvista_testmini_solution", "mathvista_testmini_format"]
    values = [first["results"][n]["llm_as_judge_eval,none"] for n in names]
    assert values == [50.0, 50.0, 50.0]  # the scripted answers do not depend on the prompt
    assert [second["results"][n]["llm_as_judge_eval,none"] for n in names] == values
    assert set(first["group_subtasks"]["mathvista_testmini"]) == set(names)


def test_judge_variant_asks_only_about_unreadable_answers(
    mathvista_data: None, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TYPE", "dummy")
    asked: list[str] = []
    original = DummyJudge._invoke

    def recording(self: DummyJudge, request: Any) -> Any:
        asked.append(request.metadata["prediction"])
        return original(self, request)

    monkeypatch.setattr(DummyJudge, "_invoke", recording)
    scores = run_benchmark("mathvista_testmini_format_judge", _answer)["results"][
        "mathvista_testmini_format_judge"
    ]
    # only doc 4 goes to the judge; the dummy judge finds "jupiter" in it -> 3 of 4 right
    assert asked == [ANSWERS["4"]]
    assert scores["llm_as_judge_eval,none"] == pytest.approx(75.0)
    assert scores["acc_vqa,none"] == 100.0 and scores["acc_fqa,none"] == 0.0


def test_test_split_writes_a_submission_file(hub_dataset: Any, run_benchmark: Any, tmp_path: Path) -> None:
    rows = [{**row, "answer": "", "metadata": {**row["metadata"], "split": "test"}} for row in ROWS[:2]]
    hub_dataset(REPO, "test", rows, _features())
    results = run_benchmark("mathvista_test", _answer, output_path=str(tmp_path / "out"))
    [path] = results["output_files"]["submissions"]["mathvista_test"]
    assert json.loads(Path(path).read_text()) == {
        "1": {
            "response": ANSWERS["1"],
            "extraction": "145°",
            "question_type": "multi_choice",
            "answer_type": "text",
        },
        "2": {
            "response": ANSWERS["2"],
            "extraction": "1000",
            "question_type": "free_form",
            "answer_type": "integer",
        },
    }
