"""GPU kit: our HF backend against a plain batched ``model.generate`` loop on the same inputs.

One script, one call, on one H100 or H200 (under 8 minutes with the defaults)::

    python bench/gpu/run_kit.py --out "$OUT"

1. Installs our package from the working tree (``pip install --no-deps --no-index``) and, first,
   the few wheels it needs that the machine lacks, from ``bench/gpu/wheels/`` (see README.md);
   ``--skip-install`` when ``lmms_eval`` is importable already.
2. Builds a randomly initialised Qwen2-VL of realistic size from its config (``--config
   qwen2_vl_2b``: the 2B model's dimensions) on the device in bf16, with a byte-level tokenizer
   built offline, and saves it where our backend loads it from. Output lengths are fixed
   (``min_new_tokens = max_new_tokens``), so both sides generate exactly as many tokens.
3. (a) For each ``--batch-sizes`` value: the plain loop (processor, ``.to(device)``,
   ``model.generate``) and our backend (``Qwen2_VL.generate_until`` on the same images and
   questions), after one warm-up batch each; images/s, generated tokens/s and our share of the
   plain loop's throughput (target: at least 90%).
   (b) Per-batch overheads of the plain pipeline (processor, collation, transfer, generate) timed
   with ``torch.profiler`` record_function ranges, and the top CPU operators of one profiled batch
   of our backend.
4. Writes ``gpu_kit.json`` and ``gpu_kit.md`` (one table) under ``--out``.

``--device cpu --config tiny`` is the dry run the tests use (a 2 MB model, seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WHEELS = HERE / "wheels"
# module -> distribution installed from the carried wheels when the module is missing
NEEDED = {
    "pydantic": "pydantic",
    "pydantic_core": "pydantic-core",
    "annotated_types": "annotated-types",
    "typing_inspection": "typing-inspection",
    "yaml": "pyyaml",
    "jinja2": "jinja2",
    "markupsafe": "markupsafe",
    "loguru": "loguru",
    "tqdm": "tqdm",
    "typing_extensions": "typing-extensions",
}

# Qwen2-VL-2B's dimensions (the published config.json); the vocabulary keeps its size, the
# tokenizer uses its first few thousand ids
CONFIGS: dict[str, dict[str, Any]] = {
    "qwen2_vl_2b": {
        "text": {
            "hidden_size": 1536,
            "intermediate_size": 8960,
            "num_hidden_layers": 28,
            "num_attention_heads": 12,
            "num_key_value_heads": 2,
            "vocab_size": 151936,
            "max_position_embeddings": 32768,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": True,
            "rope": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
        },
        "vision": {
            "depth": 32,
            "embed_dim": 1280,
            "hidden_size": 1536,
            "mlp_ratio": 4,
            "num_heads": 16,
            "in_chans": 3,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
    },
    "tiny": {
        "text": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": 2048,
            "max_position_embeddings": 2048,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": False,
            "rope": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
        },
        "vision": {
            "depth": 2,
            "embed_dim": 32,
            "hidden_size": 64,
            "mlp_ratio": 2,
            "num_heads": 2,
            "in_chans": 3,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
    },
}


# -- installing ------------------------------------------------------------------------------------


def _missing_modules() -> list[str]:
    import importlib.util

    return [module for module in NEEDED if importlib.util.find_spec(module) is None]


def install() -> list[str]:
    """Install the carried wheels the machine lacks, then our package; returns what was installed."""
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet"]
    installed: list[str] = []
    missing = [NEEDED[m] for m in _missing_modules()]
    if missing:
        if not WHEELS.is_dir():
            raise SystemExit(
                f"missing {', '.join(missing)} and no {WHEELS}: run bench/gpu/fetch_wheels.sh first"
            )
        subprocess.run([*pip, "--find-links", str(WHEELS), *missing], check=True)
        installed += missing
    # setuptools and wheel come from the carried wheels when the build needs them
    subprocess.run([*pip, "--find-links", str(WHEELS), str(ROOT)], check=True)
    installed.append(f"lmms_eval from {ROOT}")
    return installed


# -- the model -------------------------------------------------------------------------------------


def build_model(name: str, device: str, new_tokens: int, image_size: int, folder: Path) -> tuple[Any, Any]:
    """A random Qwen2-VL of config ``name`` on ``device`` (bf16 on GPU), its processor, saved to
    ``folder``; generation fixed at ``new_tokens`` tokens."""
    import torch
    import transformers

    from lmms_eval.models.hf.compat import register_no_video_processors
    from lmms_eval.models.hf.tiny import build_tokenizer

    spec = CONFIGS[name]
    tokenizer = build_tokenizer("qwen2_vl")
    text = dict(spec["text"])
    rope = text.pop("rope")
    ids = {
        key: tokenizer.convert_tokens_to_ids(token)
        for key, token in (
            ("image_token_id", "<|image_pad|>"),
            ("video_token_id", "<|video_pad|>"),
            ("vision_start_token_id", "<|vision_start|>"),
            ("vision_end_token_id", "<|vision_end|>"),
        )
    }
    text.update(
        vocab_size=max(int(text["vocab_size"]), len(tokenizer)),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        rope_parameters=rope,
        rope_scaling=rope,  # the name older transformers read
        rope_theta=rope["rope_theta"],
    )
    config = transformers.Qwen2VLConfig(text_config=text, vision_config=dict(spec["vision"]), **ids)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    torch.manual_seed(0)
    dtype_key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    with torch.device(device):
        model = transformers.Qwen2VLForConditionalGeneration._from_config(config, **{dtype_key: dtype})
    model.eval()
    model.generation_config = transformers.GenerationConfig(
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
    )
    image_class = (
        getattr(transformers, "Qwen2VLImageProcessorPil", None) or transformers.Qwen2VLImageProcessor
    )
    pixels = image_size * image_size
    image_processor = image_class(
        patch_size=14, merge_size=2, temporal_patch_size=2, min_pixels=min(56 * 56, pixels), max_pixels=pixels
    )
    processor = register_no_video_processors()["Qwen2VLProcessor"](
        image_processor=image_processor, tokenizer=tokenizer, chat_template=tokenizer.chat_template
    )
    model.save_pretrained(str(folder))
    processor.save_pretrained(str(folder))
    return model, processor


def make_inputs(count: int, image_size: int) -> tuple[list[Any], list[str]]:
    """``count`` random-noise images (fixed seed) and questions."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    images = [
        Image.fromarray(rng.integers(0, 256, (image_size, image_size, 3), dtype=np.uint8))
        for _ in range(count)
    ]
    questions = [f"Question {i}: describe the picture in a few words." for i in range(count)]
    return images, questions


