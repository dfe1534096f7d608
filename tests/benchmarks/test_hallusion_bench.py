"""HallusionBench end to end: aAcc / qAcc / fAcc grouping, rule-read answers, the judge variant."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.llm_judge.base import ProviderReply
from lmms_eval.llm_judge.providers.dummy import DummyJudge
from lmms_eval.llm_judge.types import Request

# (category, subcategory, set_id, figure_id, question_id, question, gt_answer, scripted answer)
DOCS = [
    ("VD", "chart", "0", "0", "0", "Is the red bar the tallest?", "1", "Yes, it does."),  # right
    ("VD", "chart", "0", "1", "0", "Is the red bar the tallest?", "0", "No"),  # right
    ("VD", "chart", "0", "0", "1", "Is the blue bar shorter?", "1", "yes"),  # right
    ("VD", "chart", "0", "1", "1", "Is the blue bar shorter?", "0", "Hard to say."),  # unreadable
    ("VS", "map", "1", "0", "0", "Is Paris in France?", "1", "The map shows it, so yes."),  # right
    (
        "VS",
        "map",
        "1",
        "0",
        "1",
        "Is Paris in Spain?",
        "0",
        "It could be yes or no; I lean no.",
    ),  # unreadable
]
ANSWERS = {(d[2], d[3], d[4]): d[7] for d in DOCS}
UNREADABLE = ["Hard to say.", "It could be yes or no; I lean no."]

# Rule only (unreadable = wrong): docs 0, 1, 2, 4 right.
#   aAcc 4/6; VD 3/4; VS 1/2.
#   qAcc groups (cat, sub, set, question): VD q0 {0,1} ok, VD q1 {2,3} no, VS q0 {4} ok, VS q1 {5} no -> 2/4
#   fAcc groups (cat, sub, set, figure): VD f0 {0,2} ok, VD f1 {1,3} no, VS f0 {4,5} no -> 1/3
RULE = {
    "aAcc,none": pytest.approx(400 / 6),
    "aAcc_VD,none": 75.0,
    "aAcc_VS,none": 50.0,
    "qAcc,none": 50.0,
    "qAcc_VD,none": 50.0,
    "qAcc_VS,none": 50.0,
    "fAcc,none": pytest.approx(100 / 3),
    "fAcc_VD,none": 50.0,
    "fAcc_VS,none": 0.0,
}
# Judge (dummy "contains"): doc 3 "Hard to say." lacks "no" -> wrong; doc 5 contains "no" -> right.
#   aAcc 5/6; qAcc: VS q1 now ok -> 3/4; fAcc: VS f0 {4,5} now ok -> 2/3
JUDGED = {
    **RULE,
    "aAcc,none": pytest.approx(500 / 6),
    "aAcc_VS,none": 100.0,
    "qAcc,none": 75.0,
    "qAcc_VS,none": 100.0,
    "fAcc,none": pytest.approx(200 / 3),
    "fAcc_VS,none": 100.0,
}


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    fields = ["category", "subcategory", "visual_input", "set_id", "figure_id", "sample_note"]
    fields += ["question_id", "question", "gt_answer_details", "gt_answer", "filename"]
    return datasets.Features({**dict.fromkeys(fields, text), "image": datasets.Image()})


@pytest.fixture
def hb_data(hub_dataset: Any) -> None:
    rows = [
        {
            "category": cat,
            "subcategory": sub,
            "visual_input": "1",
            "set_id": set_id,
            "figure_id": fig,
            "sample_note": sub,
            "question_id": qid,
            "question": question,
            "gt_answer_details": "details",
            "gt_answer": gt,
            "filename": f"./{cat}/{sub}/{set_id}_{fig}.png",
            "image": solid_image((0, 0, 40 * i)),
        }
        for i, (cat, sub, set_id, fig, qid, question, gt, _) in enumerate(DOCS)
    ]
    hub_dataset("lmms-lab-encoder/HallusionBench", "image", rows, _features())


def _answer(task: str, doc: dict[str, Any]) -> str:
    return ANSWERS[(doc["set_id"], doc["figure_id"], doc["question_id"])]


def _scores(results: dict[str, Any], task: str) -> dict[str, Any]:
    return {k: v for k, v in results["results"][task].items() if k in RULE}


def test_rule_scores_and_chat_prompt(hb_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=True)
    results = run_benchmark("hallusion_bench_image", _answer, model=model)
    assert _scores(results, "hallusion_bench_image") == RULE
    [message] = model.seen["hallusion_bench_image"][2]
    image, text = message["content"]
    assert image["type"] == "image" and image["url"].getpixel((0, 0)) == (0, 0, 80)
    assert text == {"type": "text", "text": "Is the blue bar shorter?"}  # no pre/post prompt


def test_simple_prompt(hb_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer, chat=False)
    results = run_benchmark("hallusion_bench_image", _answer, model=model)
    assert _scores(results, "hallusion_bench_image") == RULE
    text, visuals = model.seen["hallusion_bench_image"][4]
    assert text == "Is Paris in France?"
    assert len(visuals) == 1 and visuals[0].getpixel((0, 0)) == (0, 0, 160)


def test_judge_variant_judges_only_unreadable_answers(
    hb_data: None, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TYPE", "dummy")
    judged: list[str] = []
    original = DummyJudge._invoke

    def record(self: DummyJudge, request: Request) -> ProviderReply:
        judged.append(request.metadata["prediction"])
        return original(self, request)

    monkeypatch.setattr(DummyJudge, "_invoke", record)
    results = run_benchmark("hallusion_bench_image_judge", _answer)
    assert sorted(judged) == sorted(UNREADABLE)
    assert _scores(results, "hallusion_bench_image_judge") == JUDGED


def test_all_wrong_and_determinism(hb_data: None, run_benchmark: Any) -> None:
    # "Yes" everywhere: right exactly on gt "1" (docs 0, 2, 4) -> aAcc 3/6 = 50.
    # q-groups: VD q0 {0,1} no, VD q1 {2,3} no, VS q0 {4} ok, VS q1 {5} no -> 1/4 = 25
    # f-groups: VD f0 {0,2} ok (both gt "1"), VD f1 {1,3} no, VS f0 {4,5} no -> 1/3
    first = run_benchmark("hallusion_bench_image", lambda task, doc: "Yes", bootstrap_iters=30)
    second = run_benchmark("hallusion_bench_image", lambda task, doc: "Yes", bootstrap_iters=30)
    assert first["results"] == second["results"]
    scores = first["results"]["hallusion_bench_image"]
    assert (scores["aAcc,none"], scores["qAcc,none"], scores["fAcc,none"]) == (
        50.0,
        25.0,
        pytest.approx(100 / 3),
    )
    assert isinstance(scores["aAcc_stderr,none"], float)
