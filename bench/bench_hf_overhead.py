"""Framework overhead per sample around a tiny transformers model (time in the model vs total).

Builds a tiny random Qwen2-VL (``lmms_eval.models.hf.tiny``), writes a local image task with N
documents, and runs ``simple_evaluate`` in-process with the model's ``generate_until`` timed. The
overhead is everything outside the model: task loading, request building, image preparation in
``doc_to_messages``, filtering, scoring, error bars and writing results and samples.

    python bench/bench_hf_overhead.py --docs 200 --batch-size 8

Needs the ``hf`` extra. On a GPU machine add ``--device cuda`` (and ``--width 1024`` for a larger
random model) to see the same split with a model that is fast per sample.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine_line, print_table  # bench/ is sys.path[0] when run as a script


def _write_task(root: Path, n: int) -> None:
    from PIL import Image

    colours = {"red": (220, 30, 30), "green": (30, 190, 40), "blue": (30, 50, 220), "yellow": (230, 220, 40)}
    names = list(colours)
    rows = []
    for i in range(n):
        name = names[i % len(names)]
        path = root / "images" / f"{i}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (112, 112), colours[name]).save(path)
        rows.append({"image": str(path), "question": "What colour is the picture?", "answer": name})
    (root / "data.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (root / "bench_hf.yaml").write_text(
        "task: bench_hf\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: data.jsonl\n"
        "test_split: test\ndoc_to_visual: image\ndoc_to_text: question\ndoc_to_target: answer\n"
        "generation_kwargs:\n  max_new_tokens: 4\n  temperature: 0\n"
    )


def run_once(folder: Path, task_root: Path, batch_size: int, device: str, out: Path) -> dict[str, float]:
    import lmms_eval
    from lmms_eval.models.chat.qwen2_vl import Qwen2_VL
    from lmms_eval.tasks import TaskManager

    model = Qwen2_VL(pretrained=str(folder), batch_size=batch_size, device=device)
    in_model = 0.0
    original = model.generate_until

    def timed(requests: list[Any]) -> Any:
        nonlocal in_model
        started = time.perf_counter()
        try:
            return original(requests)
        finally:
            in_model += time.perf_counter() - started

    model.generate_until = timed  # type: ignore[method-assign]
    manager = TaskManager(include_path=str(task_root), include_defaults=False)
    started = time.perf_counter()
    lmms_eval.simple_evaluate(
        model=model,
        tasks=["bench_hf"],
        task_manager=manager,
        output_path=str(out),
        log_samples=True,
        show_progress=False,
    )
    total = time.perf_counter() - started
    return {"total": total, "model": in_model}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    try:
        import torch

        from lmms_eval.models.hf.tiny import build_tiny_vlm
    except ImportError:
        print("needs the hf extra: pip install -e '.[hf]'", file=sys.stderr)
        return 1
    torch.set_num_threads(2)
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = Path(build_tiny_vlm("qwen2_vl", str(root / "model"), image_size=112))
        _write_task(root / "task", args.docs)
        runs = [
            run_once(folder, root / "task", args.batch_size, args.device, root / f"out{i}")
            for i in range(args.runs)
        ]
    total = statistics.median(r["total"] for r in runs)
    model = statistics.median(r["model"] for r in runs)
    overhead = total - model
    print_table(
        ["docs", "batch", "total s", "in model s", "overhead s", "overhead per sample ms", "overhead share"],
        [[str(args.docs), str(args.batch_size), f"{total:.2f}", f"{model:.2f}", f"{overhead:.2f}",
          f"{1000 * overhead / args.docs:.2f}", f"{100 * overhead / total:.1f}%"]],
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
