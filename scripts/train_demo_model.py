"""Train the bundled demo model: a tiny Qwen2-VL that answers the ``demo_shapes`` questions.

The model starts from random weights (the ``qwen2_vl`` tiny checkpoint of
``lmms_eval.models.hf.tiny``, optionally widened) and a byte-level BPE tokenizer whose corpus holds
the benchmark's questions and answers, so every answer is one or two tokens. It is trained on
freshly generated documents (``lmms_eval.demo.shapes.training_docs``, a seed of its own, with every
benchmark spec excluded), with the loss on the answer and end-of-turn tokens only.

Training is budgeted in steps, not time, and is deterministic: fixed seeds, a fixed thread count
and ``torch.use_deterministic_algorithms``; the same command on the same machine and versions gives
bit-identical losses. After training the folder is reloaded as a framework would
(``load_processor`` + ``AutoModelForImageTextToText``) and evaluated with greedy decoding on a
held-out generated set and on the benchmark documents; the numbers go to ``TRAINING.md``.

Run (from the repository root, with the ``hf`` extra installed)::

    python scripts/train_demo_model.py                 # writes lmms_eval/demo/tiny_vlm/
    python scripts/train_demo_model.py --steps 100 --output /tmp/tiny_vlm
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lmms_eval.demo import TINY_VLM_DIR  # noqa: E402
from lmms_eval.demo.shapes import (  # noqa: E402
    ANSWERS,
    CHANCE,
    QUESTIONS,
    SKILLS,
    ShapeDoc,
    generate_docs,
    read_jsonl,
    render,
    score,
    training_docs,
)

TRAIN_SEED_OFFSET = 1_000  # training specs come from seed + this offset
HELDOUT_SEED_OFFSET = 2_000  # the held-out evaluation set from seed + this offset
HELDOUT_PER_SKILL = 50
# The saved processor resizes every image to about 112 x 112 pixels (the training size; a square
# image to exactly 112 px, 8 x 8 merged patches): Qwen2-VL's resize keeps the pixel count between
# these bounds and rounds each side to 14 px, and both bounds round to 112 px.
DEMO_IMAGE_PIXELS = {"shortest_edge": 12_500, "longest_edge": 12_600}


def _weights(text: str) -> dict[str, float]:
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    weights = {name.strip(): float(value) for name, value in pairs}
    if set(weights) - set(SKILLS) or not any(weights.values()):
        raise argparse.ArgumentTypeError(
            f"expected skill=weight pairs over {', '.join(SKILLS)}, got {text!r}"
        )
    return weights


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="optimizer steps (the training budget)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1.5e-3, help="peak learning rate (AdamW)")
    parser.add_argument("--warmup", type=int, default=50, help="linear warm-up steps, then cosine decay")
    parser.add_argument("--min-lr-ratio", type=float, default=0.05, help="final lr as a fraction of --lr")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128, help="text hidden size (head dim stays 16)")
    parser.add_argument("--layers", type=int, default=2, help="text decoder layers")
    parser.add_argument("--vision-dim", type=int, default=64, help="vision transformer width")
    parser.add_argument("--vision-depth", type=int, default=3, help="vision transformer blocks")
    parser.add_argument("--vision-mlp-ratio", type=int, default=2, help="vision MLP width / vision width")
    parser.add_argument("--patch", type=int, default=7, help="vision patch size (pixels)")
    parser.add_argument("--merge", type=int, default=2, help="spatial merge: merge x merge patches per token")
    parser.add_argument("--vocab", type=int, default=1024, help="BPE vocabulary size")
    parser.add_argument(
        "--rope-theta",
        type=float,
        default=2.0,
        help="text M-RoPE base; a small base lets the few image rows/columns get distinct angles",
    )
    parser.add_argument("--vision-rope-theta", type=float, default=10000.0, help="vision 2D RoPE base")
    parser.add_argument(
        "--skill-weights",
        type=_weights,
        default="colour=2,shape=3,count=3,position=1",
        help="how often each skill is drawn for training, e.g. colour=1,shape=3,count=2,position=1",
    )
    parser.add_argument("--output", type=Path, default=TINY_VLM_DIR)
    parser.add_argument("--log-every", type=int, default=100)
    return parser.parse_args(argv)


# ------------------------------------------------------------------------------------------------
# model


def corpus() -> list[str]:
    """Tokenizer corpus: the generic tiny corpus plus the benchmark's questions and answers."""
    from lmms_eval.models.hf.tiny import default_corpus

    lines = default_corpus()
    lines += ["user", "assistant"] * 50  # the chat roles, so the template costs few tokens
    lines += [question for question in QUESTIONS.values() for _ in range(50)]
    lines += [answer for options in ANSWERS.values() for answer in options for _ in range(50)]
    return lines


