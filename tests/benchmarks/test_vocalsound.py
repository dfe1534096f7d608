"""vocalsound (test, val): the published instruction, the published keyword rule under
``accuracy`` (the first label named, in a fixed order) and our stricter one under
``accuracy_strict`` (the gold label and no other)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import wav_clip, write_audio_split
from bench_helpers import ScriptedModel

# (gold label, answer, published right?, strict right?)
CASES = [
    ("Laughter", "Laughter.", True, True),
    ("Throat clearing", "Someone is clearing their throat", True, True),  # "throat" is enough
    ("Sigh", "sighing", True, True),
    ("Cough", "It is a cough, not laughter", False, False),  # published: Laughter comes first in its order
    ("Laughter", "Laughter, then a cough", True, False),  # strict: two labels named
    ("Sneeze", "a sniff", False, False),
    ("Laughter", "laugh", False, False),  # "laugh" does not contain "laughter"
]


@pytest.fixture
def vocalsound_data(dataset_root: Path) -> None:
    rows = [
        {"audio": wav_clip(150 + 30 * i), "answer": gold, "spk_id": f"s{i}"}
        for i, (gold, *_) in enumerate(CASES)
    ]
    write_audio_split(dataset_root, "lmms-lab-audio/vocalsound", None, "test", rows)


def _answer(task: str, doc: dict[str, Any]) -> str:
    return CASES[int(doc["spk_id"][1:])][1]


def test_published_and_strict_accuracy(vocalsound_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    results = run_benchmark("vocalsound_test", _answer, model=simple)["results"]["vocalsound_test"]
    assert results["accuracy,none"] == round(sum(c[2] for c in CASES) / len(CASES), 5)  # rounded as published
    assert results["accuracy_strict,none"] == pytest.approx(sum(c[3] for c in CASES) / len(CASES))
    assert (sum(c[2] for c in CASES), sum(c[3] for c in CASES)) == (4, 3)
    text, [audio] = simple.seen["vocalsound_test"][0]
    assert text == "Classify the human vocal sound to VocalSound in English: " and "array" in audio