# -- the two sides ----------------------------------------------------------------------------------


@dataclass
class Side:
    seconds: float
    images: int
    tokens: int

    @property
    def images_per_s(self) -> float:
        return self.images / self.seconds if self.seconds else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def plain_batch(model: Any, processor: Any, images: list[Any], questions: list[str], device: str) -> int:
    """One batch through processor, transfer and ``generate``; returns the tokens generated."""
    import torch

    texts = [
        processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": q}]}],
            add_generation_prompt=True,
            tokenize=False,
        )
        for q in questions
    ]
    with torch.profiler.record_function("kit.processor"):  # images, tokens and the padded collation
        processor.tokenizer.padding_side = "left"
        batch = processor(text=texts, images=images, padding=True, return_tensors="pt")
    with torch.profiler.record_function("kit.transfer"):
        batch = batch.to(device)
        if "pixel_values" in batch:
            batch["pixel_values"] = batch["pixel_values"].to(model.dtype)
    with torch.profiler.record_function("kit.generate"), torch.inference_mode():
        output = model.generate(**batch, generation_config=model.generation_config)
    _sync(device)
    return int(output.shape[0] * (output.shape[1] - batch["input_ids"].shape[1]))


def run_plain(
    model: Any, processor: Any, images: list[Any], questions: list[str], size: int, device: str
) -> Side:
    plain_batch(model, processor, images[:size], questions[:size], device)  # warm-up
    tokens = 0
    started = time.perf_counter()
    for begin in range(0, len(images), size):
        tokens += plain_batch(
            model, processor, images[begin : begin + size], questions[begin : begin + size], device
        )
    return Side(time.perf_counter() - started, len(images), tokens)


def our_requests(model: Any, images: list[Any], questions: list[str], new_tokens: int) -> list[Any]:
    from lmms_eval.api.instance import Instance

    docs = [{"image": image, "question": q} for image, q in zip(images, questions)]
    model.task_dict = {"kit": {"test": docs}}

    def doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {
                "role": "user",
                "content": [
                    {"type": "image", "url": doc["image"]},
                    {"type": "text", "text": doc["question"]},
                ],
            }
        ]

    gen_kwargs = {"max_new_tokens": new_tokens, "temperature": 0}
    return [
        Instance(
            "generate_until", (doc_to_messages, gen_kwargs, i, "kit", "test"), 0, {"task": "kit", "doc_id": i}
        )
        for i in range(len(docs))
    ]


def run_ours(ours: Any, requests: list[Any], size: int, device: str) -> Side:
    from lmms_eval.api.instance import GenerationResult, RequestFailure

    ours.batch_size_per_gpu = size
    ours.generate_until(requests[:size])  # warm-up
    _sync(device)
    started = time.perf_counter()
    answers = ours.generate_until(requests)
    _sync(device)
    seconds = time.perf_counter() - started
    failed = [a for a in answers if isinstance(a, RequestFailure)]
    if failed:
        raise SystemExit(f"our backend failed {len(failed)} request(s); the first: {failed[0]}")
    tokens = sum(
        a.token_counts.output_tokens or 0
        for a in answers
        if isinstance(a, GenerationResult) and a.token_counts is not None
    )
    return Side(seconds, len(requests), tokens)


# -- profiling ---------------------------------------------------------------------------------------


