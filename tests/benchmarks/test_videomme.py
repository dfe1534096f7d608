"""videomme / videomme_w_subtitle: prompts, letters, duration/domain/task breakdowns, clustered
errors by video, and subtitles of the sampled frames, on synthetic videos under --dataset_root."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel
from video_fixtures import use_dataset_root, write_srt, write_video

REPO = "lmms-eval/Video-MME"
INSTRUCTION = (
    "Select the best answer to the following multiple-choice question based on the video and the "
    "subtitles. Respond with only the letter (A, B, C, or D) of the correct option."
)
POST = "\nAnswer with the option's letter from the given choices directly."
OPTIONS = ["A. one", "B. two", "C. three", "D. four"]

# (videoID, duration, domain, task_type, gold, output, correct?)
CASES = [
    ("vid_a", "short", "Knowledge", "Counting Problem", "B", "B", True),
    ("vid_a", "short", "Knowledge", "OCR Problems", "C", "The answer is (C).", True),
    ("vid_a", "short", "Knowledge", "Counting Problem", "A", "b", False),
    ("vid_b", "medium", "Film & Television", "Action Reasoning", "D", "D. four", True),
    ("vid_b", "medium", "Film & Television", "Action Reasoning", "A", "A and B", False),  # published: A
    ("vid_c", "long", "Sports Competition", "Temporal Perception", "C", "C", True),
]


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    names = ("video_id", "duration", "domain", "sub_category", "url", "videoID", "question_id")
    return datasets.Features(
        {
            **dict.fromkeys(names, text),
            "task_type": text,
            "question": text,
            "options": datasets.Sequence(text),
            "answer": text,
        }
    )


@pytest.fixture
def videomme_data(hub_dataset: Any, dataset_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rows = [
        {
            "video_id": f"{n:03d}",
            "duration": duration,
            "domain": domain,
            "sub_category": "Other",
            "url": f"https://example.invalid/{vid}",
            "videoID": vid,
            "question_id": f"{vid}-{n}",
            "task_type": task_type,
            "question": f"Question {n}?",
            "options": OPTIONS,
            "answer": gold,
        }
        for n, (vid, duration, domain, task_type, gold, _, _) in enumerate(CASES)
    ]
    parquet = hub_dataset(REPO, "test", rows, _features())
    folder = parquet.parent  # <root>/lmms-eval/Video-MME/data: videos beside the Parquet file
    for shade, vid in enumerate(("vid_a", "vid_b", "vid_c")):
        write_video(folder / f"{vid}.mp4", frames=16, fps=8, shade=40 * shade)
    cues = [(0.0, 0.5, "first <i>cue</i>"), (0.5, 1.0, "second cue"), (1.0, 1.5, "third"), (1.5, 2.0, "last")]
    write_srt(folder.parent / "subtitle" / "vid_a.srt", cues)
    use_dataset_root(monkeypatch, dataset_root, "videomme")
    return folder


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["video_id"])][5]


def test_scores_breakdowns_and_clustered_errors(videomme_data: Path, run_benchmark: Any) -> None:
    scores = run_benchmark("videomme", _answer, bootstrap_iters=10)["results"]["videomme"]
    # published rule: "A and B" is A (a leading letter counts), so 5 of 6; ours: no answer, 4 of 6
    assert scores["videomme_perception_score,none"] == pytest.approx(500 / 6)
    assert scores["videomme_perception_score_strict,none"] == pytest.approx(400 / 6)
    assert scores["videomme_short,none"] == pytest.approx(200 / 3)
    assert scores["videomme_medium,none"] == pytest.approx(100.0)
    assert scores["videomme_long,none"] == pytest.approx(100.0)
    assert scores["videomme_domain_knowledge,none"] == pytest.approx(200 / 3)
    assert scores["videomme_domain_film_and_television,none"] == pytest.approx(100.0)
    assert scores["videomme_task_counting_problem,none"] == pytest.approx(50.0)
    assert scores["videomme_task_ocr_problems,none"] == pytest.approx(100.0)
    assert "videomme_domain_multilingual,none" not in scores  # no questions, no key
    # three videos -> a cluster-robust error beside the ordinary one
    assert isinstance(scores["videomme_perception_score_stderr_clustered,none"], float)
    assert scores["videomme_perception_score_n_clusters,none"] == 3


def test_prompt_and_video_part(videomme_data: Path, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("videomme", _answer, model=chat, limit=4)
    [message] = chat.seen["videomme"][3]
    video, text = message["content"]
    assert video["type"] == "video"
    assert Path(video["url"]) == videomme_data / "vid_b.mp4" and os.path.isfile(video["url"])
    assert text["text"] == f"{INSTRUCTION}\nQuestion 3?\nA. one\nB. two\nC. three\nD. four\n{POST}"
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("videomme", _answer, model=simple, limit=1)
    prompt, visuals = simple.seen["videomme"][0]
    assert prompt.startswith(INSTRUCTION) and visuals == [str(videomme_data / "vid_a.mp4")]


def test_subtitles_of_the_sampled_frames(videomme_data: Path, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("videomme_w_subtitle", _answer, model=chat, limit=4)
    # 16 frames at 8 fps (2 s); frame_num 32 >= 16 frames: every frame, so every cue
    text = chat.seen["videomme_w_subtitle"][0][0]["content"][1]["text"]
    head = "This video's subtitles are listed below: \nfirst cue\nsecond cue\nthird\nlast\n"
    assert text == f"{head}{INSTRUCTION}\nQuestion 0?\nA. one\nB. two\nC. three\nD. four\nThe best answer is:"
    other = chat.seen["videomme_w_subtitle"][3][0]["content"][1]["text"]  # vid_b has no .srt
    assert other.startswith("This video's subtitles are listed below: \nNo subtitles available\nSelect")


def test_subtitle_selection_follows_frame_sampling() -> None:
    from lmms_eval.tasks.videomme.utils import parse_srt, select_subtitles

    cues = parse_srt("1\n00:00:00,000 --> 00:00:00,500\na\n\n2\n00:00:00,500 --> 00:00:01,000\nb\n")
    assert cues == [(0.0, 0.5, "a"), (0.5, 1.0, "b")]
    assert select_subtitles(cues, [0.0, 0.2]) == ["a"]
    assert select_subtitles(cues, None) == ["a", "b"]


def test_dummy_model_end_to_end(videomme_data: Path, dataset_root: Path) -> None:
    from lmms_eval.evaluator import simple_evaluate

    results = simple_evaluate(
        model="dummy",
        model_args="answer_field=answer",
        tasks=["videomme"],
        dataset_root=str(dataset_root),
        bootstrap_iters=0,
        show_progress=False,
    )
    assert results["results"]["videomme"]["videomme_perception_score,none"] == pytest.approx(100.0)


@pytest.mark.parametrize("task", ["videomme_long", "videomme_long_w_subtitle"])
def test_long_variants_keep_the_long_videos_with_subtitles(
    videomme_data: Path, run_benchmark: Any, task: str
) -> None:
    """Only vid_c's question has duration "long"; as published, both names show the subtitle
    prompt (the published ``videomme_doc_to_text_subtitle`` gives this text for the same doc)."""
    chat = ScriptedModel(_answer, chat=True)
    scores = run_benchmark(task, _answer, model=chat)["results"][task]
    assert list(chat.seen[task]) == [0]  # one doc left by process_docs
    assert scores["videomme_perception_score,none"] == pytest.approx(100.0)
    assert scores["videomme_long,none"] == pytest.approx(100.0)
    assert "videomme_short,none" not in scores
    video, text = chat.seen[task][0][0]["content"]
    assert Path(video["url"]) == videomme_data / "vid_c.mp4"
    head = "This video's subtitles are listed below: \nNo subtitles available\n"
    assert (
        text["text"]
        == f"{head}{INSTRUCTION}\nQuestion 5?\nA. one\nB. two\nC. three\nD. four\nThe best answer is:"
    )
