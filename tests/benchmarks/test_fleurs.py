"""fleurs (en, cmn_hans_cn, yue_hant_hk): the published recognition prompt, the recording handed
to the model, corpus error rates under ``wer`` (hand-worked; the published scorer gives the same
values on these pairs): WER after the Whisper English normaliser, Mandarin CER with numerals read,
Cantonese CER after conversion to simplified characters with numerals kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import wav_clip, write_audio_split
from bench_helpers import ScriptedModel

pytest.importorskip("jiwer")
pytest.importorskip("whisper_normalizer")
pytest.importorskip("zhconv")

REPO = "lmms-lab-audio/fleurs"
PROMPT = "Please recognize the speech and only output the recognized content:"

# (reference, transcript, errors, reference tokens)
EN = [
    ("Hello, World!", "hello world", 0, 2),
    ("The colour of the sea is blue.", "The color of the see is blue", 1, 7),  # sea -> see
    ("He bought twenty-one apples.", "He bought 21 apples and pears", 2, 4),  # two insertions
    ("Where is the station?", "<|en|>Where's station", 1, 4),  # "the" deleted
]
CMN = [
    ("你好，世界！", "你好世界", 0, 4),
    ("我有三个苹果。", "我有3个苹果", 0, 6),  # 3 is read 三
    ("這是一個測試", "这是一个测试", 4, 6),  # Mandarin: traditional characters are not converted
    ("我爱 Python 编程", "我爱pithon编程", 1, 10),
    ("今天是2020年", "今天是二零二零年", 0, 8),  # a year digit by digit
]
YUE = [
    ("你好，世界！", "你好世界", 0, 4),
    ("我有三個蘋果。", "我有3个苹果", 1, 6),  # 個/个 and 蘋/苹 agree once simplified; 3 stays 3
    ("這是一個測試", "这是一个测试", 0, 6),
    ("佢哋喺度食緊飯", "佢地喺度食紧饭", 1, 7),  # 哋 -> 地
    ("今日係2020年", "今日系二零二零年", 4, 8),  # 係 -> 系; the four digits differ
]
CONFIGS = {
    "en_us": ("English", EN),
    "cmn_hans_cn": ("Mandarin Chinese", CMN),
    "yue_hant_hk": ("Cantonese Chinese", YUE),
}
EXPECTED = {"fleurs_en": 100 * 4 / 17, "fleurs_cmn_hans_cn": 100 * 5 / 34, "fleurs_yue_hant_hk": 100 * 6 / 31}


@pytest.fixture
def fleurs_data(dataset_root: Path) -> None:
    for config, (language, cases) in CONFIGS.items():
        rows = [
            {
                "audio": wav_clip(200 + 40 * i),
                "transcription": gt,
                "language": language,
                "path": f"{config}_{i}.wav",
            }
            for i, (gt, *_) in enumerate(cases)
        ]
        write_audio_split(dataset_root, REPO, config, "test", rows)


def _answer(task: str, doc: dict[str, Any]) -> str:
    cases = next(c for language, c in CONFIGS.values() if language == doc["language"])
    return next(out for gt, out, *_ in cases if gt == doc["transcription"])


def test_hand_worked_counts() -> None:
    for task, cases in (("fleurs_en", EN), ("fleurs_cmn_hans_cn", CMN), ("fleurs_yue_hant_hk", YUE)):
        assert 100 * sum(c[2] for c in cases) / sum(c[3] for c in cases) == pytest.approx(EXPECTED[task])


def test_error_rates_per_language(fleurs_data: None, run_benchmark: Any) -> None:
    results = run_benchmark(list(EXPECTED), _answer)["results"]
    for task, rate in EXPECTED.items():
        assert results[task]["wer,none"] == pytest.approx(rate), task


def test_group_holds_english_and_mandarin(fleurs_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("fleurs", _answer)["results"]
    assert {"fleurs_en", "fleurs_cmn_hans_cn"} <= set(results) and "fleurs_yue_hant_hk" not in results


def test_prompt_and_audio(fleurs_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("fleurs_yue_hant_hk", _answer, model=simple, limit=1)
    text, [audio] = simple.seen["fleurs_yue_hant_hk"][0]
    assert text == PROMPT and sorted(audio) == ["array", "sampling_rate"] and audio["sampling_rate"] == 16000


def test_cantonese_characters() -> None:
    from lmms_eval.scoring.asr import cantonese_characters

    assert cantonese_characters("這是 一個，測試！ABC 3") == list("这是一个测试abc3")
