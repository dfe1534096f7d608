"""The pieces of data-parallel runs that need no second process: launch variables, sharding,
devices, concurrency shares, cache shard merging and the import cost."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval.api.instance import Instance
from lmms_eval.caching import CacheEntry, CacheError, NotACacheError, ResponseCache
from lmms_eval.distributed import (
    LaunchInfo,
    RunGroup,
    device_for_rank,
    is_main_process,
    launch_info,
    run_group,
    shard_indices,
    timeout_s,
)
from lmms_eval.distributed.launch import first_host, tasks_on_node
from lmms_eval.errors import ConfigError, ModelArgsError
from lmms_eval.models.api.concurrency import AdaptiveConcurrency, rank_share


def test_torchrun_and_accelerate_variables() -> None:
    env = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1"}
    env |= {"MASTER_ADDR": "node0", "MASTER_PORT": "29400", "TORCHELASTIC_RUN_ID": "x"}
    info = launch_info(env)
    assert info == LaunchInfo(5, 8, 1, 4, 1, "node0", 29400, "torchrun")
    assert info.distributed and not info.is_main and info.init_method() == "env://"
    accelerate = launch_info({**env, "ACCELERATE_MIXED_PRECISION": "no"})
    assert accelerate.launcher == "accelerate"
    assert launch_info({}) == LaunchInfo() and not launch_info({"WORLD_SIZE": "1"}).distributed


def test_slurm_variables_count_inside_srun_only() -> None:
    env = {
        "SLURM_PROCID": "5",
        "SLURM_NTASKS": "8",
        "SLURM_LOCALID": "1",
        "SLURM_NODEID": "1",
        "SLURM_TASKS_PER_NODE": "4(x2)",
        "SLURM_JOB_NODELIST": "gpu[07-08]",
        "SLURM_JOB_ID": "123",
    }
    assert launch_info(env) == LaunchInfo()  # the batch script itself: one process
    info = launch_info({**env, "SLURM_STEP_ID": "0"})
    assert (info.rank, info.world_size, info.local_rank, info.local_world_size) == (5, 8, 1, 4)
    assert info.init_method() == "tcp://gpu07:29623" and info.launcher == "slurm"
    assert launch_info(
        {**env, "SLURM_STEP_ID": "0", "MASTER_ADDR": "h", "MASTER_PORT": "1"}
    ).init_method() == ("tcp://h:1")
    assert first_host("a1,b[2-3]") == "a1" and first_host("rack[3,5]-n[010-012],x") == "rack3-n010"
    assert [tasks_on_node("4(x2),3", n) for n in range(3)] == [4, 4, 3]


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"WORLD_SIZE": "two"}, "WORLD_SIZE"),
        ({"WORLD_SIZE": "2"}, "RANK"),
        ({"WORLD_SIZE": "2", "RANK": "2"}, "rank 2"),
        ({"WORLD_SIZE": "2", "RANK": "0", "LMMS_EVAL_DIST_TIMEOUT": "0"}, None),
    ],
)
def test_bad_launch_variables_are_one_clear_error(env: dict[str, str], named: str | None) -> None:
    if named is None:
        with pytest.raises(ConfigError, match="LMMS_EVAL_DIST_TIMEOUT"):
            timeout_s(env)
        return
    with pytest.raises(ConfigError, match=named):
        launch_info(env)
    assert is_main_process(env)  # a broken launch counts as the main process (it prints the error)


def _requests(docs: list[int]) -> list[Instance]:
    out = []
    for doc in docs:
        for idx in range(2):
            request = Instance("loglikelihood", ("ctx", "c"), idx, metadata={})
            request.doc_id = doc
            out.append(request)
    return out


@pytest.mark.parametrize("world", [1, 2, 3, 4, 7])
def test_sharding_covers_every_request_once_and_keeps_a_documents_requests_together(world: int) -> None:
    requests = _requests([3, 4, 5, 6, 7, 8, 9])
    shards = [shard_indices(requests, rank, world) for rank in range(world)]
    assert sorted(i for shard in shards for i in shard) == list(range(len(requests)))
    for shard in shards:
        assert shard == sorted(shard)
        docs = {requests[i].doc_id for i in shard}
        assert all(requests[i].doc_id in docs for i in range(len(requests)) if i in shard)
        assert len(docs) * 2 == len(shard)  # both requests of each doc on the same rank
    assert [requests[i].doc_id for i in shards[0]][:2] == [3, 3]


def test_the_single_process_group_changes_nothing() -> None:
    group = run_group({})
    requests = _requests([0, 1])
    assert type(group) is RunGroup and group.is_main and group.shard(requests) == requests
    assert group.sum_counts({"hits": 2}) == {"hits": 2} and group.share("x") == "x"
    error = ValueError("x")
    assert group.failed(error) is error


def test_device_per_rank() -> None:
    two = LaunchInfo(rank=3, world_size=4, local_rank=1, local_world_size=2)
    assert device_for_rank(None, True, two) == "cuda:1"
    assert device_for_rank("cuda", True, two) == "cuda:1"
    assert device_for_rank("cuda:0", True, two) == "cuda:0"  # an explicit index is kept
    assert device_for_rank(None, False, two) == "cpu"
    assert device_for_rank(None, True, LaunchInfo()) == "cuda"


def test_local_backends_refuse_a_layout_that_would_share_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.models.chat.vllm import check_one_engine_per_machine
    from lmms_eval.models.hf.backend import check_device_map

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    with pytest.raises(ModelArgsError, match="device_map=auto spreads one model"):
        check_device_map("auto", "huggingface")
    check_device_map(None, "huggingface")
    with pytest.raises(ModelArgsError, match="tensor_parallel_size / data_parallel_size"):
        check_one_engine_per_machine("vllm")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")  # one process per machine, several machines
    check_one_engine_per_machine("vllm")
    check_device_map("auto", "huggingface")


def test_api_concurrency_is_split_across_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [rank_share(10, r, 4) for r in range(4)] == [3, 3, 2, 2]
    assert rank_share(2, 3, 4) == 1
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    assert AdaptiveConcurrency(10).limit == 2
    assert AdaptiveConcurrency(10, split_across_ranks=False).limit == 10
    monkeypatch.delenv("WORLD_SIZE")
    assert AdaptiveConcurrency(10).limit == 10


def _entry(key: str, doc: int) -> CacheEntry:
    return CacheEntry(key, "generate_until", "t", doc, 0, 0, "m", "fp", {"text": f"answer {doc}"})


def test_merge_shards_joins_the_caches_of_several_ranks(tmp_path: Path) -> None:
    shards = []
    for rank in range(3):
        with ResponseCache(tmp_path / f"rank{rank}") as cache:
            cache.put_many([_entry(f"k{doc}", doc) for doc in range(rank, 9, 3)])
        shards.append(tmp_path / f"rank{rank}")
    # one shard as a folder, one as its cache.db, one as a run file left by a killed process
    run_file = tmp_path / "rank2" / "runs" / "left.db"
    (tmp_path / "rank2" / "cache.db").rename(run_file)
    paths = [shards[0], shards[1] / "cache.db", run_file]
    assert ResponseCache.merge_shards(shard_paths=paths, output_path=tmp_path / "all") == 9
    with ResponseCache(tmp_path / "all") as merged:
        found = merged.get_many([f"k{doc}" for doc in range(9)])
    assert {key: record["text"] for key, record in found.items()} == {
        f"k{d}": f"answer {d}" for d in range(9)
    }
    with pytest.raises(CacheError, match="does not exist"):
        ResponseCache.merge_shards(shard_paths=[tmp_path / "nope"], output_path=tmp_path / "all")
    foreign = tmp_path / "other.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(NotACacheError, match=r"other\.db"):
        ResponseCache.merge_shards(shard_paths=[foreign], output_path=tmp_path / "all" / "cache.db")


def test_importing_the_package_and_the_distributed_module_imports_no_torch() -> None:
    code = "import sys, lmms_eval.distributed, lmms_eval.evaluator; print(json.dumps('torch' in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) is False
