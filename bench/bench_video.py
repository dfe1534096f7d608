"""Benchmark video decoding: a long 1080p clip, and decoding overlapped with inference.

1. **Long clip.** A 60 s 1920x1080 30 fps H.264 clip (generated once with PyAV, cached under
   ``$LMMS_EVAL_HOME/bench_video``, else the temp folder). ``read_video(clip, 64,
   max_pixels=448*448)`` is timed serially (``--reads`` times one after another) and through the
   prefetch pool (the same reads as one batch, ``LMMS_MEDIA_WORKERS`` threads): frames per second
   both ways. The peak memory (RSS) of one read is measured in a fresh process with and without
   ``max_pixels``: frames are scaled as decoded, so the 64 frames never exist at full size.
2. **100 videos through the transformers backend.** 100 ``generate_until`` requests, each with
   one 10 s 640x360 clip (10 distinct clips, each asked 10 times), 8 frames per video, batch size
   4, the tiny random Qwen2-VL checkpoint (``build_tiny_vlm``). Measured: the decoding alone
   (every prompt loaded serially), the inference alone (the loaded prompts generated), and the
   wall time of the backend's ``generate_until`` without prefetch (``LMMS_MEDIA_PREFETCH=0``) and
   with it (default, 1 batch ahead). Two inference kinds: ``cpu`` (the tiny model on the CPU,
   competing with decoding for the same cores) and ``accelerator`` (each batch's inference is a
   sleep of ``--batch-latency`` seconds, as on a GPU, where the CPU is free to decode). Target:
   wall time within 1.15x of max(decode, inference).

Run: ``python bench/bench_video.py`` (about 3 minutes on 2 cores the first time, when the clips are
encoded). ``--part long`` / ``--part run`` runs one part.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine_line, print_table, verdict  # bench/ is sys.path[0]

TARGET_OVERLAP = 1.15
LONG_FRAMES = 64
MAX_PIXELS = 448 * 448


def cache_folder() -> Path:
    home = os.environ.get("LMMS_EVAL_HOME")
    root = Path(home) if home else Path(tempfile.gettempdir())
    folder = root / "bench_video"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def textured_clip(path: Path, seconds: int, fps: int, width: int, height: int) -> Path:
    """A clip of index frames over a moving texture (so the encoder and decoder have real work)."""
    if path.is_file():
        return path
    import av
    import numpy as np

    from lmms_eval.media.synthetic import index_frame

    rng = np.random.default_rng(0)
    texture = rng.integers(0, 60, size=(height, width * 2, 3), dtype=np.uint8)
    partial = path.with_suffix(".partial" + path.suffix)
    with av.open(str(partial), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "veryfast", "crf": "26"}
        for i in range(seconds * fps):
            shift = (i * 7) % width
            frame = np.maximum(index_frame(i, width, height) // 4 * 3, texture[:, shift : shift + width])
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    partial.rename(path)
    return path


# -- part 1: the long clip ----------------------------------------------------------------------


def peak_rss_mb(clip: Path, max_pixels: int | None) -> tuple[float, float]:
    """Peak RSS (``VmHWM``, MB) of a fresh process that reads 64 frames of ``clip``, and that after
    its imports. (``ru_maxrss`` is not used: a child inherits its parent's.)"""
    code = (
        "import re, sys, numpy, av; from lmms_eval.media import read_video\n"
        "def hwm(): return int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) / 1024\n"
        "base = hwm()\n"
        f"frames = read_video(sys.argv[1], {LONG_FRAMES}, max_pixels={max_pixels})\n"
        "print(hwm(), base)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(clip)], capture_output=True, text=True, check=True)
    peak, base = (float(x) for x in out.stdout.split())
    return peak, base


def bench_long(reads: int) -> list[list[str]]:
    from lmms_eval.media import prefetch_batches, prefetch_settings, read_video, sample_frame_indices
    from lmms_eval.media.synthetic import frame_index

    clip = textured_clip(cache_folder() / "long_1080p_60s.mp4", 60, 30, 1920, 1080)
    frames = read_video(clip, LONG_FRAMES, max_pixels=MAX_PIXELS)
    assert [frame_index(f) for f in frames] == sample_frame_indices(1800, LONG_FRAMES), "wrong frames"

    started = time.perf_counter()
    for _ in range(reads):
        read_video(clip, LONG_FRAMES, max_pixels=MAX_PIXELS)
    serial = time.perf_counter() - started
    workers = prefetch_settings()[1]
    started = time.perf_counter()
    for batch in prefetch_batches(
        [[clip] * reads], lambda c: read_video(c, LONG_FRAMES, max_pixels=MAX_PIXELS)
    ):
        assert all(item.error is None for item in batch)
    pooled = time.perf_counter() - started
    (scaled, base), (full, _) = peak_rss_mb(clip, MAX_PIXELS), peak_rss_mb(clip, None)
    total = reads * LONG_FRAMES
    return [
        [
            "clip",
            f"{clip.stat().st_size / 1e6:.0f} MB, 1800 frames 1920x1080, 64 read ({frames.shape[2]}x{frames.shape[1]})",
        ],
        ["serial: frames/s (one read)", f"{total / serial:.0f} ({serial / reads:.2f} s)"],
        [
            f"prefetch pool, {workers} threads: frames/s",
            f"{total / pooled:.0f} ({pooled:.2f} s for {reads} reads)",
        ],
        [
            "peak RSS of one read, max_pixels=448*448",
            f"{scaled:.0f} MB ({scaled - base:.0f} MB above the imports)",
        ],
        ["peak RSS of one read, full size", f"{full:.0f} MB ({full - base:.0f} MB above the imports)"],
    ]


# -- part 2: 100 videos through the backend --------------------------------------------------------


def build_model(folder: Path, latency: float | None) -> Any:
    from lmms_eval.api.instance import GenerationResult
    from lmms_eval.models import get_model
    from lmms_eval.models.hf.tiny import build_tiny_vlm

    checkpoint = folder / "tiny_qwen2_vl"
    if not (checkpoint / "config.json").is_file():
        build_tiny_vlm("qwen2_vl", str(checkpoint))
    model = get_model("qwen2_vl")(
        pretrained=str(checkpoint), device="cpu", torch_dtype="float32", batch_size=4, max_num_frames=8
    )
    model.gate.breaker_after = None
    if latency is not None:  # an accelerator: the batch costs wall time, not CPU time

        def generate(prompts: list[Any], settings: Any) -> list[Any]:
            time.sleep(latency)
            return [GenerationResult(text="ok") for _ in prompts]

        model._generate_batch = generate
    return model


def make_requests(model: Any, clips: list[Path], count: int) -> list[Any]:
    from lmms_eval.api.instance import Instance

    docs = [{"video": str(clips[i % len(clips)])} for i in range(count)]
    model.task_dict = {"bench": {"test": docs}}

    def messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {
                "role": "user",
                "content": [{"type": "video", "url": doc["video"]}, {"type": "text", "text": "?"}],
            }
        ]

    meta = {"task": "bench", "split": "test"}
    gen = {"max_new_tokens": 8}
    return [
        Instance("generate_until", (messages, gen, i, "bench", "test"), i, {**meta, "doc_id": i})
        for i in range(count)
    ]


def timed_run(model: Any, requests: list[Any], prefetch: int) -> float:
    os.environ["LMMS_MEDIA_PREFETCH"] = str(prefetch)
    started = time.perf_counter()
    outputs = model.generate_until(requests)
    elapsed = time.perf_counter() - started
    assert all(getattr(o, "text", None) is not None for o in outputs)
    return elapsed


def bench_run(count: int, latency: float | None, clips: list[Path]) -> list[str]:
    import torch

    from lmms_eval.protocol import ChatMessages

    torch.set_num_threads(1)
    model = build_model(cache_folder(), latency)
    requests = make_requests(model, clips, count)
    started = time.perf_counter()
    prompts = [model._load_prompt(ChatMessages.from_raw(r.args[0](model.get_doc(r)))) for r in requests]
    decode = time.perf_counter() - started
    settings = [model._settings(r.args[1]) for r in requests]
    started = time.perf_counter()
    model.generate_prompts(prompts, settings)
    infer = time.perf_counter() - started
    del prompts
    pooled = pool_decode_seconds(model, requests)
    serial, overlapped = timed_run(model, requests, 0), timed_run(model, requests, 1)
    ratio = overlapped / max(pooled, infer)
    kind = "cpu" if latency is None else f"accelerator ({latency:.2f} s/batch)"
    return [
        kind,
        f"{decode:.1f} / {pooled:.1f}",
        f"{infer:.1f}",
        f"{pooled + infer:.1f}",
        f"{serial:.1f}",
        f"{overlapped:.1f}",
        f"{ratio:.2f}x {verdict(ratio, TARGET_OVERLAP)}",
    ]


def pool_decode_seconds(model: Any, requests: list[Any]) -> float:
    """The decoding alone as the run does it: the same batches through the prefetch pool."""
    from lmms_eval.media import prefetch_batches
    from lmms_eval.protocol import ChatMessages

    messages = [ChatMessages.from_raw(r.args[0](model.get_doc(r))) for r in requests]
    batches = [list(range(b, min(b + 4, len(requests)))) for b in range(0, len(requests), 4)]
    started = time.perf_counter()
    for batch in prefetch_batches(batches, lambda i: model._load_prompt(messages[i]), ahead=1):
        assert all(item.error is None for item in batch)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--part", choices=["long", "run", "both"], default="both")
    parser.add_argument("--reads", type=int, default=4, help="reads of the long clip")
    parser.add_argument("--videos", type=int, default=100)
    parser.add_argument("--batch-latency", type=float, default=0.4, help="accelerator seconds per batch")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    print(machine_line())
    figures: dict[str, Any] = {}
    if args.part in ("long", "both"):
        rows = bench_long(args.reads)
        print_table(["long clip", "value"], rows)
        figures["long"] = rows
    if args.part in ("run", "both"):
        clips = [textured_clip(cache_folder() / f"clip360_{i}.mp4", 10, 30, 640, 360) for i in range(10)]
        rows = [bench_run(args.videos, None, clips), bench_run(args.videos, args.batch_latency, clips)]
        header = [
            "inference",
            "decode s (serial / pool)",
            "infer s",
            "pool + infer s",
            "wall, no prefetch",
            "wall, prefetch",
            "wall / max(pool, infer)",
        ]
        print_table(header, rows)
        figures["run"] = rows
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
