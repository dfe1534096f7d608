"""Small test inputs: file trees (task folders, data files) and images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (UTF-8) and return ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def gradient(size: tuple[int, int] = (7, 5), mode: str = "RGB") -> Image.Image:
    """A small image whose pixels all differ, so a lossless round trip is checkable exactly."""
    width, height = size
    arr = np.zeros((height, width, 3), dtype=np.uint8)
    arr[..., 0] = np.arange(width)[None, :] * 30
    arr[..., 1] = np.arange(height)[:, None] * 40
    arr[..., 2] = 200
    image = Image.fromarray(arr, "RGB")
    return image.convert(mode) if mode != "RGB" else image
