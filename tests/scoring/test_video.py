"""Shared video-benchmark pieces (lmms_eval.scoring.video) and the ActivityNet-QA rules
(lmms_eval.scoring.open_qa)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_eval.scoring import open_qa
from lmms_eval.scoring.video import (
    breakdown_key,
    choice_letter,
    find_video,
    mmmu_style_choice,
    video_folders,
)


def test_find_video_tries_folders_subdirs_and_suffixes(tmp_path: Path) -> None:
    first, second = tmp_path / "copy", tmp_path / "cache"
    (second / "data").mkdir(parents=True)
    (second / "data" / "clip.MP4").write_bytes(b"")
    (first / "data").mkdir(parents=True)
    (first / "other.mkv").write_bytes(b"")
    folders = [str(first), str(second)]
    # clip.mp4 is not there, but its .MP4 sibling is, in the second folder's data/
    assert find_video("clip.mp4", folders, subdirs=("data", "")) == str(second / "data" / "clip.MP4")
    assert find_video("other", folders, subdirs=("data", "")) == str(first / "other.mkv")  # no suffix
    # nothing found: the path in the first folder, so the failure names it
    assert find_video("gone.mp4", folders, subdirs=("data",)) == str(first / "data" / "gone.mp4")
    assert find_video("/abs/clip.mp4", folders) == "/abs/clip.mp4"
    assert find_video("clip.mp4", folders, subdirs=("data",), suffixes_optional=False) == str(
        first / "data" / "clip.mp4"
    )


def test_video_folders_prefer_the_local_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "root" / "owner" / "Name" / "cfg").mkdir(parents=True)
    monkeypatch.setenv("LMMS_EVAL_DATASET_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    copy = tmp_path / "root" / "owner" / "Name"
    assert video_folders("owner/Name", "vids", config="cfg") == [
        str(copy / "cfg"),
        str(copy),
        str(tmp_path / "hf" / "vids"),
    ]
    monkeypatch.delenv("LMMS_EVAL_DATASET_ROOT")
    assert video_folders("owner/Name", None) == []


def test_choice_letters_are_limited_to_the_options() -> None:
    assert choice_letter("The answer is (C).", 3) == "C"
    assert choice_letter("D", 3) is None
    assert choice_letter("b", 5) == "B"


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("C", "C"),
        ("(C) run", "C"),
        ("run.", "C"),  # the whole answer is an option's text
        ("c", None),  # the MMMU parser reads uppercase letters only
        ("I cannot tell", None),  # never a random letter
        ("", None),
    ],
)
def test_mmmu_style_choice(response: str, expected: str | None) -> None:
    assert mmmu_style_choice(response, ["sit", "stand", "run"]) == expected


def test_breakdown_keys() -> None:
    assert breakdown_key("Film & Television") == "film_and_television"
    assert breakdown_key("OCR Problems") == "ocr_problems"


@pytest.mark.parametrize(
    ("answer", "prediction", "correct", "score", "resolved"),
    [
        ("dancing", "Dancing.", True, 5.0, True),
        ("2", "two", True, 5.0, True),  # number words normalised
        ("yes", "Yes, he is.", True, 5.0, True),
        ("no", "yes", False, 0.0, True),
        ("red", "the shirt is red", True, 4.0, False),
        ("cup", "a mug", False, 0.0, False),
        ("cup", None, False, 0.0, False),
    ],
)
def test_rule_verdict(
    answer: str, prediction: str | None, correct: bool, score: float, resolved: bool
) -> None:
    verdict = open_qa.rule_verdict(answer, prediction)
    assert (verdict.correct, verdict.score, verdict.resolved) == (correct, score, resolved)


def test_judge_reply_parsing_and_prompt() -> None:
    verdict = open_qa.parse_judge_reply("{'pred': 'yes', 'score': 4}")
    assert verdict is not None and (verdict.correct, verdict.score, verdict.source) == (True, 4.0, "judge")
    clamped = open_qa.parse_judge_reply('{"pred": "no", "score": 9.5}')
    assert clamped is not None and (clamped.correct, clamped.score) == (False, 5.0)
    assert open_qa.parse_judge_reply("no verdict") is None
    assert open_qa.parse_judge_reply(None) is None
    system, user = open_qa.judge_messages("what is it", "cup", "mug")
    assert system["role"] == "system" and user["content"].startswith(
        "Please evaluate the following video-based question-answer pair:\n\nQuestion: what is it\n"
        "Correct Answer: cup\nPredicted Answer: mug\n\n"
    )
    assert user["content"].endswith("{'pred': 'yes', 'score': 4.8}.")
