"""mmvet: the MM-Vet grader prompt through the judge layer, gpt_eval_score, no judge, --predict_only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

# question id, question, answer, capability, model answer, the judge's reply
ROWS = [
    ("v1", "What is x?", "5<OR>five", "rec,math", "x is 5", "1.0"),
    ("v2", "What is written?", "STOP", "ocr", "It says GO", "0.0 since it is wrong"),
    ("v3", "Explain the joke.", "a pun", "know,gen", "It is a pun.", "0.6"),
    ("v4", "What colour?", "red", "rec", "red", "Correctness: 1.0"),  # unreadable -> 0.0
]


@pytest.fixture
def mmvet_data(hub_dataset: Any) -> None:
    import datasets

    features = datasets.Features(
        {
            "question_id": datasets.Value("string"),
            "image": datasets.Image(),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "capability": datasets.Value("string"),
        }
    )
    rows = [
        {"question_id": i, "image": solid_image(), "question": q, "answer": a, "capability": c}
        for i, q, a, c, _, _ in ROWS
    ]
    hub_dataset("lmms-lab-encoder/MMVet", "test", rows, features)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(r[4] for r in ROWS if r[0] == doc["question_id"])


def test_grader_prompt_and_scores(
    mmvet_data: None, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval import llm_judge
    from lmms_eval.llm_judge import DummyJudge, Request
    from lmms_eval.llm_judge.base import ProviderReply

    prompts: list[str] = []

    class Judge(DummyJudge):
        def _invoke(self, request: Request) -> ProviderReply:
            text = request.prompt_text()
            prompts.append(text)
            reply = next(r[5] for r in ROWS if text.endswith(f"| {r[4]} |"))
            return ProviderReply(text=reply, latency_s=0.0, attempts=1)

    monkeypatch.setenv("API_TYPE", "dummy")
    monkeypatch.setattr(llm_judge, "get_server", lambda *a, **k: Judge())
    model = ScriptedModel(_answer, chat=False)
    scores = run_benchmark("mmvet", _answer, model=model)["results"]["mmvet"]
    assert scores["gpt_eval_score,none"] == pytest.approx(100 * (1.0 + 0.0 + 0.6 + 0.0) / 4)
    assert scores["gpt_eval_score_rec,none"] == pytest.approx(100 * (1.0 + 0.0) / 2)
    assert scores["gpt_eval_score_ocr,none"] == 0.0
    assert scores["gpt_eval_score_know,none"] == pytest.approx(60.0)
    assert len(prompts) == 4
    first = next(p for p in prompts if "x is 5" in p)
    assert first.startswith("Compare the ground truth and prediction from AI models")
    assert first.endswith("\n\nWhat is x? | 5 <OR> five | x is 5 |")
    text, _ = model.seen["mmvet"][0]
    assert text.startswith("First please perform reasoning, and think step by step") and text.endswith(
        "\n\nWhat is x?"
    )


def test_without_judge_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.errors import ConfigError
    from lmms_eval.tasks.mmvet.utils import process_results_batch

    monkeypatch.delenv("API_TYPE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"mmvet needs an LLM judge.*--predict_only"):
        process_results_batch(
            [{"question": "Q?", "answer": "A", "capability": "rec", "question_id": "v"}], [["a"]]
        )


def test_predict_only_keeps_answers(
    mmvet_data: None, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("API_TYPE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = run_benchmark(
        "mmvet", _answer, predict_only=True, log_samples=True, output_path=str(tmp_path / "o")
    )
    assert out["results"]["mmvet"].get("gpt_eval_score,none") is None
    lines = next((tmp_path / "o").rglob("*_samples_mmvet.jsonl")).read_text().splitlines()
    assert sorted(json.loads(line)["resps"][0][0] for line in lines) == sorted(r[4] for r in ROWS)