def build_model(args: argparse.Namespace, folder: str) -> tuple[Any, Any]:
    """A random tiny Qwen2-VL of the requested width and its processor (saved to ``folder`` first)."""
    import torch
    import transformers
    from transformers import GenerationConfig

    from lmms_eval.models.hf.compat import load_processor
    from lmms_eval.models.hf.tiny import build_tiny_vlm, build_tokenizer

    tokenizer = build_tokenizer("qwen2_vl", corpus(), vocab_size=args.vocab)
    build_tiny_vlm("qwen2_vl", folder, seed=args.seed, image_size=112, tokenizer=tokenizer)
    config: Any = transformers.AutoConfig.from_pretrained(folder)
    text, vision = config.text_config, config.vision_config
    heads = args.hidden // 16
    text.hidden_size = args.hidden
    text.intermediate_size = 2 * args.hidden
    text.num_hidden_layers = args.layers
    text.num_attention_heads = heads
    text.num_key_value_heads = max(1, heads // 2)
    if hasattr(text, "layer_types"):
        text.layer_types = ["full_attention"] * args.layers
    vision.embed_dim = args.vision_dim
    vision.num_heads = max(2, args.vision_dim // 16)
    vision.depth = args.vision_depth
    vision.mlp_ratio = args.vision_mlp_ratio
    vision.patch_size = args.patch
    vision.spatial_merge_size = args.merge
    vision.hidden_size = args.hidden  # the merger projects into the text width
    text.rope_parameters = {**text.rope_parameters, "rope_theta": args.rope_theta}
    vision.rope_parameters = {**vision.rope_parameters, "rope_theta": args.vision_rope_theta}
    torch.manual_seed(args.seed)
    model = transformers.Qwen2VLForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    )
    processor = load_processor(folder)
    processor.image_processor.patch_size = args.patch
    processor.image_processor.merge_size = args.merge
    return model, processor


def prompt(processor: Any, question: str) -> str:
    """The chat prompt a framework builds: one user turn with the image first, then the question."""
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def encode_batch(processor: Any, docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Left-padded inputs with ``labels`` on the answer and end-of-turn tokens only."""
    tokenizer = processor.tokenizer
    eos = tokenizer.eos_token
    texts = [prompt(processor, doc["question"]) + doc["answer"] + eos for doc in docs]
    batch = processor(text=texts, images=[[render(doc)] for doc in docs], padding=True, return_tensors="pt")
    labels = batch["input_ids"].clone()
    labels[:] = -100
    for row, doc in enumerate(docs):
        target = tokenizer(doc["answer"] + eos, add_special_tokens=False)["input_ids"]
        labels[row, -len(target) :] = batch["input_ids"][row, -len(target) :]
        if labels[row, -len(target) :].tolist() != target:
            raise RuntimeError(f"answer tokens of {doc['answer']!r} are not a suffix of the prompt")
    batch["labels"] = labels
    return dict(batch)


# ------------------------------------------------------------------------------------------------
# training


def lr_at(step: int, args: argparse.Namespace) -> float:
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * cosine)


def batches(stream: Iterator[ShapeDoc], size: int) -> Iterator[list[ShapeDoc]]:
    while True:
        yield [next(stream) for _ in range(size)]


def train(
    model: Any, processor: Any, args: argparse.Namespace, benchmark: list[dict[str, Any]]
) -> list[float]:
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    stream = training_docs(args.seed + TRAIN_SEED_OFFSET, exclude=benchmark, skill_weights=args.skill_weights)
    losses: list[float] = []
    model.train()
    started = time.perf_counter()
    for step, docs in zip(range(args.steps), batches(stream, args.batch_size)):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, args)
        loss = model(**encode_batch(processor, docs)).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        losses.append(float(loss.detach()))
        if step % args.log_every == 0 or step == args.steps - 1:
            elapsed = time.perf_counter() - started
            print(
                f"step {step:4d}  loss {losses[-1]:.4f}  lr {lr_at(step, args):.2e}  {elapsed:6.1f} s",
                flush=True,
            )
    model.eval()
    return losses


# ------------------------------------------------------------------------------------------------
# evaluation


def greedy_answers(
    model: Any, processor: Any, docs: Sequence[Mapping[str, Any]], batch_size: int = 50
) -> list[str]:
    """Greedy decoding, left-padded batches, at most 8 new tokens, special tokens dropped."""
    import torch

    answers: list[str] = []
    for start in range(0, len(docs), batch_size):
        chunk = docs[start : start + batch_size]
        inputs = processor(
            text=[prompt(processor, doc["question"]) for doc in chunk],
            images=[[render(doc)] for doc in chunk],
            padding=True,
            return_tensors="pt",
        )
        with torch.inference_mode():
            output = model.generate(**inputs, max_new_tokens=8, do_sample=False)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        answers += [text.strip() for text in processor.batch_decode(new_tokens, skip_special_tokens=True)]
    return answers


def accuracy_by_skill(docs: Sequence[Mapping[str, Any]], answers: Sequence[str]) -> dict[str, float]:
    scores: dict[str, list[float]] = {skill: [] for skill in SKILLS}
    for doc, answer in zip(docs, answers):
        scores[doc["category"]].append(score(answer, doc["answer"]))
    result = {skill: sum(values) / len(values) for skill, values in scores.items() if values}
    result["overall"] = sum(score(a, d["answer"]) for d, a in zip(docs, answers)) / len(docs)
    return result


def evaluate(folder: Path, docs: Sequence[Mapping[str, Any]]) -> tuple[dict[str, float], float]:
    """Reload ``folder`` as a framework would and score greedy answers; returns (accuracy, seconds)."""
    import transformers

    from lmms_eval.models.hf.compat import load_processor

    started = time.perf_counter()
    processor = load_processor(str(folder))
    model = transformers.AutoModelForImageTextToText.from_pretrained(str(folder)).eval()
    answers = greedy_answers(model, processor, docs)
    return accuracy_by_skill(docs, answers), time.perf_counter() - started


# ------------------------------------------------------------------------------------------------
# report


def _accuracy_table(rows: Mapping[str, Mapping[str, float]]) -> list[str]:
    names = [*SKILLS, "overall"]
    lines = ["| set | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, accuracy in rows.items():
        lines.append(f"| {label} | " + " | ".join(f"{100 * accuracy[name]:.1f}%" for name in names) + " |")
    chance = {**CHANCE, "overall": sum(CHANCE.values()) / len(CHANCE)}
    lines.append("| chance | " + " | ".join(f"{100 * chance[name]:.1f}%" for name in names) + " |")
    return lines


def write_report(
    args: argparse.Namespace,
    argv: Sequence[str],
    model: Any,
    losses: list[float],
    train_seconds: float,
    accuracy: Mapping[str, Mapping[str, float]],
) -> None:
    import torch
    import transformers

    weights = args.output / "model.safetensors"
    size_mb = weights.stat().st_size / 1e6
    params = sum(p.numel() for p in model.parameters())
    image_tokens = (112 // args.patch) ** 2 // args.merge**2
    tail = losses[-20:]
    checkpoints = sorted({0, *range(250, len(losses), 250), len(losses) - 1})
    command = "python scripts/train_demo_model.py" + ("" if not argv else " " + shlex.join(argv))
    lines = [
        "# Demo model: tiny Qwen2-VL trained on `demo_shapes`-style images",
        "",
        "Written by `scripts/train_demo_model.py`. Random initialisation, trained from scratch on",
        "freshly generated documents (`lmms_eval.demo.shapes.training_docs`, seed "
        f"{args.seed + TRAIN_SEED_OFFSET}, benchmark specs excluded); never on the benchmark's own documents.",
        "",
        f"- command: `{command}`",
        f"- seed {args.seed}, {args.threads} threads, deterministic algorithms; {args.steps} steps of batch "
        f"{args.batch_size} ({args.steps * args.batch_size} images)",
        f"- AdamW, peak lr {args.lr}, {args.warmup} warm-up steps then cosine decay to {args.min_lr_ratio} x lr, "
        f"weight decay {args.weight_decay}, gradient clipping {args.clip}",
        f"- model: text hidden {args.hidden}, {args.layers} layers, M-RoPE base {args.rope_theta:g}; vision width "
        f"{args.vision_dim}, depth {args.vision_depth}, patch {args.patch}, merge {args.merge}; vocabulary "
        f"{args.vocab}; 112 px images ({image_tokens} image tokens; the saved processor resizes any image to about 112 x 112 pixels, "
        "a square one to exactly 112 px, so images of any size get answers: pixel bounds 12500 to 12600, "
        f"`DEMO_IMAGE_PIXELS` in the script); {params / 1e6:.2f} M parameters, "
        f"model.safetensors {size_mb:.2f} MB",
        "- skills drawn with weights "
        + ", ".join(f"{name} {weight:g}" for name, weight in args.skill_weights.items()),
        f"- training time {train_seconds:.1f} s ({train_seconds / max(1, len(losses)):.3f} s per step; CPU "
        "contention from other processes can stretch this several-fold, the result depends only on the "
        f"steps); final loss {losses[-1]:.4f} "
        f"(mean of the last {len(tail)} steps {sum(tail) / len(tail):.4f})",
        "- loss by step: " + ", ".join(f"{step}: {losses[step]:.4f}" for step in checkpoints),
        f"- torch {torch.__version__}, transformers {transformers.__version__}, Python {platform.python_version()}",
        "",
        "Greedy exact match after reloading with `load_processor` + `AutoModelForImageTextToText`",
        f"(held-out: {HELDOUT_PER_SKILL} fresh documents per skill, seed {args.seed + HELDOUT_SEED_OFFSET}; "
        "benchmark: the 200 bundled `demo_shapes` documents):",
        "",
        *_accuracy_table(accuracy),
        "",
    ]
    (args.output / "TRAINING.md").write_text("\n".join(lines), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)

    benchmark = read_jsonl()
    with tempfile.TemporaryDirectory() as scratch:
        model, processor = build_model(args, scratch)
        params = sum(p.numel() for p in model.parameters())
        print(f"model: {params / 1e6:.2f} M parameters; training {args.steps} steps", flush=True)
        started = time.perf_counter()
        losses = train(model, processor, args, benchmark)
        train_seconds = time.perf_counter() - started
    args.output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(args.output))
    processor.image_processor.size = DEMO_IMAGE_PIXELS  # any image size works (TRAINING.md)
    processor.save_pretrained(str(args.output))

    heldout = generate_docs(HELDOUT_PER_SKILL, args.seed + HELDOUT_SEED_OFFSET)
    accuracy: dict[str, dict[str, float]] = {}
    for label, docs in (("held-out", heldout), ("benchmark", benchmark)):
        accuracy[label], seconds = evaluate(args.output, docs)
        print(
            f"{label}: "
            + ", ".join(f"{k} {100 * v:.1f}%" for k, v in accuracy[label].items())
            + f" ({seconds:.1f} s)"
        )
    write_report(args, argv, model, losses, train_seconds, accuracy)
    print(f"saved to {args.output} (training {train_seconds:.1f} s, final loss {losses[-1]:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
