"""gigaspeech and tedlium: the recognition prompt, corpus WER after the Whisper English normaliser,
which drops GigaSpeech's punctuation tags (<COMMA>) and TED-LIUM's <unk> (hand-worked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import wav_clip, write_audio_split

pytest.importorskip("jiwer")
pytest.importorskip("whisper_normalizer")

# (reference, transcript): errors / reference words after normalisation
GIGA = [
    ("HELLO <COMMA> WORLD <PERIOD>", "Hello, world."),  # 0 / 2
    ("I'M GONNA GO <QUESTIONMARK>", "I am going to go"),  # "i am going to go": 0 / 5
    ("THE COLOUR <MUSIC> IS RED", "the color is blue"),  # 1 / 4
]
TED = [("hello <unk> world", "hello world"), ("that 's it", "that was it")]  # 0/2, 1/3


@pytest.fixture
def asr_data(dataset_root: Path) -> None:
    rows = [{"audio": wav_clip(200 + 50 * i), "gt": gt} for i, (gt, _) in enumerate(GIGA)]
    write_audio_split(dataset_root, "lmms-lab-audio/gigaspeech", "test", "test", rows)
    write_audio_split(dataset_root, "lmms-lab-audio/gigaspeech", "dev", "validation", rows[:1])
    rows = [{"audio": wav_clip(200 + 50 * i), "gt": gt} for i, (gt, _) in enumerate(TED)]
    write_audio_split(dataset_root, "lmms-lab-audio/tedlium", "tedlium_dev_test", "val", rows)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return dict(GIGA + TED)[doc["gt"]]


def test_word_error_rates(asr_data: None, run_benchmark: Any) -> None:
    results = run_benchmark(["gigaspeech", "tedlium_dev_test"], _answer)["results"]
    assert results["gigaspeech_test"]["wer,none"] == pytest.approx(100 * 1 / 11)
    assert results["gigaspeech_dev"]["wer,none"] == pytest.approx(0.0)
    assert results["tedlium_dev_test"]["wer,none"] == pytest.approx(100 * 1 / 5)


def test_all_published_names_are_indexed() -> None:
    from lmms_eval.tasks import TaskManager

    names = set(TaskManager().all_subtasks)
    sizes = [f"gigaspeech_{s}_{split}" for s in ("xs", "s", "m", "l", "xl") for split in ("dev", "test")]
    assert {*sizes, "gigaspeech_dev", "gigaspeech_test", "tedlium_dev_test", "tedlium_long_form"} <= names
