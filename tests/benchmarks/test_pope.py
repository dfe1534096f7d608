"""POPE end to end: the published (unparsed) answer rule, the confusion-table metrics, pope_full."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer the question using a single word or phrase."

# (question, gold, scripted answer)
QUESTIONS = [
    ("Is there a dog in the image?", "yes", "yes"),  # TP
    ("Is there a car in the image?", "yes", "Yes"),  # TP (only lower-cased)
    ("Is there a bird in the image?", "yes", "no"),  # FN
    ("Is there a cup in the image?", "yes", "Yes."),  # wrong, and neither TP nor FN
    ("Is there a cat in the image?", "no", "yes"),  # FP
    ("Is there a bus in the image?", "no", "no"),  # TN
    ("Is there a tie in the image?", "no", "No"),  # TN
    ("Is there a kite in the image?", "no", "No, there is not."),  # wrong, not a "no"
]
# correct 4/8 = 0.5; TP 2, FP 1, FN 1: precision 2/3, recall 2/3, F1 2/3; gold yes 4/8 = 0.5
EXPECTED = {
    "pope_accuracy,none": 0.5,
    "pope_precision,none": pytest.approx(2 / 3),
    "pope_recall,none": pytest.approx(2 / 3),
    "pope_f1_score,none": pytest.approx(2 / 3),
    "pope_yes_ratio,none": 0.5,
}
ANSWERS = {q: a for q, _, a in QUESTIONS}


def _features() -> Any:
    import datasets

    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "question_id": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "image_source": datasets.Value("string"),
            "image": datasets.Image(),
            "category": datasets.Value("string"),
        }
    )


def _rows(questions: list[tuple[str, str, str]], category: str) -> list[dict[str, Any]]:
    return [
        {
            "id": str(i),
            "question_id": str(i + 1),
            "question": question,
            "answer": gold,
            "image_source": f"COCO_val2014_{i:012d}",
            "image": solid_image((0, 20 * i, 0)),
            "category": category,
        }
        for i, (question, gold, _) in enumerate(questions)
    ]


def _answer(task: str, doc: dict[str, Any]) -> str:
    return ANSWERS[doc["question"]]


@pytest.fixture
def pope_data(hub_dataset: Any) -> None:
    hub_dataset("lmms-lab-encoder/POPE", "test", _rows(QUESTIONS, "adversarial"), _features())


def _scores(results: dict[str, Any], task: str = "pope") -> dict[str, Any]:
    return {k: v for k, v in results["results"][task].items() if k in EXPECTED}


def test_pope_metrics_and_chat_prompt(pope_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    results = run_benchmark("pope", _answer, model=model)
    assert _scores(results) == EXPECTED
    [message] = model.seen["pope"][4]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (0, 80, 0)
    assert text["text"] == "Is there a cat in the image?" + POST


def test_pope_simple_prompt(pope_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    results = run_benchmark("pope", _answer, model=model)
    assert _scores(results) == EXPECTED
    text, visuals = model.seen["pope"][0]
    assert text == "Is there a dog in the image?" + POST
    assert [v.size for v in visuals] == [(16, 16)]


def test_pope_yes_with_full_stop_is_wrong(pope_data: None, run_benchmark: Any) -> None:
    # every answer "Yes.": nothing equals "yes"/"no" -> accuracy 0, no TP/FP/FN -> P = R = F1 = 0
    results = run_benchmark("pope", lambda task, doc: "Yes.")
    scores = results["results"]["pope"]
    assert scores["pope_accuracy,none"] == 0.0
    assert scores["pope_precision,none"] == scores["pope_recall,none"] == scores["pope_f1_score,none"] == 0.0
    assert scores["pope_yes_ratio,none"] == 0.5  # gold yes share, whatever the answers
    # the same answers without the full stop: gold yes right (4), gold no wrong -> acc 0.5, P 4/8, R 1
    plain = run_benchmark("pope", lambda task, doc: "Yes")["results"]["pope"]
    assert plain["pope_accuracy,none"] == 0.5
    assert plain["pope_precision,none"] == 0.5 and plain["pope_recall,none"] == 1.0
    assert plain["pope_f1_score,none"] == pytest.approx(2 / 3)  # 2*0.5*1/1.5


def test_pope_full_group_runs_the_three_settings(hub_dataset: Any, run_benchmark: Any) -> None:
    splits = {"adversarial": QUESTIONS[:4], "popular": QUESTIONS[4:], "random": QUESTIONS}
    for split, questions in splits.items():
        hub_dataset("lmms-lab-encoder/POPE", split, _rows(questions, split), _features(), config="Full")
    results = run_benchmark("pope_full", _answer)
    assert results["n-samples"]["pope_adv"]["effective"] == 4
    assert results["n-samples"]["pope_pop"]["effective"] == 4
    assert results["n-samples"]["pope_random"]["effective"] == 8
    # adversarial: all gold yes; yes, Yes, no, Yes. -> acc 2/4, TP 2, FN 1: P 1, R 2/3, yes ratio 1
    adv = results["results"]["pope_adv"]
    assert adv["pope_accuracy,none"] == 0.5 and adv["pope_precision,none"] == 1.0
    assert adv["pope_recall,none"] == pytest.approx(2 / 3) and adv["pope_yes_ratio,none"] == 1.0
    # popular: all gold no; yes, no, No, "No, there is not." -> acc 2/4, TP 0: P = R = F1 = 0
    pop = results["results"]["pope_pop"]
    assert pop["pope_accuracy,none"] == 0.5 and pop["pope_f1_score,none"] == 0.0
    assert pop["pope_yes_ratio,none"] == 0.0
    assert _scores(results, "pope_random") == EXPECTED  # the whole table again
    assert "pope_full" in results["group_subtasks"]


def test_pope_is_deterministic_with_vectorised_error_bars(pope_data: None, run_benchmark: Any) -> None:
    first = run_benchmark("pope", _answer, bootstrap_iters=200)["results"]["pope"]
    second = run_benchmark("pope", _answer, bootstrap_iters=200)["results"]["pope"]
    assert first == second
    assert _scores({"results": {"pope": first}}) == EXPECTED
    assert first["pope_f1_score_stderr,none"] > 0


def test_cli_runs_pope_from_a_dataset_root(hub_dataset: Any, dataset_root: Any, tmp_path: Any) -> None:
    """The CLI with --dataset_root and the oracle dummy model: every answer right, files written."""
    import json
    from pathlib import Path

    from lmms_eval.cli import main

    hub_dataset("lmms-lab-encoder/POPE", "test", _rows(QUESTIONS, "adversarial"), _features())
    out = tmp_path / "out"
    argv = ["--model", "dummy", "--model_args", "answer_field=answer", "--tasks", "pope"]
    argv += ["--dataset_root", str(dataset_root), "--output_path", str(out), "--log_samples"]
    assert main(argv) == 0
    [results_file] = list(Path(out).rglob("*_results.json"))
    scores = json.loads(results_file.read_text())["results"]["pope"]
    # the oracle answers the gold "yes"/"no": all 8 right; TP 4, FP 0, FN 0; gold yes 4/8
    assert scores["pope_accuracy,none"] == 1.0 and scores["pope_f1_score,none"] == 1.0
    assert scores["pope_yes_ratio,none"] == 0.5
    assert len(list(Path(out).rglob("*_samples_pope.jsonl"))) == 1
