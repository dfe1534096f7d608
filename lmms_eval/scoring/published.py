"""The random stream of the published rules' fallbacks (MMMU-style letter parsers, MMAU).

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
