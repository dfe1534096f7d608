"""covost2 (en_zh, zh_en; test and dev): the published instruction per model, corpus BLEU after
the published normalisation (hand-worked from n-gram counts; the published scorer gives the same
values on these pairs)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import wav_clip, write_audio_split
from bench_helpers import ScriptedModel

pytest.importorskip("sacrebleu")
pytest.importorskip("whisper_normalizer")

# English: after the Whisper English normaliser every pair is identical -> BLEU 100
EN = [
    ("He bought twenty-one apples, don't you think?", "he bought 21 apples do not you think"),
    ('Mr. Smith said: "hello-world" 5%', "mister smith said hello world five percent"),
]
# Chinese: characters after numerals are read and punctuation dropped -> identical -> BLEU 100
ZH = [("他买了21个苹果（红色）。", "他买了二十一个苹果红色"), ("这是“测试”…好吗？", "这是测试好吗")]


def _brevity_free_bleu(precisions: list[tuple[int, int]]) -> float:
    return 100 * math.exp(sum(math.log(m / t) for m, t in precisions) / 4)


def test_bleu_hand_worked_english() -> None:
    """ "the cat sat on the mat" (6 words) against "a cat sat on the mat": 5/6 unigrams, 4/5
    bigrams, 3/4 trigrams, 2/3 four-grams; same length, no brevity penalty."""
    from lmms_eval.scoring.translation import corpus_translation_bleu

    got = corpus_translation_bleu(["The cat sat on the mat."], ["A cat sat on the mat!"], "en")
    assert got == pytest.approx(_brevity_free_bleu([(5, 6), (4, 5), (3, 4), (2, 3)]))
    assert corpus_translation_bleu([r for r, _ in EN], [h for _, h in EN], "en") == pytest.approx(100)


def test_bleu_hand_worked_chinese() -> None:
    """ "我非常喜欢红茶" against "我非常喜欢绿茶。" per character (the full stop is dropped): the
    sixth character differs, so 6/7 unigrams, 4/6 bigrams, 3/5 trigrams, 2/4 four-grams match."""
    from lmms_eval.scoring.translation import corpus_translation_bleu

    got = corpus_translation_bleu(["我非常喜欢绿茶。"], ["我非常喜欢红茶"], "zh")
    assert got == pytest.approx(_brevity_free_bleu([(6, 7), (4, 6), (3, 5), (2, 4)]))
    assert corpus_translation_bleu([r for r, _ in ZH], [h for _, h in ZH], "zh") == pytest.approx(100)


@pytest.fixture
def covost_data(dataset_root: Path) -> None:
    for split in ("test", "dev"):
        en_zh = [{"audio": wav_clip(300 + 20 * i), "translation": r} for i, (r, _) in enumerate(ZH)]
        write_audio_split(dataset_root, "lmms-lab-audio/covost2_en-zh", "en_zh", split, en_zh)
        zh_en = [{"audio": wav_clip(300 + 20 * i), "gt": r} for i, (r, _) in enumerate(EN)]
        write_audio_split(dataset_root, "lmms-lab-audio/covost2", "zh_en", split, zh_en)


def _answer(task: str, doc: dict[str, Any]) -> str:
    if "translation" in doc:
        return dict(ZH)[doc["translation"]]
    return dict(EN)[doc["gt"]] if not task.endswith("dev") else "something else entirely"


def test_group_scores_both_directions(covost_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("covost2", _answer)["results"]
    assert results["covost2_en_zh_test"]["bleu,none"] == pytest.approx(100)
    assert results["covost2_en_zh_dev"]["bleu,none"] == pytest.approx(100)
    assert results["covost2_zh_en_test"]["bleu,none"] == pytest.approx(100)
    assert results["covost2_zh_en_dev"]["bleu,none"] == pytest.approx(0)


def test_instruction_per_model(covost_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark(["covost2_en_zh_test", "covost2_zh_en_test"], _answer, model=simple, limit=1)
    assert (
        simple.seen["covost2_en_zh_test"][0][0]
        == "Translate the speech into Chinese and only output the translation:"
    )
    assert (
        simple.seen["covost2_zh_en_test"][0][0]
        == "Translate the speech into English and only output the translation:"
    )
    qwen = ScriptedModel(_answer, chat=False)
    qwen._model_name = "qwen2_audio"
    run_benchmark("covost2_zh_en_test", _answer, model=qwen, limit=1)
    assert qwen.seen["covost2_zh_en_test"][0][0].endswith("translation: <|zh|>")
