"""Benchmark the framework side of data-parallel runs: 1-4 ranks of the ``dummy`` model on CPU.

A generated task of ``--docs`` documents (default 10,000; generation, ``exact_match``) runs with
``torchrun --standalone --nproc_per_node N`` (gloo) for each N, the plain process for N = 1. Each
rank reports, from inside the run:

* ``join``: importing ``torch.distributed`` and joining the process group (once per process);
* ``wall``: ``simple_evaluate`` from start to end, after the join (tasks loaded, requests built, answered,
  gathered, scored and written on rank 0);
* ``gather``: the time rank 0 spends in the exchange of answers (``TorchRunGroup.collect``), which
  includes waiting for the slowest rank;
* ``rss``: rank 0's peak resident memory.

``overhead/doc`` is ``wall / docs``: with the dummy model inference costs nearly nothing, so it is
the framework's cost per document. Run: ``python bench/bench_distributed.py [--docs N] [--ranks 1,2,3,4]``.
As a rank (``python bench/bench_distributed.py --rank-run DIR``) it runs one evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import isolated_env, machine_line, print_table  # bench/ is sys.path[0]


def write_task(root: Path, docs: int) -> None:
    rows = "\n".join(json.dumps({"q": f"question {i}", "answer": str(i % 10)}) for i in range(docs))
    (root / "big").mkdir(parents=True, exist_ok=True)
    (root / "big" / "data.jsonl").write_text(rows + "\n", encoding="utf-8")
    (root / "big" / "big.yaml").write_text(
        "task: bench_big\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: data.jsonl\n"
        "test_split: test\ndoc_to_text: q\ndoc_to_target: answer\nmetric_list:\n  - metric: exact_match\n",
        encoding="utf-8",
    )


def rank_run(work: Path) -> None:
    """One rank: evaluate, timing the answer exchange; write this rank's figures."""
    import lmms_eval
    from lmms_eval.distributed import group as group_module
    from lmms_eval.tasks import TaskManager

    spent = {"gather": 0.0}
    collect = group_module.TorchRunGroup.collect

    def timed(self: group_module.TorchRunGroup, *args: object, **kwargs: object) -> None:
        started = time.perf_counter()
        collect(self, *args, **kwargs)  # type: ignore[arg-type]
        spent["gather"] += time.perf_counter() - started

    group_module.TorchRunGroup.collect = timed  # type: ignore[method-assign]
    manager = TaskManager(include_path=str(work / "tasks"), include_defaults=False)
    started = time.perf_counter()
    group_module.run_group()  # imports torch.distributed and joins the group (once per process)
    joined = time.perf_counter() - started
    started = time.perf_counter()
    lmms_eval.simple_evaluate(
        model="dummy",
        model_args="answer_field=answer,accuracy=0.7",
        tasks=["bench_big"],
        task_manager=manager,
        output_path=str(work / "out"),
        log_samples=True,
        show_progress=False,
    )
    wall = time.perf_counter() - started
    rank = os.environ.get("RANK", "0")
    world = os.environ.get("WORLD_SIZE", "1")
    figures = {
        "join": joined,
        "wall": wall,
        "gather": spent["gather"],
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    (work / f"w{world}.rank{rank}.json").write_text(json.dumps(figures), encoding="utf-8")


def launch(work: Path, ranks: int, env: dict[str, str]) -> float:
    me = [str(Path(__file__).resolve()), "--rank-run", str(work)]
    if ranks == 1:
        cmd = [sys.executable, *me]
    else:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={ranks}",
            *me,
        ]
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--ranks", default="1,2,3,4")
    parser.add_argument("--rank-run", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_run is not None:
        rank_run(args.rank_run)
        return
    print(machine_line())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_task(work / "tasks", args.docs)
        env = isolated_env(work / "home") | {"LMMS_EVAL_NUM_THREADS": "1"}
        for ranks in (int(r) for r in args.ranks.split(",")):
            launched = launch(work, ranks, env)
            rank0 = json.loads((work / f"w{ranks}.rank0.json").read_text(encoding="utf-8"))
            rows.append(
                [
                    str(ranks),
                    f"{launched:.1f} s",
                    f"{rank0['join']:.2f} s",
                    f"{rank0['wall']:.2f} s",
                    f"{rank0['wall'] / args.docs * 1e6:.0f} us",
                    f"{rank0['gather'] * 1000:.0f} ms" if ranks > 1 else "-",
                    f"{rank0['rss_mb']:.0f} MB",
                ]
            )
    print(f"{args.docs} documents, dummy model, gloo on CPU")
    print_table(
        [
            "ranks",
            "launch (start to exit)",
            "join group",
            "evaluate (rank 0)",
            "overhead/doc",
            "gather",
            "rank 0 peak RSS",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
