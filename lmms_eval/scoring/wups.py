"""WUPS: Wu-Palmer set similarity of open answers, the NExT-QA open-ended score.

The rule, as the published NExT-QA open-ended task applies it:

1. Normalise an answer (:func:`answer_words`): NLTK word tokens (Punkt sentences, Treebank words),
   Penn tags from NLTK's perceptron tagger; each word lower-cased and lemmatised by WordNet for its
   tag (noun, verb, adjective, adverb; a word with another tag is tagged alone, as a noun when that
   gives no such tag). A lemma WordNet does not know gives way to the Porter stem when WordNet knows
   that, else to the lower-cased word. Lemmas that are stop words are dropped, the rest joined by
   spaces and tokenised again. Stop words: NLTK's English list less :data:`KEPT_STOPWORDS`.
2. Word similarity :func:`wup`: 1 for the same word; 0 when WordNet has no synset for either word;
   else the Wu-Palmer similarity of the two words' first synsets (0 when there is none), times 0.1
   when below the threshold ``alpha``.
3. Set similarity :func:`wups`: the product, over the words of the first list, of each one's best
   similarity to a word of the second; words whose best is 0 are left out, and it is 0 when all are.
4. :func:`wups_score`: the smaller of the two directions; :func:`best_wups_score` takes the best over
   several references (NExT-QA's additional reference answer).

NLTK and its data are loaded on first use: ``python -m nltk.downloader`` with :data:`NLTK_DATA`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_eval.errors import LmmsEvalError

NLTK_DATA = ("wordnet", "stopwords", "punkt_tab", "averaged_perceptron_tagger_eng")
# NLTK path of each data package (the downloader's name -> what nltk.data.find looks for)
_RESOURCES = {
    "wordnet": "corpora/wordnet",
    "stopwords": "corpora/stopwords/english",
    "punkt_tab": "tokenizers/punkt_tab/english/",
    "averaged_perceptron_tagger_eng": "taggers/averaged_perceptron_tagger_eng/",
}
# Words of NLTK's English stop list that NExT-QA keeps: negations, quantities, and prepositions of
# place and time, which answer questions ("on the table", "before he fell").
KEPT_STOPWORDS = frozenset(
    [
        "no",
        "nor",
        "not",
        "few",
        "more",
        "both",
        "same",
        "once",
        "by",
        "against",
        "between",
        "before",
        "after",
        "above",
        "below",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
    ]
)
BELOW_THRESHOLD_FACTOR = 0.1
# Penn tag prefix -> WordNet part of speech
_MORPHY_POS = {"NN": "n", "VB": "v", "JJ": "a", "RB": "r"}

Tokenize = Callable[[str], list[str]]
Tag = Callable[[list[str]], list[tuple[str, str]]]


class NltkDataMissing(LmmsEvalError, LookupError):
    """NLTK or one of its data packages is not installed (a run whose every document fails on it
    stops with this one line)."""


@dataclass(frozen=True)
class Toolkit:
    """What normalisation and similarity need: a tokenizer, a Penn tagger, WordNet, a stop list."""

    tokenize: Tokenize
    tag: Tag
    wordnet: Any  # nltk.corpus.reader.wordnet.WordNetCorpusReader
    lemmatize: Callable[[str, str], str]
    stem: Callable[[str], str]
    stopwords: frozenset[str]


def _install_hint(missing: Iterable[str]) -> str:
    return f"NExT-QA WUPS needs NLTK data ({', '.join(missing)}): python -m nltk.downloader {' '.join(NLTK_DATA)}"


def nltk_toolkit(tokenize: Tokenize | None = None, tag: Tag | None = None) -> Toolkit:
    """NLTK's tools; ``tokenize``/``tag`` replace NLTK's tokenizer/tagger (whose data is then not needed)."""
    try:
        import nltk
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NltkDataMissing("NExT-QA WUPS needs nltk: pip install 'lmms_eval[metrics]'") from exc
    needed = ["wordnet", "stopwords"]
    needed += ["punkt_tab"] if tokenize is None else []
    needed += ["averaged_perceptron_tagger_eng"] if tag is None else []
    missing = [name for name in needed if not _has_resource(nltk, _RESOURCES[name])]
    if missing:
        raise NltkDataMissing(_install_hint(missing))
    from nltk.corpus import stopwords, wordnet
    from nltk.stem import PorterStemmer, WordNetLemmatizer

    if tag is None:
        from nltk.tag.perceptron import PerceptronTagger

        tag = PerceptronTagger().tag
    return Toolkit(
        tokenize=tokenize or nltk.word_tokenize,
        tag=tag,
        wordnet=wordnet,
        lemmatize=WordNetLemmatizer().lemmatize,
        stem=PorterStemmer().stem,
        stopwords=frozenset(stopwords.words("english")) - KEPT_STOPWORDS,
    )


def _has_resource(nltk: Any, path: str) -> bool:
    try:
        nltk.data.find(path)
    except LookupError:
        return False
    return True


@functools.cache
def default_toolkit() -> Toolkit:
    """NLTK's own tokenizer and tagger, built once."""
    return nltk_toolkit()


