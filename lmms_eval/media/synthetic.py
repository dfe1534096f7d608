"""Synthetic videos whose frames carry their own index, for tests and benchmarks.

:func:`write_index_video` encodes a clip (H.264 by default, with PyAV) in which frame ``i`` shows
the 16 bits of ``i`` as a grid of black and white cells (2 rows of 8 cells, the most significant
bit first); :func:`frame_index` reads the index back from a decoded frame, so a test can tell
exactly which frames a reader returned, even after lossy encoding and resizing. Needs the ``video``
extra (``av``) and numpy.
"""

from __future__ import annotations

import os
from typing import Any

from lmms_eval.media.video_decode import import_av

INDEX_BITS = 16
_COLUMNS = 8
_ROWS = INDEX_BITS // _COLUMNS


def index_frame(index: int, width: int, height: int) -> Any:
    """An ``(height, width, 3)`` uint8 frame that shows ``index`` (module doc)."""
    import numpy as np

    if not 0 <= index < 2**INDEX_BITS:
        raise ValueError(f"frame index {index} does not fit in {INDEX_BITS} bits")
    frame = np.zeros((height, width, 3), dtype=np.uint8)
    for bit in range(INDEX_BITS):
        if index >> (INDEX_BITS - 1 - bit) & 1:
            row, col = divmod(bit, _COLUMNS)
            top, bottom = row * height // _ROWS, (row + 1) * height // _ROWS
            left, right = col * width // _COLUMNS, (col + 1) * width // _COLUMNS
            frame[top:bottom, left:right] = 255
    return frame


def frame_index(frame: Any) -> int:
    """The index :func:`index_frame` drew into ``frame`` (an array or a PIL image, any size)."""
    import numpy as np

    pixels = np.asarray(frame)
    height, width = pixels.shape[:2]
    index = 0
    for bit in range(INDEX_BITS):
        row, col = divmod(bit, _COLUMNS)
        y = int((row + 0.5) * height / _ROWS)
        x = int((col + 0.5) * width / _COLUMNS)
        index = index << 1 | int(pixels[y, x].mean() > 127)
    return index


def write_index_video(
    path: str | os.PathLike[str],
    frames: int,
    fps: float = 10.0,
    width: int = 64,
    height: int = 48,
    codec: str = "libx264",
) -> str:
    """Encode a ``frames``-frame clip at ``fps`` whose frame ``i`` shows ``i``; returns the path.

    ``codec`` is any encoder PyAV has (``libx264``, ``mpeg4``, ``mjpeg``, ...); sizes are rounded
    down to even numbers, as yuv420p needs.
    """
    from fractions import Fraction

    av = import_av()
    width, height = width - width % 2, height - height % 2
    rate = Fraction(fps).limit_denominator(1001)
    target = os.fspath(path)
    with av.open(target, mode="w") as container:
        stream = container.add_stream(codec, rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if codec == "libx264":
            stream.options = {"preset": "ultrafast", "crf": "18"}
        for index in range(frames):
            image = av.VideoFrame.from_ndarray(index_frame(index, width, height), format="rgb24")
            for packet in stream.encode(image):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return target


__all__ = ["INDEX_BITS", "frame_index", "index_frame", "write_index_video"]
