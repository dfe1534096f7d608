"""activitynetqa (rule, offline) and activitynetqa_judge (published judge prompt, only the answers
the rule is not sure of): prompt, result keys, clustered errors by video, judge failures recorded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_video

REPO = "lmms-eval/ActivityNetQA"

# (video_name, question, answer, output)
CASES = [
    ("abc", "what is the man doing", "dancing", "Dancing."),  # same text: yes/5 (no judge)
    ("abc", "is the man outdoors", "yes", "Yes, he is."),  # yes/no: yes/5 (no judge)
    ("abc", "what color is the shirt", "red", "the shirt is red"),  # contained: rule yes/4, judge asked
    ("xyz", "how many people are there", "2", "three"),  # rule no/0, judge asked
    ("xyz", "what is in the hand", "cup", "a mug"),  # rule no/0, judge asked
]


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    return datasets.Features(
        {
            "video_name": text,
            "question": text,
            "answer": text,
            "question_id": text,
            "type": datasets.Value("int64"),
        }
    )


@pytest.fixture
def anet_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rows = [
        {"video_name": vid, "question": q, "answer": a, "question_id": f"v_{vid}_{i}", "type": 0}
        for i, (vid, q, a, _) in enumerate(CASES)
    ]
    hub_dataset(REPO, "test", rows, _features())
    for vid in ("abc", "xyz"):
        write_video(dataset_root / REPO / "all_test" / f"v_{vid}.mp4", frames=8)
    use_dataset_root(monkeypatch, dataset_root, "activitynetqa")
    return dataset_root / REPO


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["question_id"].rsplit("_", 1)[1])][3]


def test_rule_mode_offline(anet_data: Path, run_benchmark: Any) -> None:
    scores = run_benchmark("activitynetqa", _answer, bootstrap_iters=10)["results"]["activitynetqa"]
    assert scores["gpt_eval_accuracy,none"] == pytest.approx(300 / 5)
    assert scores["gpt_eval_score,none"] == pytest.approx((5 + 5 + 4) / 5)
    assert scores["gpt_eval_accuracy_n_clusters,none"] == 2
    assert isinstance(scores["gpt_eval_accuracy_stderr_clustered,none"], float)


def test_judge_gets_only_unsure_answers(
    anet_data: Path, run_benchmark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval import llm_judge
    from lmms_eval.llm_judge import DummyJudge
    from lmms_eval.scoring.open_qa import JUDGE_SYSTEM_PROMPT

    seen: list[Any] = []

    class Judge(DummyJudge):
        def _invoke(self, request: Any) -> Any:
            seen.append(request)
            prediction = request.metadata["prediction"]
            self.reply = {"a mug": "{'pred': 'yes', 'score': 4}", "three": "no verdict"}.get(
                prediction, "{'pred': 'yes', 'score': 5}"
            )
            return super()._invoke(request)

    monkeypatch.setattr(llm_judge, "get_server", lambda *a, **k: Judge())
    scores = run_benchmark("activitynetqa_judge", _answer)["results"]["activitynetqa_judge"]
    assert sorted(r.metadata["prediction"] for r in seen) == ["a mug", "the shirt is red", "three"]
    assert seen[0].messages[0] == {"role": "system", "content": JUDGE_SYSTEM_PROMPT}
    assert "Correct Answer: " in seen[0].messages[1]["content"]
    # yes/5, yes/5 by rule; judge: red yes/5, three unreadable -> no/0, mug yes/4
    assert scores["gpt_eval_accuracy,none"] == pytest.approx(400 / 5)
    assert scores["gpt_eval_score,none"] == pytest.approx((5 + 5 + 5 + 0 + 4) / 5)


def test_prompt_and_video(anet_data: Path, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("activitynetqa", _answer, model=chat, limit=1)
    [message] = chat.seen["activitynetqa"][0]
    video, text = message["content"]
    assert video == {"type": "video", "url": str(anet_data / "all_test" / "v_abc.mp4")}
    assert os.path.isfile(video["url"])
    assert text["text"] == "What is the man doing? Answer the question using a single word or phrase."