def profile(
    plain: Callable[[], Any], ours: Callable[[], Any], device: str
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """(ms per batch of each kit.* range of the plain pipeline, top CPU ops of our backend's batch)."""
    import torch
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with torch.profiler.profile(activities=activities) as prof:
        plain()
    stages = {
        e.key.removeprefix("kit."): e.cpu_time_total / 1000.0
        for e in prof.key_averages()
        if e.key.startswith("kit.")
    }
    with torch.profiler.profile(activities=activities) as prof:
        ours()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)[:15]
    top = [
        {"op": e.key, "calls": e.count, "self_cpu_ms": round(e.self_cpu_time_total / 1000.0, 3)}
        for e in events
    ]
    return stages, top


# -- report -----------------------------------------------------------------------------------------


@dataclass
class Report:
    device: str
    card: str
    config: str
    torch: str
    transformers: str
    python: str
    requests: int
    new_tokens: int
    image_size: int
    installed: list[str]
    build_s: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    overheads_ms: dict[str, float] = field(default_factory=dict)
    our_top_ops: list[dict[str, Any]] = field(default_factory=list)
    total_s: float = 0.0


def markdown(report: Report) -> str:
    lines = [
        f"GPU kit: {report.card} ({report.device}), config {report.config}, torch {report.torch}, "
        f"transformers {report.transformers}; {report.requests} images of {report.image_size} px, "
        f"{report.new_tokens} new tokens each",
        "",
        "| batch | plain images/s | plain tokens/s | ours images/s | ours tokens/s | our share | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        lines.append(
            f"| {row['batch_size']} | {row['plain_images_per_s']:.2f} | {row['plain_tokens_per_s']:.1f} | "
            f"{row['ours_images_per_s']:.2f} | {row['ours_tokens_per_s']:.1f} | {row['our_share']:.1%} | >= 90% |"
        )
    stages = ", ".join(f"{k} {v:.1f} ms" for k, v in report.overheads_ms.items())
    lines += ["", f"plain pipeline per batch (torch.profiler): {stages}", f"total {report.total_s:.1f} s"]
    return "\n".join(lines) + "\n"


def card_name(device: str) -> str:
    if device.startswith("cuda"):
        import torch

        return str(torch.cuda.get_device_name(torch.device(device)))
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--config", choices=sorted(CONFIGS), default="qwen2_vl_2b")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--requests", type=int, default=64, help="images per measurement")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--image-size", type=int, default=448)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--skip-install", action="store_true")
    args = parser.parse_args(argv)
    if any(size < 1 for size in args.batch_sizes) or args.requests < max(args.batch_sizes):
        parser.error("--batch-sizes must be >= 1 and --requests at least the largest batch size")

    started = time.perf_counter()
    installed = [] if args.skip_install else install()
    import torch
    import transformers

    from lmms_eval.models.chat.qwen2_vl import Qwen2_VL

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpu_kit_") as tmp:
        folder = Path(tmp) / "model"
        model, processor = build_model(args.config, args.device, args.new_tokens, args.image_size, folder)
        build_s = time.perf_counter() - started
        images, questions = make_inputs(args.requests, args.image_size)
        dtype = "bfloat16" if args.device.startswith("cuda") else "float32"
        ours = Qwen2_VL(pretrained=str(folder), device=args.device, torch_dtype=dtype, batch_size=1)
        requests = our_requests(ours, images, questions, args.new_tokens)
        report = Report(
            device=args.device,
            card=card_name(args.device),
            config=args.config,
            torch=torch.__version__,
            transformers=transformers.__version__,
            python=platform.python_version(),
            requests=args.requests,
            new_tokens=args.new_tokens,
            image_size=args.image_size,
            installed=installed,
            build_s=round(build_s, 2),
        )
        for size in args.batch_sizes:
            plain = run_plain(model, processor, images, questions, size, args.device)
            mine = run_ours(ours, requests, size, args.device)
            report.rows.append(
                {
                    "batch_size": size,
                    "plain_s": round(plain.seconds, 4),
                    "plain_images_per_s": plain.images_per_s,
                    "plain_tokens_per_s": plain.tokens_per_s,
                    "plain_tokens": plain.tokens,
                    "ours_s": round(mine.seconds, 4),
                    "ours_images_per_s": mine.images_per_s,
                    "ours_tokens_per_s": mine.tokens_per_s,
                    "ours_tokens": mine.tokens,
                    "our_share": mine.images_per_s / plain.images_per_s if plain.images_per_s else 0.0,
                }
            )
            print(json.dumps(report.rows[-1]), flush=True)
        size = max(args.batch_sizes)
        report.overheads_ms, report.our_top_ops = profile(
            lambda: plain_batch(model, processor, images[:size], questions[:size], args.device),
            lambda: ours.generate_until(requests[:size]),
            args.device,
        )
    report.total_s = round(time.perf_counter() - started, 1)
    (out / "gpu_kit.json").write_text(json.dumps(asdict(report), indent=2), encoding="utf-8")
    (out / "gpu_kit.md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
