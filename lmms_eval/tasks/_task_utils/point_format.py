"""``parse_point2d``: the ``[x, y]`` / ``(x, y)`` points of a model's answer, in pixels."""

from __future__ import annotations

import re
from typing import Any

_PAIR = re.compile(r"[\[(]\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*[\])]")


def _to_pixels(value: float, size: int) -> float:
    """A coordinate in [0, 1] is a fraction of ``size``; a larger one is on a 0-1000 grid."""
    return value * size if value <= 1 else value / 1000 * size


def parse_point2d(text: str, width: int, height: int) -> Any:
    """Every coordinate pair in ``text`` as an ``(n, 2)`` integer array of pixel points.

    Pairs in [0, 1] are fractions of the image size; larger values are on the 0-1000 grid used by
    pointing models. No pair gives an empty array.
    """
    import numpy as np

    points = [
        (int(_to_pixels(float(x), width)), int(_to_pixels(float(y), height)))
        for x, y in _PAIR.findall(text or "")
    ]
    return np.array(points, dtype=int).reshape(-1, 2) if points else np.array([])
