"""MME end to end: acc + acc+ per category, perception/cognition sums, prompts, the pair check."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

import lmms_eval
from lmms_eval.errors import DatasetError

SUFFIX = " Please answer yes or no."
POST = "\nAnswer the question using a single word or phrase."

# (question_id, category, question, gold, scripted answer)
QUESTIONS = [
    ("e1.jpg", "existence", "Is there a dog in the image?", "Yes", "Yes"),
    ("e1.jpg", "existence", "Is there a cat in the image?", "No", "no."),
    ("c1.jpg", "count", "Are there two apples?", "Yes", "yes, two"),
    ("c1.jpg", "count", "Are there three apples?", "No", "Yes"),  # wrong
    ("o1.jpg", "OCR", "Does the sign say STOP?", "Yes", "maybe"),  # "other": wrong
    ("o1.jpg", "OCR", "Does the sign say GO?", "No", "The answer is no"),  # "other": wrong
    ("k1.jpg", "code_reasoning", "Does the code print 3?", "Yes", "Y"),
    ("k1.jpg", "code_reasoning", "Does the code print 4?", "No", "n."),
]
# existence: 2/2 right -> acc 100 + acc+ 100 = 200; count: 1/2 -> 50 + 0 = 50; OCR: 0 + 0 = 0
# perception = 200 + 50 + 0 = 250. code_reasoning: 200, so cognition = 200.
EXPECTED = {
    "mme_perception_score,none": 250.0,
    "mme_existence_score,none": 200.0,
    "mme_count_score,none": 50.0,
    "mme_ocr_score,none": 0.0,
    "mme_cognition_score,none": 200.0,
    "mme_code_reasoning_score,none": 200.0,
}
ANSWERS = {q + SUFFIX: answer for _, _, q, _, answer in QUESTIONS}


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "question_id": datasets.Value("string"),
            "image": datasets.Image(),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "category": datasets.Value("string"),
        }
    )


@pytest.fixture
def mme_data(hub_dataset: Any) -> None:
    from PIL import Image

    rows = []
    for i, (qid, category, question, gold, _) in enumerate(QUESTIONS):
        image = solid_image((10 * i, 0, 0)) if i else Image.new("RGBA", (8, 8), (1, 2, 3, 128))
        rows.append(
            {
                "question_id": qid,
                "image": image,
                "question": question + SUFFIX,
                "answer": gold,
                "category": category,
            }
        )
    hub_dataset("lmms-lab-encoder/MME", "test", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return ANSWERS[doc["question"]]


def _scores(results: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in results["results"]["mme"].items() if k in EXPECTED}


def test_mme_scores_and_chat_prompt(mme_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    results = run_benchmark("mme", _answer, model=model)
    assert _scores(results) == EXPECTED
    assert results["n-samples"]["mme"]["effective"] == 8
    [message] = model.seen["mme"][0]
    image, text = message["content"]
    assert message["role"] == "user" and image["type"] == "image"
    assert image["url"].mode == "RGB"  # the RGBA image is converted
    assert text == {"type": "text", "text": "Is there a dog in the image?" + POST}  # suffix removed


def test_mme_simple_prompt(mme_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    results = run_benchmark("mme", _answer, model=model)
    assert _scores(results) == EXPECTED
    text, visuals = model.seen["mme"][3]
    assert text == "Are there three apples?" + POST
    assert len(visuals) == 1 and visuals[0].getpixel((0, 0)) == (30, 0, 0)


def _utils() -> ModuleType:
    path = Path(lmms_eval.__file__).parent / "tasks" / "mme" / "utils.py"
    spec = importlib.util.spec_from_file_location("mme_utils_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mme_suffix_kept_without_post_prompt() -> None:
    doc = {"question": "Is it red?" + SUFFIX}
    utils = _utils()
    assert utils.doc_to_text(doc, {"pre_prompt": "", "post_prompt": ""}) == "Is it red?" + SUFFIX
    assert utils.doc_to_text(doc, {"pre_prompt": "Q: ", "post_prompt": "!"}) == "Q: Is it red?!"


def test_mme_split_pair_is_an_error_naming_the_image(mme_data: None, run_benchmark: Any) -> None:
    # --limit 3 keeps both questions of e1.jpg but only the first of c1.jpg
    with pytest.raises(DatasetError, match=r"image 'c1\.jpg' \(category 'count'\) has 1 scored question"):
        run_benchmark("mme", _answer, limit=3)


def test_mme_is_deterministic_and_bootstraps(mme_data: None, run_benchmark: Any) -> None:
    first = run_benchmark("mme", _answer, bootstrap_iters=30)["results"]["mme"]
    second = run_benchmark("mme", _answer, bootstrap_iters=30)["results"]["mme"]
    assert first == second
    assert {k: v for k, v in first.items() if k in EXPECTED} == EXPECTED
    # resamples draw whole images (each question carries its pair's score), so errors come out
    assert isinstance(first["mme_perception_score_stderr,none"], float)
    assert first["mme_perception_score_ci_lower,none"] <= 250.0 <= first["mme_perception_score_ci_upper,none"]
