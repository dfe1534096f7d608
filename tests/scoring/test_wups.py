"""WUPS (lmms_eval.scoring.wups) on NLTK's WordNet 3.0, built from Debian's wordnet-base.

Expected values were measured with the published lmms-eval 0.7.3 NExT-QA scorer and NLTK's
WordNet 3.0 (pywsd reading NLTK's WordNet), with the same scripted tagger and one-sentence
tokenizer as here (TEST_TAGS in video_fixtures).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import video_fixtures

from lmms_eval.scoring import wups

wordnet_toolkit = video_fixtures.wordnet_toolkit  # the session fixture

# (word1, word2, alpha, published wup)
WUP_CASES = [
    ("dog", "cat", 0.0, 0.8571428571428571),
    ("dog", "cat", 0.9, 0.08571428571428572),  # below the threshold: times 0.1
    ("man", "woman", 0.0, 0.6666666666666666),
    ("red", "table", 0.0, 0.2857142857142857),
    ("dog", "xyzzy", 0.0, 0.0),  # no synset
    ("xyzzy", "xyzzy", 0.9, 1.0),  # the same word
    (".", "dog", 0.0, 0.0),
]
# (answer, prediction, published WUPS@0)
SCORE_CASES = [
    ("running", "The dog is running.", 0.1),  # dog run . against run: wup(dog, run) = 0.1
    ("dogs", "dog", 1.0),
    ("the dog", "a cat", 0.8571428571428571),
    ("running", "ran quickly", 0.14285714285714285),
    ("", "dog", 0.0),
    ("dog", "", 0.0),
]


@pytest.mark.parametrize(("word1", "word2", "alpha", "expected"), WUP_CASES)
def test_wup_matches_published(
    wordnet_toolkit: Any, word1: str, word2: str, alpha: float, expected: float
) -> None:
    assert wups.wup(word1, word2, alpha, wordnet_toolkit) == pytest.approx(expected, abs=1e-12)


def test_wups_skips_unmatched_words_and_takes_the_product(wordnet_toolkit: Any) -> None:
    assert wups.wups(["dog", "run", "."], ["run"], 0.0, wordnet_toolkit) == pytest.approx(0.1)
    assert wups.wups(["run"], ["dog", "run", "."], 0.0, wordnet_toolkit) == 1.0
    assert wups.wups(["dog", "man"], ["cat", "woman"], 0.0, wordnet_toolkit) == pytest.approx(
        wups.wup("dog", "cat", 0.0, wordnet_toolkit) * wups.wup("man", "woman", 0.0, wordnet_toolkit)
    )
    assert wups.wups([], ["dog"], 0.0, wordnet_toolkit) == 0.0
    assert wups.wups(["xyzzy"], ["dog"], 0.0, wordnet_toolkit) == 0.0


def test_answer_words_lemmatise_and_drop_stopwords(wordnet_toolkit: Any) -> None:
    assert wups.answer_words("The dog is running.", wordnet_toolkit) == ["dog", "run", "."]
    assert wups.answer_words("us", wordnet_toolkit) == ["u"]  # the lemma is checked, not the word
    # NExT-QA keeps "on" and "not" although NLTK's list has them
    assert wups.answer_words("not on the table", wordnet_toolkit) == ["not", "on", "table"]


@pytest.mark.parametrize(("answer", "prediction", "expected"), SCORE_CASES)
def test_wups_score_matches_published(
    wordnet_toolkit: Any, answer: str, prediction: str, expected: float
) -> None:
    assert wups.wups_score(prediction, answer, 0.0, wordnet_toolkit) == pytest.approx(expected, abs=1e-12)


def test_best_of_the_references(wordnet_toolkit: Any) -> None:
    # published: answer dog, additional reference cat, prediction woman -> 0.6667 (dog's)
    assert wups.best_wups_score("woman", ["dog", "cat"], 0.0, wordnet_toolkit) == pytest.approx(2 / 3)
    assert wups.best_wups_score("woman", [], 0.0, wordnet_toolkit) == 0.0


def test_missing_data_names_the_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    with pytest.raises(wups.NltkDataMissing, match=r"python -m nltk\.downloader wordnet stopwords punkt_tab"):
        wups.nltk_toolkit()
