"""Benchmark audio: decoding and resampling throughput, and the framework's cost around a tiny model.

1. **Decode + resample.** ``--clips`` (200) synthetic 10 s stereo clips at 44.1 kHz (a chord of
   three tones plus a little noise), written once as 16-bit WAV and as FLAC under
   ``$LMMS_EVAL_HOME/bench_audio`` (else the temp folder). Each file is read serially with
   ``lmms_eval.media.load_audio(path, sampling_rate=16000)`` (decode, mono mixdown, soxr
   resample). Measured: clips per second and how many times faster than real time (seconds of
   audio per second of wall time), for each format, also with no resampling (the file's own rate)
   to show what the resample costs.
2. **Framework overhead.** ``air_bench_foundation_sound`` over ``--docs`` (200) synthetic 10 s
   44.1 kHz clips (a local ``--dataset_root`` copy), evaluated in process by ``simple_evaluate``
   with (a) the tiny random Whisper checkpoint of ``tests/benchmarks/audio_fixtures.py``
   (``whisper``, CPU, batch size 8, ``max_new_tokens=8``) and (b) the ``dummy`` model. The time
   spent inside the model's ``generate_until`` (for Whisper: audio decode, features and
   generation) is measured by wrapping it (after one untimed warm-up run); the rest of the wall time is the framework's (task
   and dataset loading, request building, scoring, aggregation). Reported per document.

Run: ``python bench/bench_audio.py`` (about a minute on 2 cores). ``--part decode`` /
``--part overhead`` runs one part; ``--json FILE`` keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine_line, print_table  # bench/ is sys.path[0]

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_RATE = 44100
TARGET_RATE = 16000
CLIP_SECONDS = 10.0


def cache_folder() -> Path:
    home = os.environ.get("LMMS_EVAL_HOME")
    root = Path(home) if home else Path(tempfile.gettempdir())
    folder = root / "bench_audio"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def chord(index: int, seconds: float = CLIP_SECONDS, rate: int = SOURCE_RATE, channels: int = 2) -> Any:
    """``(frames, channels)`` float32 samples: three tones set by ``index`` and low noise."""
    import numpy as np

    t = np.arange(round(seconds * rate)) / rate
    base = 110.0 + 7.0 * index
    mono = np.sin(2 * np.pi * base * np.array([[1.0], [1.25], [1.5]]) * t).sum(axis=0) / 4
    noise = np.random.default_rng(index).normal(0.0, 0.01, size=(t.size, channels))
    return (mono[:, None] + noise).astype(np.float32)


def write_clips(folder: Path, count: int, fmt: str) -> list[Path]:
    """``count`` clips as ``fmt`` (``wav`` or ``flac``) files, written once and reused."""
    import soundfile

    paths = []
    for i in range(count):
        path = folder / f"clip{i:04d}.{fmt}"
        if not path.is_file():
            soundfile.write(str(path), chord(i), SOURCE_RATE, subtype="PCM_16", format=fmt.upper())
        paths.append(path)
    return paths


def bench_decode(count: int) -> list[dict[str, Any]]:
    from lmms_eval.media import load_audio

    rows = []
    for fmt in ("wav", "flac"):
        paths = write_clips(cache_folder(), count, fmt)
        load_audio(paths[0], sampling_rate=TARGET_RATE)  # warm up imports and soxr
        for target in (TARGET_RATE, None):
            start = time.perf_counter()
            frames = 0
            for path in paths:
                audio = load_audio(path, sampling_rate=target)
                frames += len(audio.samples)
                if audio.sampling_rate != (target or SOURCE_RATE):
                    raise RuntimeError(f"{path}: rate {audio.sampling_rate}")
            elapsed = time.perf_counter() - start
            seconds = frames / (target or SOURCE_RATE)
            rows.append(
                {
                    "format": fmt,
                    "to": f"{target} Hz mono" if target else f"{SOURCE_RATE} Hz mono (no resample)",
                    "clips": count,
                    "wall_s": elapsed,
                    "clips_per_s": count / elapsed,
                    "x_realtime": seconds / elapsed,
                    "mb": sum(p.stat().st_size for p in paths) / 1e6,
                }
            )
    return rows


def _fixtures() -> Any:
    """``tests/benchmarks/audio_fixtures.py`` (the dataset writer and the tiny Whisper builder)."""
    import importlib

    folder = str(REPO_ROOT / "tests" / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module("audio_fixtures")


def _write_dataset(root: Path, docs: int) -> None:
    write_audio_split = _fixtures().write_audio_split
    from lmms_eval.media import encode_wav

    options = ("dog", "cat", "cow", "pig")
    rows = [
        {
            "audio": {"bytes": encode_wav(chord(i, channels=1)[:, 0], SOURCE_RATE), "path": f"{i}.wav"},
            "uniq_id": str(i),
            "task_name": ("Sound_AQA", "Vocal_Sound")[i % 2],
            "question": f"Which animal is heard in clip {i}?",
            **dict(zip(("choice_a", "choice_b", "choice_c", "choice_d"), options, strict=True)),
            "answer_gt": options[i % 4],
        }
        for i in range(docs)
    ]
    write_audio_split(root, "lmms-lab/AIR_Bench", "Foundation", "sound", rows)


def _timed_eval(model: Any, root: Path, **kwargs: Any) -> dict[str, Any]:
    from lmms_eval.evaluator import simple_evaluate

    inside = [0.0]
    generate = model.generate_until

    def timed(requests: list[Any]) -> list[Any]:
        start = time.perf_counter()
        try:
            return generate(requests)
        finally:
            inside[0] += time.perf_counter() - start

    model.generate_until = timed
    start = time.perf_counter()
    out = simple_evaluate(
        model=model,
        tasks=["air_bench_foundation_sound"],
        dataset_root=str(root),
        bootstrap_iters=0,
        show_progress=False,
        **kwargs,
    )
    wall = time.perf_counter() - start
    n = out["n-samples"]["air_bench_foundation_sound"]["effective"]
    return {"docs": n, "wall_s": wall, "model_s": inside[0], "framework_s": wall - inside[0]}


def bench_overhead(docs: int) -> list[dict[str, Any]]:
    build_tiny_whisper = _fixtures().build_tiny_whisper
    from lmms_eval.models import get_model

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "datasets"
        _write_dataset(root, docs)
        folder = build_tiny_whisper(str(Path(tmp) / "whisper"))
        _timed_eval(
            get_model("dummy").create_from_arg_string("", {}), root, limit=2
        )  # warm up: imports, index
        rows = []
        whisper = get_model("whisper").create_from_arg_string(
            f"pretrained={folder},language=en,device=cpu,batch_size=8", {}
        )
        rows.append(
            {
                "model": "whisper (tiny, CPU, batch 8)",
                **_timed_eval(whisper, root, gen_kwargs="max_new_tokens=8"),
            }
        )
        dummy = get_model("dummy").create_from_arg_string("", {})
        rows.append({"model": "dummy", **_timed_eval(dummy, root)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--part", choices=("decode", "overhead", "all"), default="all")
    parser.add_argument("--clips", type=int, default=200)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    print(machine_line())
    figures: dict[str, Any] = {}
    if args.part in ("decode", "all"):
        decode = figures["decode"] = bench_decode(args.clips)
        print(
            f"\n{args.clips} clips of {CLIP_SECONDS:g} s, stereo {SOURCE_RATE} Hz, read serially by load_audio"
        )
        print_table(
            ["format", "to", "MB", "wall s", "clips/s", "x real time"],
            [
                [
                    r["format"],
                    r["to"],
                    f"{r['mb']:.0f}",
                    f"{r['wall_s']:.2f}",
                    f"{r['clips_per_s']:.1f}",
                    f"{r['x_realtime']:.0f}",
                ]
                for r in decode
            ],
        )
    if args.part in ("overhead", "all"):
        overhead = figures["overhead"] = bench_overhead(args.docs)
        print(
            f"\nair_bench_foundation_sound, {args.docs} docs of {CLIP_SECONDS:g} s at {SOURCE_RATE} Hz, in process"
        )
        print_table(
            [
                "model",
                "docs",
                "wall s",
                "in model s",
                "framework s",
                "s/doc",
                "model s/doc",
                "framework s/doc",
            ],
            [
                [
                    r["model"],
                    str(r["docs"]),
                    f"{r['wall_s']:.2f}",
                    f"{r['model_s']:.2f}",
                    f"{r['framework_s']:.2f}",
                    f"{r['wall_s'] / r['docs']:.4f}",
                    f"{r['model_s'] / r['docs']:.4f}",
                    f"{r['framework_s'] / r['docs']:.4f}",
                ]
                for r in overhead
            ],
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