def _morphy_pos(tag: str) -> str | None:
    return _MORPHY_POS.get(tag[:2])


def lemma(word: str, tag: str, kit: Toolkit) -> str:
    """The WordNet lemma of a lower-cased ``word`` for its Penn ``tag`` (module doc, step 1)."""
    pos = _morphy_pos(tag)
    if pos is None:
        pos = _morphy_pos(kit.tag([word])[0][1]) or "n"
    found = kit.lemmatize(word, pos)
    if kit.wordnet.synsets(found):
        return found
    stem = kit.stem(word)
    return stem if kit.wordnet.synsets(stem) else word


def answer_words(text: str, kit: Toolkit | None = None) -> list[str]:
    """The normalised words of an answer: lemmas less stop words (module doc, step 1)."""
    kit = kit or default_toolkit()
    lemmas = [lemma(word.lower(), tag, kit) for word, tag in kit.tag(kit.tokenize(text))]
    return kit.tokenize(" ".join(word for word in lemmas if word not in kit.stopwords))


def wup(word1: str, word2: str, alpha: float, kit: Toolkit | None = None) -> float:
    """Wu-Palmer similarity of two words' first synsets, down-weighted below ``alpha`` (step 2)."""
    if word1 == word2:
        return 1.0
    kit = kit or default_toolkit()
    synsets1 = kit.wordnet.synsets(word1)
    synsets2 = kit.wordnet.synsets(word2) if synsets1 else []
    if not synsets2:
        return 0.0
    similarity = synsets1[0].wup_similarity(synsets2[0]) or 0.0
    return similarity * BELOW_THRESHOLD_FACTOR if similarity < alpha else similarity


def wups(words1: Sequence[str], words2: Sequence[str], alpha: float, kit: Toolkit | None = None) -> float:
    """Product of each word's best match in ``words2``, words without one left out (step 3)."""
    product, matched = 1.0, False
    for word in words1:
        best = max((wup(word, other, alpha, kit) for other in words2), default=0.0)
        if best > 0:
            product *= best
            matched = True
    return product if matched else 0.0


def wups_score(prediction: str, answer: str, alpha: float = 0.0, kit: Toolkit | None = None) -> float:
    """WUPS@alpha of a prediction against one answer, both normalised (step 4)."""
    kit = kit or default_toolkit()
    predicted, gold = answer_words(prediction, kit), answer_words(answer, kit)
    return min(wups(predicted, gold, alpha, kit), wups(gold, predicted, alpha, kit))


def best_wups_score(
    prediction: str, answers: Iterable[str], alpha: float = 0.0, kit: Toolkit | None = None
) -> float:
    """The best :func:`wups_score` over the reference answers (0 without any)."""
    return max((wups_score(prediction, answer, alpha, kit) for answer in answers), default=0.0)
