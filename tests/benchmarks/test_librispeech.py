"""librispeech_test_clean / test_other: the published prompt, audio handed to simple and chat models,
corpus-level WER after the Whisper English normaliser (hand-worked), and the tiny Whisper end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import build_tiny_whisper, speak, tone
from bench_helpers import ScriptedModel

from lmms_eval.media import encode_wav, load_audio

pytest.importorskip("jiwer")
pytest.importorskip("whisper_normalizer")

REPO = "lmms-lab-audio/librispeech"
PROMPT = "Please recognize the speech and only output the recognized content:"

# (reference, scripted transcript, word errors after normalisation, reference words)
CASES = [
    ("THE CAT SAT ON THE MAT", "The cat sat on the mat.", 0, 6),
    (
        "MISTER SMITH HAS TWENTY ONE COLOURS",
        "Mr. Smith has 21 colors",
        0,
        5,
    ),  # both: mister smith has 21 colors
    ("HELLO WORLD THIS IS A TEST", "<|en|>hello word this is test", 2, 6),  # world->word, "a" deleted
    ("I CANNOT GO THERE", "I can't go, uh, there", 2, 4),  # cannot -> can + inserted not; "uh" dropped
]
CLEAN_WER = 100 * 4 / 21  # corpus level: 4 errors in 21 words (a mean of utterance rates is 20.8)


def _write_split(dataset_root: Path, split: str, rows: list[dict[str, Any]]) -> None:
    """The Hub layout of one config, its ``audio`` column an ``Audio`` feature (written as its
    ``{"bytes", "path"}`` storage and cast: encoding through ``datasets`` needs torchcodec)."""
    import datasets

    text = datasets.Value("string")
    storage = {"bytes": datasets.Value("binary"), "path": text}
    table = datasets.Dataset.from_list(
        rows, features=datasets.Features({"audio": storage, "gt": text, "task": text, "source": text})
    ).cast_column("audio", datasets.Audio())
    folder = dataset_root / REPO / split
    folder.mkdir(parents=True, exist_ok=True)
    table.to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))


def _clip(text: str) -> bytes:
    audio = speak(text.lower()) or tone(200 + 40 * len(text), 0.5, rate=22050)
    return encode_wav(audio["array"], audio["sampling_rate"])


@pytest.fixture
def librispeech_data(dataset_root: Path) -> None:
    for split, cases in (("librispeech_test_clean", CASES), ("librispeech_test_other", CASES[2:3])):
        rows = [
            {"audio": {"bytes": _clip(gt), "path": f"{i}.wav"}, "gt": gt, "task": "ASR_en", "source": split}
            for i, (gt, *_) in enumerate(cases)
        ]
        _write_split(dataset_root, split, rows)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(answer for gt, answer, *_ in CASES if gt == doc["gt"])


def test_corpus_wer_after_the_english_normaliser(librispeech_data: None, run_benchmark: Any) -> None:
    results = run_benchmark(["librispeech_test_clean", "librispeech_test_other"], _answer)["results"]
    assert results["librispeech_test_clean"]["wer,none"] == pytest.approx(CLEAN_WER)
    assert results["librispeech_test_other"]["wer,none"] == pytest.approx(100 * 2 / 6)


def test_simple_models_get_the_audio_dict_and_chat_models_an_audio_part(
    librispeech_data: None, run_benchmark: Any
) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("librispeech_test_other", _answer, model=simple)
    text, visuals = simple.seen["librispeech_test_other"][0]
    assert text == PROMPT
    [audio] = visuals
    assert sorted(audio) == ["array", "sampling_rate"] and audio["sampling_rate"] == 22050
    assert audio["array"].ndim == 1 and len(audio["array"]) > 0
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("librispeech_test_other", _answer, model=chat)
    [message] = chat.seen["librispeech_test_other"][0]
    assert [p["type"] for p in message["content"]] == ["audio", "text"]
    assert message["content"][1]["text"] == PROMPT
    assert load_audio(message["content"][0]["url"], sampling_rate=16000).sampling_rate == 16000


def test_tiny_whisper_end_to_end(librispeech_data: None, run_benchmark: Any, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from lmms_eval.models import get_model

    folder = build_tiny_whisper(str(tmp_path / "whisper"))
    whisper = get_model("whisper").create_from_arg_string(
        f"pretrained={folder},language=en,device=cpu,batch_size=2", {}
    )
    answered: list[Any] = []
    generate = whisper.generate_until
    whisper.generate_until = lambda requests: (
        answered.extend(generate(requests)) or answered[-len(requests) :]
    )
    out = run_benchmark("librispeech_test_clean", _answer, model=whisper, gen_kwargs="max_new_tokens=4")
    assert len(answered) == 4 and all(0 < (a.token_counts.output_tokens or 0) <= 4 for a in answered)
    assert "failed" not in out["n-samples"]["librispeech_test_clean"]
    assert out["results"]["librispeech_test_clean"]["wer,none"] >= 0.0
