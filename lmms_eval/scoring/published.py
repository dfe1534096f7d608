"""The published rules shared by several tasks: the seeded random fallback (MMMU-style letter
parsers, MMAU) and the MMStar letter reader (:func:`published_mcq_letter`).

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
# A letter followed by one of these (or by nothing) stands for an option in the published reader.
_STANDALONE_FOLLOWERS = " .):"


def published_mcq_letter(text: object, letters: str = "ABCD") -> str | None:
    """The option letter the published MMStar reader takes from ``text`` (None: it finds none).

    Reproduced from the published package's behaviour (measured on thousands of phrasings, see
    ``bench/parity.md``); case-sensitive throughout, in this order:

    1. the ends are stripped of whitespace and of ``, . ! ? ; : ' "``, one kind after another;
    2. a leading letter that is not followed by another letter counts: ``"A cat sits"`` is A,
       ``"C is wrong, so B"`` is C, ``"B1"`` is B (but ``"Blue"`` goes on to the next rules);
    3. after ``answer is`` (any case), the last option letter there: ``"The answer is B, not C"``
       is C, ``"answer is Blue"`` is B;
    4. the last letter followed by a space, ``.``, ``)``, ``:`` or the end: ``"Both A and C"`` is C;
    5. the last option letter anywhere, even inside a word: ``"Answer: E"`` is A, ``"Blue"`` is B.

    Known residual difference: a letter followed by a full stop and a word (``"C.The A cat"``)
    is C there and A here.
    """
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
    standalone = [
        c for i, c in enumerate(s) if c in letters and (i + 1 == len(s) or s[i + 1] in _STANDALONE_FOLLOWERS)
    ]
    if standalone:
        return standalone[-1]
    anywhere = [c for c in s if c in letters]
    return anywhere[-1] if anywhere else None
