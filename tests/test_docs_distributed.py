"""Every command of docs/distributed.md: the ones that run on CPU are run; those that need GPUs or
SLURM are checked for their flags (torchrun's, accelerate's and lmms-eval's parsers, and the model
arguments against the backend's constructor).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "distributed.md"
FENCE = re.compile(r"^```(bash|python)\n(.*?)^```", re.MULTILINE | re.DOTALL)
RUNS_ON_CPU = "torchrun --standalone --nproc_per_node 2 -m lmms_eval eval --model dummy"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def blocks(kind: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(GUIDE.read_text(encoding="utf-8")) if m.group(1) == kind]


def commands() -> list[str]:
    lines = [line.strip() for block in blocks("bash") for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def split_launcher(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(launcher argv, lmms-eval argv)`` of a documented command."""
    if argv[0] == "lmms-eval":
        return [], argv[1:]
    at = argv.index("lmms_eval")
    return argv[: at - 1], argv[at + 1 :]


def check_launcher(launcher: list[str]) -> None:
    if not launcher:
        return
    if launcher[0] == "torchrun":
        from torch.distributed.run import get_args_parser

        get_args_parser().parse_args([*launcher[1:], "-m", "x"])
    elif launcher[:2] == ["accelerate", "launch"]:
        from accelerate.commands.launch import launch_command_parser

        launch_command_parser().parse_args([*launcher[2:], "-m", "x"])
    else:
        assert launcher[:2] == ["srun", "python"], launcher


def check_model_args(args: Any) -> None:
    from lmms_eval.models import ensure_registry
    from lmms_eval.utils import parse_arg_string

    cls = ensure_registry().get_model_class(args.model)
    params = inspect.signature(cls.__init__).parameters
    open_ended = any(p.kind is p.VAR_KEYWORD for p in params.values())  # engine kwargs pass through
    for key in parse_arg_string(args.model_args):
        # the parallel sizes must be the backend's own arguments, not passed blindly to the engine
        assert key in params or (open_ended and not key.endswith("_size")), f"{args.model}: {key}"


def test_every_documented_command_has_valid_flags() -> None:
    from lmms_eval.cli.eval import build_parser

    found = commands()
    assert len(found) >= 8
    for line in found:
        launcher, argv = split_launcher(shlex.split(line))
        if HAS_TORCH:
            check_launcher(launcher)
        assert argv[0] == "eval", line
        args = build_parser().parse_args(argv[1:])
        if getattr(args, "model_args", None):
            check_model_args(args)


def per_doc_scores(folder: Path) -> list[tuple[int, str, float]]:
    (samples,) = folder.rglob("*_samples_demo_qa.jsonl")
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(r["doc_id"], str(r["filtered_resps"]), r["exact_match"]) for r in rows]


@pytest.mark.skipif(not HAS_TORCH, reason="torchrun needs torch")
def test_the_cpu_commands_and_the_merge_snippet_run(tmp_path: Path) -> None:
    (line,) = [c for c in commands() if c.startswith(RUNS_ON_CPU)]
    argv = shlex.split(line)
    env = dict(os.environ, LMMS_EVAL_HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", *argv[1:]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (results,) = (tmp_path / "runs" / "dp").rglob("*_results.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["distributed"]["world_size"] == 2 and data["n-samples"]["demo_qa"]["effective"] > 0
    assert proc.stdout.count("Results: ") + proc.stderr.count("Results: ") >= 1
    # the one-process command beside it gives the same score and samples: the ranks agree
    (single,) = [c for c in commands() if c.startswith("lmms-eval eval --model dummy")]
    one = subprocess.run([sys.executable, "-m", "lmms_eval", *shlex.split(single)[1:]], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=240)  # fmt: skip
    assert one.returncode == 0, one.stderr[-3000:]
    (one_results,) = (tmp_path / "runs" / "single").rglob("*_results.json")
    score = data["results"]["demo_qa"]["exact_match,none"]
    assert 0.6 < score < 0.95, score  # meaningful: neither the 0 of a constant answer nor the oracle's 1
    assert (
        json.loads(one_results.read_text(encoding="utf-8"))["results"]["demo_qa"]["exact_match,none"] == score
    )
    assert per_doc_scores(tmp_path / "runs" / "dp") == per_doc_scores(tmp_path / "runs" / "single")
    # the merge snippet, on two caches as two nodes would leave them
    from lmms_eval.caching import CacheEntry, ResponseCache

    for node in range(2):
        with ResponseCache(tmp_path / f"node{node}" / "cache") as cache:
            cache.put(CacheEntry(f"k{node}", "generate_until", "t", node, 0, 0, "m", "fp", {"text": "a"}))
    (snippet,) = blocks("python")
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        exec(compile(snippet, str(GUIDE), "exec"), {"__name__": "guide"})
    finally:
        os.chdir(cwd)
    with ResponseCache(tmp_path / "merged_cache") as merged:
        assert len(merged) == 2
