"""Data-parallel runs: identical results for 1, 2 and 3 ranks, the cache across ranks, rank failures.

The multi-rank tests start ``torchrun --standalone`` and ``accelerate launch`` (gloo, CPU) on this
very file: run as a
script, it is the *driver* that each rank executes; it reads a JSON plan and runs its evaluations
one after another in the same process group, so each world size costs one launch. The plans and
outputs are made once per module (:func:`launches`); the tests read them.

Run as a script: ``python tests/test_distributed.py PLAN.json`` (under torchrun).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_HF = HAS_TORCH and all(importlib.util.find_spec(n) for n in ("transformers", "safetensors"))
HAS_ACCELERATE = HAS_TORCH and importlib.util.find_spec("accelerate") is not None
MODEL = "rank_fault_dummy"  # the dummy model, plus a fault chosen by DIST_TEST_FAULT (see below)
MODEL_ARGS = "answer_field=answer,accuracy=0.7"
TASKS = ["dq_plain", "dq_group", "dq_mcr", "dq_ll", "dq_rep"]
HF_TASKS = ["dq_ll", "dq_plain"]
FAULT_AFTER = 7  # answers before the fault: rank 1 answers all of dq_plain (5 docs) first


# -- the driver (each rank runs this file as a script) ----------------------------------------------


def register_fault_model() -> None:
    """``rank_fault_dummy``: the chat ``dummy``; ``DIST_TEST_FAULT=raise|exit`` makes rank
    ``DIST_TEST_FAULT_RANK`` raise (or ``os._exit(3)``) after ``DIST_TEST_FAULT_AFTER`` answers."""
    from lmms_eval.api.registry import register_model
    from lmms_eval.models.chat.dummy import DummyChat

    class RankFaultDummy(DummyChat):
        answered = 0

        def _fault(self) -> None:
            kind = os.environ.get("DIST_TEST_FAULT", "")
            if not kind or os.environ.get("RANK", "0") != os.environ.get("DIST_TEST_FAULT_RANK", "1"):
                return
            RankFaultDummy.answered += 1
            if RankFaultDummy.answered > int(os.environ.get("DIST_TEST_FAULT_AFTER", "0")):
                if kind == "exit":
                    os._exit(3)
                raise ValueError("injected fault")

        def _generate_one(self, request: Any) -> Any:
            self._fault()
            return super()._generate_one(request)

        def _loglikelihood_one(self, request: Any) -> Any:
            self._fault()
            return super()._loglikelihood_one(request)

    register_model(MODEL, overwrite=True)(RankFaultDummy)


def drive(plan_path: str) -> int:
    """Run the plan's steps: ``evaluate`` (simple_evaluate keywords), ``cli`` (argv), ``worker``."""
    import lmms_eval
    from lmms_eval.cli import main
    from lmms_eval.entrypoints import worker
    from lmms_eval.tasks import TaskManager

    register_fault_model()
    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    rank = os.environ.get("RANK", "0")
    for step in plan["steps"]:
        if "cli" in step:
            return main(step["cli"])
        if "worker" in step:
            code = worker.main(step["worker"])
            assert code == 0, code
            continue
        manager = TaskManager(include_path=plan["include_path"], include_defaults=False)
        kwargs = step["evaluate"]
        results = lmms_eval.simple_evaluate(task_manager=manager, show_progress=False, **kwargs)
        summary = {"results": results["results"], "cache": results.get("cache")}
        Path(f"{step['summary']}.rank{rank}.json").write_text(json.dumps(summary), encoding="utf-8")
    return 0


# -- fixtures ---------------------------------------------------------------------------------------


