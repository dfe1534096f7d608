"""textvqa_val / textvqa_test: prompts, VQA soft accuracy and the submission file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer the question using a single word or phrase."


def _features() -> Any:
    import datasets

    strings = datasets.List(datasets.Value("string"))
    return datasets.Features(
        {
            "image_id": datasets.Value("string"),
            "question_id": datasets.Value("int32"),
            "question": datasets.Value("string"),
            "question_tokens": strings,
            "image": datasets.Image(),
            "image_width": datasets.Value("int32"),
            "image_height": datasets.Value("int32"),
            "flickr_original_url": datasets.Value("string"),
            "flickr_300k_url": datasets.Value("string"),
            "answers": strings,
            "image_classes": strings,
            "set_name": datasets.Value("string"),
            "ocr_tokens": strings,
        }
    )


# question, ten answers, scripted output, expected soft accuracy
ROWS = [
    # 1 annotator matches: (0 + 9 * 1/3) / 10 = 0.3; "The Stop." normalises to "stop"
    ("what does the sign SAY?", ["stop"] + ["go"] * 9, "The Stop.", 0.3),
    # 2 match ("two" -> "2"): (2 * 1/3 + 8 * 2/3) / 10 = 0.6
    ("how many cans?", ["2", "two"] + ["3"] * 8, "2", 0.6),
    # 3 match: (3 * 2/3 + 7 * 1) / 10 = 0.9; "dont" -> "don't"
    ("what is written?", ["don't", "dont", "Don't"] + ["do"] * 7, "DONT", 0.9),
    # 4 match: 1.0
    ("what brand?", ["nike"] * 4 + ["adidas"] * 6, "Nike", 1.0),
    # "5.0" stays "5.0": no match -> 0
    ("what number?", ["5"] * 10, "5.0", 0.0),
]


def _row(i: int, question: str, answers: list[str]) -> dict[str, Any]:
    return {
        "image_id": f"img{i}",
        "question_id": 100 + i,
        "question": question,
        "question_tokens": question.split(),
        "image": solid_image((i * 40, 0, 0)),
        "image_width": 16,
        "image_height": 16,
        "flickr_original_url": "",
        "flickr_300k_url": "",
        "answers": answers,
        "image_classes": ["Sign"],
        "set_name": "val",
        "ocr_tokens": ["STOP", "ahead"],
    }


@pytest.fixture
def textvqa_data(hub_dataset: Any) -> None:
    rows = [_row(i, q, a) for i, (q, a, _, _) in enumerate(ROWS)]
    hub_dataset("lmms-lab-encoder/textvqa", "validation", rows, _features())
    test_rows = [_row(i, q, []) for i, (q, _, _, _) in enumerate(ROWS[:2])]
    hub_dataset("lmms-lab-encoder/textvqa", "test", test_rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for q, _, out, _ in ROWS if q == doc["question"])


def test_soft_accuracy_and_result_key(textvqa_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("textvqa_val", _answer)
    scores = results["results"]["textvqa_val"]
    # (0.3 + 0.6 + 0.9 + 1.0 + 0.0) / 5 = 2.8 / 5 = 0.56
    assert scores["exact_match,none"] == pytest.approx(0.56)
    assert results["n-samples"]["textvqa_val"]["effective"] == 5
    again = run_benchmark("textvqa_val", _answer)["results"]["textvqa_val"]
    assert again["exact_match,none"] == scores["exact_match,none"]


def test_chat_prompt_capitalises_the_question(textvqa_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    run_benchmark("textvqa_val", _answer, model=model, limit=1)
    [message] = model.seen["textvqa_val"][0]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (0, 0, 0)
    # str.capitalize: first letter upper, the rest lower ("SAY" -> "say")
    assert text == {"type": "text", "text": "What does the sign say?" + POST}


def test_simple_prompt_with_ocr_tokens(textvqa_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    run_benchmark("textvqa_val", _answer, model=model, limit=2)
    text, visuals = model.seen["textvqa_val"][1]
    assert text == "How many cans?" + POST
    assert visuals[0].getpixel((0, 0)) == (40, 0, 0)

    from lmms_eval.tasks.textvqa.utils import doc_to_text

    # with ocr: true the OCR tokens follow the question
    doc = {"question": "what is it?", "ocr_tokens": ["STOP", "ahead"]}
    kwargs = {"pre_prompt": "Q: ", "post_prompt": POST, "ocr": True}
    assert doc_to_text(doc, kwargs) == "Q: What is it?\nReference OCR token: STOP, ahead" + POST


def test_test_split_writes_submission(textvqa_data: None, run_benchmark: Any, tmp_path: Path) -> None:
    results = run_benchmark("textvqa_test", lambda task, doc: "The Two", output_path=str(tmp_path))
    assert results["results"]["textvqa_test"]["submission,none"] is None
    [path] = results["output_files"]["submissions"]["textvqa_test"]
    assert Path(path).name == "textvqa_test_submission.json"
    # normalised answers keyed by question id
    assert json.loads(Path(path).read_text()) == [
        {"question_id": 100, "answer": "2"},
        {"question_id": 101, "answer": "2"},
    ]
