"""llava_in_the_wild: the LLaVA-Bench review prompt, relative scores per category, no judge."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

# question id, category, caption, reference, model answer, the judge's review
ROWS = [
    (1, "conv", "A cat on a mat.", "A cat sits on a red mat.", "A cat.", "8 6\nThe first is better."),
    (2, "conv", "A dog.", "A brown dog runs.", "A dog running.", "10 5"),
    (3, "detail", "A car.", "A red car is parked.", "A parked red car.", "6, 6\nEqual."),
    (4, "complex", "A street.", "It is rush hour.", "Busy street.", "4 8"),
    (5, "complex", "A tree.", "An oak tree.", "A tree.", "I cannot rate these."),  # unreadable: -1, -1
]


@pytest.fixture
def llava_data(hub_dataset: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "question_id": datasets.Value("int64"),
            "image": datasets.Image(),
            "question": datasets.Value("string"),
            "caption": datasets.Value("string"),
            "gpt_answer": datasets.Value("string"),
            "category": datasets.Value("string"),
        }
    )
    rows = [
        {
            "question_id": i,
            "image": solid_image(),
            "question": f"Question {i}?",
            "caption": c,
            "gpt_answer": g,
            "category": k,
        }
        for i, k, c, g, _, _ in ROWS
    ]
    hub_dataset("lmms-lab-encoder/llava-bench-in-the-wild", "train", rows, features)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(r[4] for r in ROWS if r[0] == doc["question_id"])


def test_review_prompt_and_relative_scores(
    llava_data: None, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval import llm_judge
    from lmms_eval.llm_judge import DummyJudge, Request
    from lmms_eval.llm_judge.base import ProviderReply

    prompts: list[str] = []

    class Judge(DummyJudge):
        def _invoke(self, request: Request) -> ProviderReply:
            text = request.prompt_text()
            prompts.append(text)
            reply = next(r[5] for r in ROWS if f"[Assistant 2]\n{r[4]}\n\n" in text)
            return ProviderReply(text=reply, latency_s=0.0, attempts=1)

    monkeypatch.setenv("API_TYPE", "dummy")
    monkeypatch.setattr(llm_judge, "get_server", lambda *a, **k: Judge())
    model = ScriptedModel(_answer, chat=True)
    scores = run_benchmark("llava_in_the_wild", _answer, model=model)["results"]["llava_in_the_wild"]
    # conv: model 5.5 / reference 9; detail: 6 / 6; complex: (8 - 1) / 2 over (4 - 1) / 2
    assert scores["gpt_eval_llava_conv,none"] == pytest.approx(61.1)
    assert scores["gpt_eval_llava_detail,none"] == pytest.approx(100.0)
    assert scores["gpt_eval_llava_complex,none"] == pytest.approx(233.3)
    # all: model (6 + 5 + 6 + 8 - 1) / 5 over reference (8 + 10 + 6 + 4 - 1) / 5
    assert scores["gpt_eval_llava_all,none"] == pytest.approx(88.9)
    first = next(p for p in prompts if "A cat." in p)
    assert first.startswith(
        "[Context]\nA cat on a mat.\n\n[Question]\nQuestion 1?\n\n[Assistant 1]\nA cat sits"
    )
    assert "[System]\nWe would like to request your feedback" in first
    [message] = model.seen["llava_in_the_wild"][0]
    assert message["content"][1] == {"type": "text", "text": "Question 1?"}


def test_without_judge_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.errors import ConfigError
    from lmms_eval.tasks.llava_in_the_wild.utils import process_results_batch

    monkeypatch.delenv("API_TYPE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    doc = {"question_id": 1, "question": "Q", "caption": "C", "gpt_answer": "G", "category": "conv"}
    with pytest.raises(ConfigError, match=r"llava_in_the_wild needs an LLM judge"):
        process_results_batch([doc], [["a"]])


def test_offline_dummy_judge_rates_containing_answers_full(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.tasks.llava_in_the_wild.utils import process_results_batch

    monkeypatch.setenv("API_TYPE", "dummy")
    doc = {"question_id": 1, "question": "Q", "caption": "C", "gpt_answer": "a red car", "category": "conv"}
    [good, bad] = process_results_batch([doc, doc], [["It is a red car."], ["a bike"]])
    assert good["gpt_eval_llava_conv"]["scores"] == [10.0, 10.0]
    assert bad["gpt_eval_llava_conv"]["scores"] == [10.0, 1.0]