def write_tasks(root: Path) -> Path:
    colours = ["red", "green", "blue", "yellow"]
    rows = [
        {"q": f"question {i}", "answer": str(i * 7 % 10), "choices": colours, "said": colours[i % 4]}
        for i in range(11)
    ]
    # the dummy answers a colour; the filter maps it to a letter through the doc's own choices
    mcr = [
        {"q": f"pick {i}", "answer": colours[i % 4], "choices": colours, "letter": "ABCD"[i % 4]}
        for i in range(11)
    ]
    data = "\n".join(json.dumps(r) for r in rows) + "\n"
    base = "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: data.jsonl\ntest_split: test\n"
    gen = base + "doc_to_text: q\ndoc_to_target: answer\nmetric_list:\n  - metric: exact_match\n"
    files = {
        "d/data.jsonl": data,
        "d/mcr.jsonl": "\n".join(json.dumps(r) for r in mcr) + "\n",
        "d/plain.yaml": "task: dq_plain\n" + gen,
        "d/g1.yaml": "task: dq_g1\n" + gen,
        "d/g2.yaml": "task: dq_g2\n" + gen,
        "d/group.yaml": "group: dq_group\ntask:\n  - dq_g1\n  - dq_g2\naggregate_metric_list:\n"
        "  - metric: exact_match\n    weight_by_size: true\n",
        "d/mcr.yaml": "task: dq_mcr\n"
        + base.replace("data.jsonl", "mcr.jsonl")
        + "doc_to_text: q\ndoc_to_target: letter\n"
        "filter_list:\n  - name: letter\n    filter:\n      - function: multi_choice_regex\n"
        "      - function: take_first\nmetric_list:\n  - metric: exact_match\n",
        "d/ll.yaml": "task: dq_ll\n" + base + "output_type: multiple_choice\ndoc_to_text: q\n"
        "doc_to_choice: choices\ndoc_to_target: said\nmetric_list:\n  - metric: acc\n",
        "d/rep.yaml": "task: dq_rep\n"
        + gen.replace(
            "metric_list",
            "repeats: 3\nfilter_list:\n"
            "  - name: maj\n    filter:\n      - function: majority_vote\n      - function: take_first\nmetric_list",
        ),
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def torchrun(
    nproc: int, plan: dict[str, Any], work: Path, env: dict[str, str], name: str
) -> tuple[int, str, float]:
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    return launch(argv, plan, work, env, name)


def accelerate_launch(
    nproc: int, plan: dict[str, Any], work: Path, env: dict[str, str], name: str
) -> tuple[int, str, float]:
    """The driver under ``accelerate launch`` (its multi-process launcher, gloo on this CPU machine)."""
    import socket

    with socket.socket() as probe:  # a free port: accelerate's default 29500 may be taken
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", f"--num_processes={nproc}"]
    argv += ["--num_machines=1", "--mixed_precision=no", "--dynamo_backend=no", f"--main_process_port={port}"]
    return launch(argv, plan, work, env, name)


def launch(
    argv: list[str], plan: dict[str, Any], work: Path, env: dict[str, str], name: str
) -> tuple[int, str, float]:
    """Run this file as the driver under the launcher ``argv``; its exit code, output and seconds."""
    plan_path = work / f"{name}.plan.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    started = time.monotonic()
    proc = subprocess.run(
        [*argv, str(Path(__file__).resolve()), str(plan_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=240,
    )
    output = proc.stdout + proc.stderr
    (work / f"{name}.log").write_text(output, encoding="utf-8")
    return proc.returncode, output, time.monotonic() - started


def dummy_step(out: Path, **extra: Any) -> dict[str, Any]:
    return {
        "evaluate": {
            "model": MODEL,
            "model_args": MODEL_ARGS,
            "tasks": TASKS,
            "output_path": str(out),
            "log_samples": True,
            **extra,
        },
        "summary": str(out),
    }


def hf_step(out: Path) -> dict[str, Any]:
    evaluate = {"model": "huggingface", "model_args": "pretrained=demo", "tasks": HF_TASKS, "limit": 5}
    return {"evaluate": {**evaluate, "output_path": str(out), "log_samples": True}, "summary": str(out)}


@pytest.fixture(scope="module")
def launches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every launch of this module, once: world size 1 in this process, then torchrun runs."""
    if not HAS_TORCH:
        pytest.skip("torch is not installed")
    work = tmp_path_factory.mktemp("dist")
    include = str(write_tasks(work / "tasks"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DIST_TEST_", "RANK", "WORLD_SIZE"))}
    env.update(
        LMMS_EVAL_HOME=str(work / "home"),
        HF_HUB_OFFLINE="1",
        LMMS_EVAL_NUM_THREADS="1",
        LMMS_EVAL_DIST_TIMEOUT="120",  # generous: a loaded CI machine is slow between meetings
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
    )
    found: dict[str, Any] = {"work": work}
    # world size 1: this process, the same driver
    plan1 = {"include_path": include, "steps": [dummy_step(work / "w1")]}
    if HAS_HF:
        plan1["steps"].append(hf_step(work / "hf1"))
    (work / "w1.plan.json").write_text(json.dumps(plan1), encoding="utf-8")
    saved = dict(os.environ)
    from lmms_eval.models import ensure_registry

    snapshot = ensure_registry().snapshot()
    try:
        os.environ.update(LMMS_EVAL_HOME=str(work / "home1"), LMMS_EVAL_NUM_THREADS="1")
        assert drive(str(work / "w1.plan.json")) == 0
    finally:
        ensure_registry().restore(snapshot)
        os.environ.clear()
        os.environ.update(saved)
    # rank 1 raises in the second task; the answers given before stay in the cache
    fault = {**env, "DIST_TEST_FAULT": "raise", "DIST_TEST_FAULT_AFTER": str(FAULT_AFTER)}
    cli = ["eval", "--model", MODEL, "--model_args", MODEL_ARGS, "--tasks", ",".join(TASKS)]
    cli += [
        "--include_path",
        include,
        "--use_cache",
        str(work / "cache"),
        "--output_path",
        str(work / "fail"),
    ]
    found["raise"] = torchrun(2, {"include_path": include, "steps": [{"cli": cli}]}, work, fault, "raise")
    found["stored_before_resume"] = _cache_entries(work / "cache")
    # rank 1 dies (os._exit) in the middle of the run
    dies = {**env, "DIST_TEST_FAULT": "exit", "DIST_TEST_FAULT_AFTER": "2"}
    cli_exit = [*cli[:-4], "--output_path", str(work / "died")]
    found["exit"] = torchrun(2, {"include_path": include, "steps": [{"cli": cli_exit}]}, work, dies, "exit")
    # world size 2: the same runs, the resume of the failed run, and a server job through the worker
    job = work / "job.json"
    job_keywords = {
        "model": MODEL,
        "model_args": MODEL_ARGS,
        "tasks": ["dq_plain"],
        "output_path": str(work / "job"),
    }
    job.write_text(json.dumps({**job_keywords, "include_path": include}), encoding="utf-8")
    steps2 = [dummy_step(work / "w2"), dummy_step(work / "resume", use_cache=str(work / "cache"))]
    steps2.append({"worker": [str(job), str(work / "progress.json")]})
    if HAS_HF:
        steps2.append(hf_step(work / "hf2"))
    found["w2"] = torchrun(2, {"include_path": include, "steps": steps2}, work, env, "w2")
    # world size 3: the same runs; the cache filled by 2 ranks answers everything
    steps3 = [dummy_step(work / "w3"), dummy_step(work / "cached3", use_cache=str(work / "cache"))]
    if HAS_HF:
        steps3.append(hf_step(work / "hf3"))
    found["w3"] = torchrun(3, {"include_path": include, "steps": steps3}, work, env, "w3")
    if HAS_ACCELERATE:  # the same run under accelerate launch
        plan_acc = {"include_path": include, "steps": [dummy_step(work / "acc2")]}
        found["acc2"] = accelerate_launch(2, plan_acc, work, env, "acc2")
    yield found


def _cache_entries(path: Path) -> int:
    from lmms_eval.caching import ResponseCache

    with ResponseCache(path) as cache:
        return len(cache)


# -- comparing runs ---------------------------------------------------------------------------------

VOLATILE = {
    "date",
    "start_time",
    "end_time",
    "total_evaluation_time_seconds",
    "timings",
    "throughput",
    "output_files",
    "config",
    "distributed",
    "cache",
}
TIMING_KEYS = {"latency_s", "time_to_first_token_s"}


def results_file(out: Path) -> dict[str, Any]:
    (path,) = out.rglob("*_results.json")
    return json.loads(path.read_text(encoding="utf-8"))


def comparable(out: Path) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """A run's results without times and paths, and its samples without latencies."""
    results = {k: v for k, v in results_file(out).items() if k not in VOLATILE}
    samples: dict[str, list[Any]] = {}
    for path in sorted(out.rglob("*_samples_*.jsonl")):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for record in records:
            for counts in record.get("token_counts") or []:
                for key in TIMING_KEYS & set(counts or {}):
                    counts.pop(key)
        samples[path.name.split("_samples_")[1].removesuffix(".jsonl")] = records
    return results, samples


def assert_launch_ok(launch: tuple[int, str, float]) -> None:
    code, output, _ = launch
    assert code == 0, output[-4000:]


# -- multi-rank tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("world", ["w2", "w3"])
def test_results_and_samples_are_identical_for_any_number_of_ranks(
    launches: dict[str, Any], world: str
) -> None:
    assert_launch_ok(launches[world])
    work = launches["work"]
    one, one_samples = comparable(work / "w1")
    many, many_samples = comparable(work / world)
    assert many == one
    assert many_samples == one_samples
    assert set(one_samples) == {"dq_plain", "dq_g1", "dq_g2", "dq_mcr", "dq_ll", "dq_rep"}
    # samples in document order, scores neither trivial nor empty
    assert [s["doc_id"] for s in many_samples["dq_plain"]] == list(range(11))
    assert 0.0 < one["results"]["dq_plain"]["exact_match,none"] < 1.0
    assert one["results"]["dq_plain"]["exact_match_stderr,none"] > 0
    assert one["results"]["dq_mcr"]["exact_match,letter"] > 0  # the filter saw each doc's own choices
    assert [len(s["resps"][0]) for s in many_samples["dq_rep"]] == [3] * 11
    header = results_file(work / world)
    assert header["distributed"] == {"world_size": int(world[1]), "launcher": "torchrun"}
    # every rank returns rank 0's results
    ranks = [
        json.loads((work / f"{world}.rank{r}.json").read_text())["results"] for r in range(int(world[1]))
    ]
    assert all(r == ranks[0] for r in ranks) and ranks[0] == one["results"]


@pytest.mark.skipif(not HAS_ACCELERATE, reason="needs accelerate (the hf extra)")
def test_accelerate_launch_gives_the_same_files(launches: dict[str, Any]) -> None:
    assert_launch_ok(launches["acc2"])
    work = launches["work"]
    assert comparable(work / "acc2") == comparable(work / "w1")
    assert results_file(work / "acc2")["distributed"] == {"world_size": 2, "launcher": "accelerate"}
    assert len(list((work / "acc2").rglob("*_results.json"))) == 1  # rank 0 alone writes


@pytest.mark.skipif(not HAS_HF, reason="needs torch and transformers")
@pytest.mark.parametrize("world", ["hf2", "hf3"])
def test_a_tiny_hf_model_gives_identical_results_on_any_number_of_ranks(
    launches: dict[str, Any], world: str
) -> None:
    assert_launch_ok(launches["w" + world[-1]])
    work = launches["work"]
    assert comparable(work / world) == comparable(work / "hf1")
    assert "acc,none" in results_file(work / "hf1")["results"]["dq_ll"]


def test_a_rank_that_raises_fails_the_run_with_one_message_naming_it(launches: dict[str, Any]) -> None:
    code, output, _ = launches["raise"]
    assert code != 0  # launch() stops at 240 s, far below the 1800 s meeting timeout: no hang
    lines = [line for line in output.splitlines() if line.startswith("lmms-eval: error:")]
    assert lines and all("rank 1 failed during task dq_g1: ValueError: injected fault" in x for x in lines), (
        output
    )
    results = results_file(launches["work"] / "fail")
    assert results["status"] == "interrupted" and "rank 1" in results["error"]
    assert set(results["results"]) == {"dq_plain"}  # the task finished before is kept


def test_a_rank_that_dies_fails_the_run_without_hanging(launches: dict[str, Any]) -> None:
    code, output, _ = launches["exit"]
    assert code != 0  # launch() stops at 240 s, far below the 1800 s meeting timeout: no hang
    assert "rank 1 stopped during task dq_plain without reporting an error" in output, output[-3000:]


def test_a_resumed_run_sends_only_what_the_failed_run_did_not_answer(launches: dict[str, Any]) -> None:
    assert_launch_ok(launches["w2"])
    work = launches["work"]
    stored = launches["stored_before_resume"]
    total_requests = 11 * 4 + 11 * 3 + 11 * 4  # 4 generation tasks, 3 repeats, 4 choices
    assert 0 < stored < total_requests
    summaries = [json.loads((work / f"resume.rank{r}.json").read_text()) for r in range(2)]
    cache = summaries[0]["cache"]
    assert cache["hits"] == stored and cache["model_calls"] == total_requests - stored
    assert comparable(work / "resume")[0] == comparable(work / "w1")[0]
    # three ranks later: all answers come from the cache written by two ranks
    assert_launch_ok(launches["w3"])
    again = json.loads((work / "cached3.rank0.json").read_text())["cache"]
    assert again["hits"] == total_requests and again["model_calls"] == 0


def test_the_server_worker_writes_progress_and_results_on_rank_0_only(launches: dict[str, Any]) -> None:
    assert_launch_ok(launches["w2"])
    work = launches["work"]
    progress = json.loads((work / "progress.json").read_text())
    assert progress["task"] == "dq_plain" and progress["done"] == progress["total"]
    assert len(list((work / "job").rglob("*_results.json"))) == 1
    assert launches["w2"][1].count("job finished") == 1


if __name__ == "__main__":
    sys.exit(drive(sys.argv[1]))
