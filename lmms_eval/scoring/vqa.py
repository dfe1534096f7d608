"""VQA answer normalisation (the EvalAI rules) and the 10-annotator VQA soft accuracy.

Normalisation, as the VQA evaluation defines it:

1. *Tokenise* (full normaliser only): lower-case, drop ``,`` and ``?``, write ``'s`` as `` 's``,
   turn newlines and tabs into spaces, strip.
2. *Punctuation*: each mark of :data:`PUNCTUATION` is deleted when the text has it next to a space
   or the text holds a digit-comma-digit group, and is replaced by a space otherwise. Then every
   ``.`` not followed by a digit is deleted (so ``"5."`` becomes ``"5"`` but ``"5.0"`` stays).
3. *Digits and articles*: lower-case, split on whitespace, number words ``zero``/``none`` to
   ``ten`` become digits, the articles ``a``/``an``/``the`` are dropped, and contractions written
   without their apostrophes are restored (``dont`` -> ``don't``); words joined by single spaces.

TextVQA normalises prediction and answers with all three steps (:func:`normalize_answer`);
VQAv2 with steps 2 and 3 (:func:`normalize_vqav2`). Soft accuracy: for each of the N human
answers, ``min(1, matches among the other N-1 answers / 3)``; the score is the mean of these N
values, so with 10 answers 1, 2, 3 and 4+ matching annotators score 0.3, 0.6, 0.9 and 1.0.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

PUNCTUATION: tuple[str, ...] = tuple(';/[]"{}()=+\\_-><@`,?!')  # each character is one mark
ARTICLES = frozenset({"a", "an", "the"})
NUMBER_WORDS: Mapping[str, str] = MappingProxyType(
    {
        "none": "0",
        "zero": "0",
        "one": "1",
        "two": "2",
        "three": "3",
        "four": "4",
        "five": "5",
        "six": "6",
        "seven": "7",
        "eight": "8",
        "nine": "9",
        "ten": "10",
    }
)

# Canonical contractions. A word equal to one of these with some or all of its apostrophes left
# out is rewritten to the canonical form ("dont", "couldnt've", "couldn'tve" -> ...). Contractions
# whose apostrophe-free spelling is a common word (it's, we'll, we're, let's, she'd, ...) are not
# listed, so "its" or "well" stay as they are; "cant" and "wont" are rewritten, as in the VQA rules.
_CANONICAL_TEXT = (
    "ain't aren't can't could've couldn't couldn't've didn't doesn't don't hadn't hadn't've "
    "hasn't haven't he'd he'd've he's how'd how'll how's isn't it'd it'd've it'll ma'am mightn't "
    "mightn't've might've mustn't must've needn't not've o'clock oughtn't 'ow's'at shan't "
    "she'd've she's should've shouldn't shouldn't've somebody'd somebody'd've somebody'll "
    "somebody's someone'd someone'd've someone'll someone's something'd something'd've "
    "something'll that's there'd there'd've there're there's they'd they'd've they'll they're "
    "they've 'twas wasn't we'd've we've weren't what'll what're what's what've when's where'd "
    "where's where've who'd who'd've who'll who's who've why'll why're why's won't would've "
    "wouldn't wouldn't've y'all y'all'll y'all'd've you'd you'd've you'll you're you've"
)
_CANONICAL = tuple(_CANONICAL_TEXT.split())

_PERIOD_NOT_BEFORE_DIGIT = re.compile(r"\.(?!\d)")
_DIGIT_COMMA_DIGIT = re.compile(r"\d,\d")


def _without_apostrophes(form: str) -> Iterable[str]:
    """``form`` with every non-empty subset of its apostrophes removed."""
    positions = [i for i, char in enumerate(form) if char == "'"]
    for size in range(1, len(positions) + 1):
        for dropped in itertools.combinations(positions, size):
            yield "".join(char for i, char in enumerate(form) if i not in dropped)


def _contraction_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for form in _CANONICAL:
        for variant in _without_apostrophes(form):
            table[variant] = form
    return table


CONTRACTIONS: Mapping[str, str] = MappingProxyType(_contraction_table())


def _tokenize(text: str) -> str:
    text = text.lower().replace(",", "").replace("?", "").replace("'s", " 's")
    return text.replace("\n", " ").replace("\t", " ").strip()


def process_punctuation(text: str) -> str:
    """Step 2 of the module docstring: punctuation marks deleted or spaced, stray periods deleted."""
    delete_all = _DIGIT_COMMA_DIGIT.search(text) is not None
    out = text
    for mark in PUNCTUATION:
        if delete_all or f"{mark} " in text or f" {mark}" in text:
            out = out.replace(mark, "")
        else:
            out = out.replace(mark, " ")
    return _PERIOD_NOT_BEFORE_DIGIT.sub("", out)


def process_digit_article(text: str) -> str:
    """Step 3 of the module docstring: number words to digits, articles dropped, contractions fixed."""
    words = (NUMBER_WORDS.get(word, word) for word in text.lower().split())
    kept = [CONTRACTIONS.get(word, word) for word in words if word not in ARTICLES]
    return " ".join(kept)


def normalize_answer(text: Any) -> str:
    """The full EvalAI normaliser (steps 1-3), used by TextVQA for prediction and answers."""
    return process_digit_article(process_punctuation(_tokenize(str(text))))


def normalize_vqav2(text: Any) -> str:
    """The VQAv2 normaliser: newlines/tabs to spaces and strip, then steps 2 and 3 only."""
    cleaned = str(text).replace("\n", " ").replace("\t", " ").strip()
    return process_digit_article(process_punctuation(cleaned))


def soft_accuracy(prediction: str, answers: Sequence[str]) -> float:
    """VQA accuracy of an already-normalised prediction against already-normalised human answers.

    Leave-one-out: for each answer ``i``, ``min(1, #{j != i : answers[j] == prediction} / 3)``;
    the mean of these values. No answers score 0.
    """
    if not answers:
        return 0.0
    total_matches = sum(answer == prediction for answer in answers)
    per_annotator = [min(1.0, (total_matches - (answer == prediction)) / 3) for answer in answers]
    return sum(per_annotator) / len(per_annotator)


def textvqa_accuracy(prediction: Any, answers: Sequence[Any]) -> float:
    """TextVQA: the full normaliser on both sides, then :func:`soft_accuracy`."""
    return soft_accuracy(normalize_answer(prediction), [normalize_answer(a) for a in answers])


def vqav2_accuracy(prediction: Any, answers: Sequence[Any]) -> float:
    """VQAv2: the VQAv2 normaliser on both sides, then :func:`soft_accuracy`.

    ``answers`` are strings or the dataset's ``{"answer": ..., ...}`` dicts.
    """
    texts = [a["answer"] if isinstance(a, dict) else a for a in answers]
    return soft_accuracy(normalize_vqav2(prediction), [normalize_vqav2(t) for t in texts])
