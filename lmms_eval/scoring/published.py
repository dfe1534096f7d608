"""The published rules shared by several tasks: the seeded random fallback (MMMU-style letter
parsers, MMAU) and the MMStar / MLVU letter reader (:func:`published_mcq_letter`, Video-MME's variant
:func:`published_videomme_letter`).

The published package draws a random option letter when it cannot read one, from Python's global
``random`` seeded with the first ``--seed`` value (default 0): same seed, same letters. We draw the
same letters from our own ``random.Random`` seeded with the same value, so the published result
keys match theirs draw for draw while the global ``random`` is left alone. The evaluator reseeds
it at the start of each run (:func:`reseed`); docs are scored in the same order as there (task by
task, doc by doc), so the n-th draw of a run is the same on both sides.

The stricter ``*_strict`` keys never draw: an answer that names no option scores 0 there.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

DEFAULT_SEED = 0  # the published default --seed (its first value)

_stream = {"rng": random.Random(DEFAULT_SEED)}


def reseed(seed: int | None) -> None:
    """Start the stream again from ``seed`` (``None``: the published default, 0)."""
    _stream["rng"] = random.Random(DEFAULT_SEED if seed is None else seed)


def fallback_choice(options: Sequence[str]) -> str:
    """The next random option, as the published ``random.choice(options)`` draws it."""
    return _stream["rng"].choice(list(options))


# The ends of an answer the published letter reader strips, one character kind after another
# (with whitespace around each): ",A" and ",.A" lose their prefix, ".,A" keeps its comma.
_EDGE_STRIP_ORDER = ",.!?;:'\""
# After the leading letter, "answer is" and the final letter, the published reader looks for these
# shapes of an option letter in this order; within one shape the last occurrence wins.
_LETTER_SHAPES = ("({})", "{}.", "{}:", "{})", "{} ")


def _letter_by_shapes(text: object, letters: str, shapes: tuple[str, ...]) -> str | None:
    """The published reader (:func:`published_mcq_letter`) with the letter shapes ``shapes``."""
    if not isinstance(text, str):
        return None
    s = text.strip()
    for ch in _EDGE_STRIP_ORDER:
        s = s.strip(ch).strip()
    if s and s[0] in letters and (len(s) == 1 or not s[1].isalpha()):
        return s[0]
    lowered = s.lower()
    if "answer is" in lowered:
        after = [c for c in s[lowered.index("answer is") + len("answer is") :] if c in letters]
        if after:
            return after[-1]
    if s and s[-1] in letters and (len(s) == 1 or not s[-2].isalpha()):
        return s[-1]
    for shape in shapes:
        found = [(s.rfind(shape.format(c)), c) for c in letters if shape.format(c) in s]
        if found:
            return max(found)[1]
    anywhere = [c for c in s if c in letters]
    return anywhere[-1] if anywhere else None


def published_mcq_letter(text: object, letters: str = "ABCD") -> str | None:
    """The option letter the published MMStar / MLVU reader takes from ``text`` (None: none).

    Reproduced from the published package's behaviour (measured on thousands of phrasings, see
    ``bench/parity.md``); case-sensitive throughout, in this order:

    1. the ends are stripped of whitespace and of ``, . ! ? ; : ' "``, one kind after another;
    2. a leading letter that is not followed by another letter counts: ``"A cat sits"`` is A,
       ``"C is wrong, so B"`` is C, ``"B1"`` is B (but ``"Blue"`` goes on to the next rules);
    3. after ``answer is`` (any case), the last option letter there: ``"The answer is B, not C"``
       is C, ``"answer is Blue"`` is B;
    4. a final letter after a non-letter: ``"Both A and C"`` is C (``"xB"`` goes on);
    5. the last ``(X)``, else the last ``X.``, else ``X:``, else ``X)``, else ``X`` and a space:
       ``"x (A) y B. z"`` is A, ``"x B. y A) z"`` is B, ``"x A) y B z"`` is A;
    6. the last option letter anywhere, even inside a word: ``"Answer: E"`` is A, ``"Blue"`` is B.

    Residual differences: about 1 in 500 random strings that mix these shapes with letters glued
    to words (``"dcanswer is (A)blueCAnswer"``: C there, A here).
    """
    return _letter_by_shapes(text, letters, _LETTER_SHAPES)


def published_videomme_letter(text: object, letters: str = "ABCD") -> str | None:
    """The option letter the published Video-MME reader takes from ``text`` (None: none).

    :func:`published_mcq_letter` with a space on both sides of its last shape (``" X "``): a
    letter glued to the word before it (``"blue(A catB."``) is no candidate there, so that answer
    is B here and A in MMStar.
    """
    return _letter_by_shapes(text, letters, (*_LETTER_SHAPES[:-1], " {} "))


def published_letter_or_text_match(output: object, gold: object) -> bool:
    """The published RealWorldQA rule: whether ``output`` answers ``gold``.

    A gold that is one letter A-D (after stripping, any case) is compared with the letter
    :func:`published_mcq_letter` reads (``"(B)"``, ``"AB"`` and ``"B cat"`` are B; ``"b"`` is
    none); any other gold, stripped and lower-cased, must equal the whole output stripped, with
    trailing full stops removed and lower-cased (``"Red."`` is ``red``; ``"red!"`` and ``"(E)"``
    are not ``red`` and ``E``).
    """
    if not isinstance(output, str):
        return False
    expected = str(gold).strip()
    if len(expected) == 1 and expected.upper() in "ABCD":
        return published_mcq_letter(output) == expected.upper()
    return output.strip().rstrip(".").lower() == expected.lower()
