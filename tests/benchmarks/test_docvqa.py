"""docvqa_val and infovqa_val: prompts and ANLS (threshold 0.5) over the reference answers."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer the question using a single word or phrase."
REPO = "lmms-lab-encoder/DocVQA"


def _doc_features() -> Any:
    import datasets

    strings = datasets.List(datasets.Value("string"))
    return datasets.Features(
        {
            "questionId": datasets.Value("string"),
            "question": datasets.Value("string"),
            "question_types": strings,
            "image": datasets.Image(),
            "docId": datasets.Value("int64"),
            "ucsf_document_id": datasets.Value("string"),
            "ucsf_document_page_no": datasets.Value("string"),
            "answers": strings,
            "data_split": datasets.Value("string"),
        }
    )


def _info_features() -> Any:
    import datasets

    strings = datasets.List(datasets.Value("string"))
    return datasets.Features(
        {
            "questionId": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answers": strings,
            "answer_type": strings,
            "image": datasets.Image(),
            "image_url": datasets.Value("string"),
            "operation/reasoning": strings,
            "ocr": datasets.Value("string"),
            "data_split": datasets.Value("string"),
        }
    )


# question, answers, scripted output, expected ANLS
DOC_ROWS = [
    ("What is the date?", ["March 3, 1995"], "  march 3,   1995 ", 1.0),  # case and spaces ignored
    # 10-character gold, 5 deletions: similarity 1 - 5/10 = 0.5, exactly the threshold: kept
    ("What is the code?", ["abcdefghij"], "abcde", 0.5),
    # 6 deletions: 1 - 6/10 = 0.4 < 0.5 -> 0
    ("What is the id?", ["abcdefghij"], "abcd", 0.0),
    # best reference: "1995" vs "1996" is 1 substitution in 4 -> 0.75
    ("Which year?", ["nineteen ninety-five", "1995"], "1996", 0.75),
    # 1 edit ("a bd" vs "a bc") over the raw prediction's 5 characters, as the official script
    # divides: 1 - 1/5 (the normalised lengths would give 1 - 1/4)
    ("What is the ref?", ["a bc"], "a  bd", 0.8),
]
INFO_ROWS = [
    ("How many percent?", ["45%", "45"], "45", 1.0),
    ("Which country?", ["canada"], "kenya", 0.0),  # distance 4 of 6: 1/3 < 0.5
]


def _doc_row(i: int, question: str, answers: list[str]) -> dict[str, Any]:
    return {
        "questionId": str(1000 + i),
        "question": question,
        "question_types": ["form"],
        "image": solid_image((0, 0, i * 40)),
        "docId": 7 + i,
        "ucsf_document_id": "abc",
        "ucsf_document_page_no": "1",
        "answers": answers,
        "data_split": "val",
    }


def _info_row(i: int, question: str, answers: list[str]) -> dict[str, Any]:
    return {
        "questionId": str(2000 + i),
        "question": question,
        "answers": answers,
        "answer_type": ["single span"],
        "image": solid_image((i * 40, i * 40, 0)),
        "image_url": "",
        "operation/reasoning": [],
        "ocr": "",
        "data_split": "val",
    }


@pytest.fixture
def docvqa_data(hub_dataset: Any) -> None:
    rows = [_doc_row(i, q, a) for i, (q, a, _, _) in enumerate(DOC_ROWS)]
    hub_dataset(REPO, "validation", rows, _doc_features(), config="DocVQA")
    info = [_info_row(i, q, a) for i, (q, a, _, _) in enumerate(INFO_ROWS)]
    hub_dataset(REPO, "validation", info, _info_features(), config="InfographicVQA")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for q, _, out, _ in DOC_ROWS + INFO_ROWS if q == doc["question"])


def test_anls_scores_and_result_keys(docvqa_data: None, run_benchmark: Any) -> None:
    results = run_benchmark(["docvqa_val", "infovqa_val"], _answer)
    # DocVQA: (1 + 0.5 + 0 + 0.75 + 0.8) / 5 = 3.05 / 5 = 0.61
    assert results["results"]["docvqa_val"]["anls,none"] == pytest.approx(0.61)
    # InfographicVQA (its own config): (1 + 0) / 2 = 0.5
    assert results["results"]["infovqa_val"]["anls,none"] == pytest.approx(0.5)
    assert results["n-samples"]["infovqa_val"]["effective"] == 2
    assert results["configs"]["docvqa_val"]["generation_kwargs"]["max_new_tokens"] == 32


def test_chat_and_simple_prompts(docvqa_data: None, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("infovqa_val", _answer, model=chat, limit=2)
    [message] = chat.seen["infovqa_val"][1]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (40, 40, 0)
    assert text == {"type": "text", "text": "Which country?" + POST}

    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("docvqa_val", _answer, model=simple, limit=1)
    prompt, visuals = simple.seen["docvqa_val"][0]
    assert prompt == "What is the date?" + POST
    assert len(visuals) == 1 and visuals[0].getpixel((0, 0)) == (0, 0, 0)
