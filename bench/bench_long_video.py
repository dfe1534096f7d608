"""Benchmark sampling a 2-hour video: frames are taken without decoding the whole video.

A synthetic 2-hour clip (7200 frames, 32x32 at 1 fps, MPEG-4 with a keyframe every 250 frames;
generated once with PyAV, cached under ``$LMMS_EVAL_HOME/bench_video``, else the temp folder) is
read with ``read_video(clip, N)`` for N in 8, 32 and 64 (the frame counts long-video tasks such
as LVBench and Video-MME long use), each in a fresh process: wall time and peak memory (RSS,
``VmHWM``) above the process's footprint after its imports. The same is measured for decoding every
frame with PyAV (the whole-video decode that sampling avoids) as the reference.

Run: ``python bench/bench_long_video.py`` (under a minute on 2 cores; the clip is encoded once).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import machine_line, print_table  # bench/ is sys.path[0]

SECONDS = 2 * 3600
FPS = 1
SIZE = 32
GOP = 250
COUNTS = (8, 32, 64)

_MEASURE = """
import re, sys, time
import av, numpy
from lmms_eval.media import read_video
def hwm():
    return int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) / 1024
base = hwm()
start = time.perf_counter()
count = int(sys.argv[2])
if count:
    frames = read_video(sys.argv[1], count)
    shape = list(frames.shape)
else:
    with av.open(sys.argv[1]) as container:
        decoded = [f.to_ndarray(format='rgb24') for f in container.decode(video=0)]
    shape = [len(decoded), *decoded[0].shape]
print(time.perf_counter() - start, hwm(), base, shape)
"""


def cache_folder() -> Path:
    home = os.environ.get("LMMS_EVAL_HOME")
    folder = (Path(home) if home else Path(tempfile.gettempdir())) / "bench_video"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def long_clip(path: Path) -> Path:
    """The 2-hour clip: frame i is a solid grey of level i % 256 with a bar at i // 256."""
    if path.is_file():
        return path
    import av
    import numpy as np

    partial = path.with_suffix(".partial" + path.suffix)
    with av.open(str(partial), "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=FPS)
        stream.width = stream.height = SIZE
        stream.pix_fmt = "yuv420p"
        stream.codec_context.gop_size = GOP
        for i in range(SECONDS * FPS):
            pixels = np.full((SIZE, SIZE, 3), i % 256, dtype=np.uint8)
            pixels[: (i // 256) % SIZE, :4] = 255
            for packet in stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    partial.rename(path)
    return path


def measure(clip: Path, count: int) -> dict[str, float | list[int]]:
    """One fresh process: seconds, peak RSS and RSS after imports (MB), the frames' shape."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(clip), str(count)], capture_output=True, text=True, check=True
    )
    seconds, peak, base, shape = out.stdout.strip().split(" ", 3)
    return {
        "seconds": float(seconds),
        "peak_mb": float(peak),
        "base_mb": float(base),
        "shape": json.loads(shape),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    clip = long_clip(cache_folder() / f"two_hours_{SIZE}px_{FPS}fps.mp4")
    print(machine_line())
    print(f"clip: {clip} ({clip.stat().st_size / 1e6:.1f} MB, {SECONDS * FPS} frames, {SIZE}x{SIZE})")
    rows, figures = [], {}
    for count in (*COUNTS, 0):
        result = measure(clip, count)
        label = f"read_video({count})" if count else "decode every frame (PyAV)"
        figures[label] = result
        extra = float(result["peak_mb"]) - float(result["base_mb"])  # type: ignore[arg-type]
        rows.append(
            [
                label,
                f"{result['seconds']:.2f} s",
                f"{result['peak_mb']:.0f} MB",
                f"+{extra:.1f} MB",
                str(result["shape"]),
            ]
        )
    print_table(["read", "wall", "peak RSS", "above imports", "frames"], rows)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
