"""common_voice_15 (zh-CN, en, fr): the published recognition prompt and per-model post prompts,
the recording handed to simple and chat models, corpus-level error rates (hand-worked, equal to
the published scorer's on the same pairs): WER after the Whisper English normaliser (en), after the
Whisper basic normaliser (fr), and per character after the Chinese normalisation (zh-CN)."""

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

# French, Whisper basic normaliser: lower case, punctuation and bracketed text removed, accents kept
FR_CASES = [
    ("Bonjour, le Monde !", "bonjour le monde", 0, 3),
    ("C'est l'été.", "c'est l'ete", 1, 4),  # c est l été: été -> ete
    ("Il a vingt-et-un ans.", "Il a 21 ans", 3, 6),  # no number normalisation: vingt -> 21, "et un" deleted
    ("Le chat (noir) dort.", "<|fr|>Le chat noir dort", 1, 3),  # "(noir)" dropped from the reference
]
FR_WER = 100 * 5 / 16  # the published scorer: 31.25

# Chinese, per character: spaces and punctuation dropped, numerals read, letters lower case
ZH_CASES = [
    ("你好，世界！", "你好世界", 0, 4),
    ("我有三个苹果。", "我有3个苹果", 0, 6),  # 3 -> 三
    ("這是一個測試", "这是一个测试", 4, 6),  # traditional characters are not converted
    ("我爱 Python 编程", "<|zh|>我爱pithon编程", 1, 10),  # y -> i, one character
    ("今天是2020年", "今天是二零二零年", 0, 8),  # a year is read digit by digit
]
ZH_CER = 100 * 5 / 34  # the published scorer: 14.7059


BY_LOCALE = {"en": CASES, "fr": FR_CASES, "zh-CN": ZH_CASES}


@pytest.fixture
def common_voice_data(dataset_root: Path) -> None:
    for locale, cases in BY_LOCALE.items():
        rows = [
            {
                "audio": wav_clip(250 + 30 * i, rate=48000),
                "sentence": gt,
                "locale": locale,
                "path": f"cv_{i}.mp3",
            }
            for i, (gt, *_) in enumerate(cases)
        ]
        write_audio_split(dataset_root, REPO, locale, "test", rows)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(out for gt, out, *_ in BY_LOCALE[doc["locale"]] if gt == doc["sentence"])


def test_hand_worked_counts() -> None:
    for cases, rate in ((CASES, WER), (FR_CASES, FR_WER), (ZH_CASES, ZH_CER)):
        assert 100 * sum(c[2] for c in cases) / sum(c[3] for c in cases) == pytest.approx(rate)


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


def test_group_scores_each_language(common_voice_data: None, run_benchmark: Any) -> None:
    """French by words after the basic normaliser, Chinese by characters; the key stays ``wer``."""
    results = run_benchmark("common_voice_15", _answer)["results"]
    assert results["common_voice_15_en"]["wer,none"] == pytest.approx(WER)
    assert results["common_voice_15_fr"]["wer,none"] == pytest.approx(FR_WER)
    assert results["common_voice_15_zh-CN"]["wer,none"] == pytest.approx(ZH_CER)


@pytest.mark.parametrize("locale", ["en", "fr", "zh-CN"])
def test_qwen2_audio_post_prompt(common_voice_data: None, run_benchmark: Any, locale: str) -> None:
    """qwen2_audio gets the language token after the prompt; other models the bare prompt."""
    task = f"common_voice_15_{locale}"
    model = ScriptedModel(_answer, chat=False)
    model._model_name = "qwen2_audio"  # the model id tasks select their prompts by
    run_benchmark(task, _answer, model=model)
    text, _ = model.seen[task][0]
    assert text == f"{PROMPT} <|{locale.split('-')[0]}|>"
    other = ScriptedModel(_answer, chat=False)
    run_benchmark(task, _answer, model=other)
    assert other.seen[task][0][0] == PROMPT


# text -> its characters as scored, as the published Chinese normalisation gives them
CHINESE = [
    ("我有123个", "我有一百二十三个"),
    ("2020年3月5日", "二零二零年三月五日"),
    ("50%的人", "百分之五十的人"),
    ("3.5元", "三点五元"),
    ("2/3", "三分之二"),
    ("10:30", "十三十"),
    ("110 和 101", "一百一十和一百零一"),
    ("1000", "一零零零"),
    ("电话13812345678", "电话一三八一二三四五六七八"),
    ("007", "零七"),
    ("0.05", "零点零五"),
    ("ＡＢＣ１２３", "ａｂｃ一百二十三"),
    ("《书》“引号”，好+好", "书引号好好"),
    ("¥100 和 30℃", "¥一百和三十℃"),
    ("COVID-19", "covid十九"),
    ("3 5", "三十五"),  # spaces go before numbers are read
]


@pytest.mark.parametrize(("text", "characters"), CHINESE)
def test_chinese_characters(text: str, characters: str) -> None:
    from lmms_eval.scoring.asr import chinese_characters, normalise_transcript

    assert "".join(chinese_characters(text)) == characters
    assert normalise_transcript(f"<|zh|>{text}", "zh") == " ".join(characters)
