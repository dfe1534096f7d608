"""common_voice_15_en: the published recognition prompt, the recording handed to simple and chat
models, corpus-level WER after the Whisper English normaliser (hand-worked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import wav_clip, write_audio_split
from bench_helpers import ScriptedModel

pytest.importorskip("jiwer")
pytest.importorskip("whisper_normalizer")

REPO = "lmms-lab-audio/common_voice_15"
PROMPT = "Please recognize the speech and only output the recognized content:"

# (reference sentence, scripted transcript, word errors after normalisation, reference words)
CASES = [
    ("Hello, World!", "hello world", 0, 2),
    ("The colour of the sea is blue.", "The color of the see is blue", 1, 7),  # sea -> see
    ("He bought twenty-one apples.", "He bought 21 apples and pears", 2, 4),  # "and pears" inserted
    ("Where is the station?", "<|en|>Where's station", 1, 4),  # where is kept; "the" deleted
]
WER = 100 * 4 / 17  # corpus level: 4 errors in 17 words


@pytest.fixture
def common_voice_data(dataset_root: Path) -> None:
    rows = [
        {"audio": wav_clip(250 + 30 * i, rate=48000), "sentence": gt, "locale": "en", "path": f"cv_{i}.mp3"}
        for i, (gt, *_) in enumerate(CASES)
    ]
    write_audio_split(dataset_root, REPO, "en", "test", rows)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for gt, out, *_ in CASES if gt == doc["sentence"])


def test_corpus_wer_after_the_english_normaliser(common_voice_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("common_voice_15_en", _answer)["results"]
    assert results["common_voice_15_en"]["wer,none"] == pytest.approx(WER)


def test_prompt_and_audio(common_voice_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("common_voice_15_en", _answer, model=simple)
    text, [audio] = simple.seen["common_voice_15_en"][0]
    assert text == PROMPT
    assert sorted(audio) == ["array", "sampling_rate"] and audio["sampling_rate"] == 48000
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("common_voice_15_en", _answer, model=chat)
    [message] = chat.seen["common_voice_15_en"][0]
    assert [p["type"] for p in message["content"]] == ["audio", "text"]
    assert message["content"][1]["text"] == PROMPT
