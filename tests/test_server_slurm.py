"""``lmms-eval serve --executor slurm`` against a real single-node SLURM cluster (tests/slurm_cluster.py):
a job becomes one SLURM job and completes; DELETE cancels it through scancel; a job SLURM kills
(scancel from outside, its time limit) ends with SLURM's reason and the log tail; a requeued
(preempted) job resumes from the response cache; a server killed with -9 re-attaches its SLURM
jobs on restart and never submits one twice. The first tests need no cluster: the sbatch command
and the batch script of a job, and the flags' validation."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
from slurm_cluster import SlurmCluster, slurm  # noqa: F401  (the session fixture)
from test_eval_server import Server, free_port, submit, wait

from lmms_eval.entrypoints.executors import Launch
from lmms_eval.entrypoints.executors.slurm import SlurmExecutor
from lmms_eval.entrypoints.server_args import ServerArgs

SLOW = {"latency": 0.25, "answer_field": "answer"}
TOKEN = "slurm-test-token-0123456789"
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "service.md"
SLURM_FLAGS = ("--executor", "slurm", "--slurm_gpus_per_node", "0", "--slurm_partition", "debug")


def _launch(tmp_path: Path, num_gpus: int) -> Launch:
    return Launch("abc123", num_gpus, 1, tmp_path / "jobs" / "abc123.json",
                  tmp_path / "progress" / "abc123.json", tmp_path / "logs" / "abc123.log")  # fmt: skip


# -- no cluster needed -----------------------------------------------------------------------------


def test_a_multi_gpu_job_asks_whole_nodes_and_runs_its_ranks_under_srun(tmp_path: Path) -> None:
    args = ServerArgs(executor="slurm", slurm_partition="gpu", slurm_account="lab", slurm_qos="high",
                      slurm_time="4:00:00", slurm_gpus_per_node=4, slurm_extra="--mem=64G --constraint='a100&ib'")  # fmt: skip
    executor = SlurmExecutor(args, check=False)
    argv = executor.sbatch_argv(_launch(tmp_path, 8))
    assert argv[:2] == ["sbatch", "--parsable"]
    for flag in ("--job-name=lmms-eval-abc123", f"--output={tmp_path}/logs/abc123.log", "--open-mode=append",
                 "--requeue", "--nodes=2", "--ntasks-per-node=4", "--gres=gpu:4", "--partition=gpu",
                 "--account=lab", "--qos=high", "--time=4:00:00", "--mem=64G", "--constraint=a100&ib"):  # fmt: skip
        assert flag in argv, (flag, argv)
    script = executor.batch_script(_launch(tmp_path, 8))
    assert script.startswith("#!/bin/bash\n")
    assert f"srun --kill-on-bad-exit=1 {sys.executable} -m lmms_eval.entrypoints.worker" in script
    one = executor.batch_script(_launch(tmp_path, 1))
    assert "srun" not in one and f"\n{sys.executable} -m lmms_eval.entrypoints.worker" in one
    assert "--gres=gpu:1" in executor.sbatch_argv(_launch(tmp_path, 1))
    assert executor.refusal(6) is not None and "multiple" in str(executor.refusal(6))
    assert executor.refusal(4) is None and executor.refusal(12) is None
    cpu = SlurmExecutor(ServerArgs(executor="slurm", slurm_gpus_per_node=0), check=False)
    assert "--ntasks=1" in cpu.sbatch_argv(_launch(tmp_path, 2))
    assert not any(a.startswith("--gres") for a in cpu.sbatch_argv(_launch(tmp_path, 2)))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--executor", "slurm", "--slurm_time", "5 minutes"], "--slurm_time: Value error, not a SLURM time"),
        (
            ["--executor", "slurm", "--slurm_extra", "--mem=4G --output=/tmp/x"],
            "--output is set by the server",
        ),
        (["--executor", "slurm", "--slurm_extra", "-J other"], "-J is set by the server"),
        (["--executor", "slurm", "--slurm_extra=--mem=4G\n--x"], "must be one line"),
        (["--executor", "slurm", "--slurm_extra=--mem='4G"], "cannot be split into shell words"),
        (["--executor", "slurm", "--slurm_partition", "a;b"], "--slurm_partition: Value error, letters"),
        (["--slurm_partition", "gpu"], "--slurm_partition: Value error, is for --executor slurm"),
        (["--executor", "slurm", "--devices", "0,1"], "--devices is for --executor local"),
        (["--executor", "kubernetes"], "--executor: Input should be 'local' or 'slurm'"),
    ],
)
def test_bad_slurm_flags_are_one_line(tmp_path: Path, flags: list[str], message: str) -> None:
    _refused(tmp_path, flags, message)


def _refused(tmp_path: Path, flags: list[str], message: str, env: dict[str, str] | None = None) -> None:
    argv = [sys.executable, "-m", "lmms_eval", "serve", "--state_dir", str(tmp_path / "state"),
            "--port", str(free_port()), *flags]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode != 0
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("lmms-eval: error: ") and message in lines[0], lines


def test_a_server_that_cannot_reach_slurm_does_not_start(tmp_path: Path) -> None:
    if shutil.which("squeue") is None:
        pytest.skip("SLURM's client commands are not installed")
    env = {**os.environ, "SLURM_CONF": str(tmp_path / "missing.conf")}
    _refused(tmp_path, ["--executor", "slurm"], "--executor slurm: SLURM_CONF=", env)


# -- a real cluster --------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, slurm: SlurmCluster) -> Iterator[Server]:  # noqa: F811
    srv = Server(tmp_path, free_port(), token=TOKEN)
    srv.start(*SLURM_FLAGS)
    yield srv
    srv.stop()
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def _slurm_jobs(cluster: SlurmCluster, job_id: str) -> list[dict[str, str]]:
    return [j for j in cluster.jobs() if j["name"] == f"lmms-eval-{job_id}"]


def _until(check: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def _is_worker(proc: Path, job_id: str) -> bool:
    try:
        cmdline = (proc / "cmdline").read_bytes()
    except OSError:
        return False
    return b"lmms_eval.entrypoints.worker" in cmdline and job_id.encode() in cmdline


def _running_on_slurm(client: Any, cluster: SlurmCluster, job_id: str, done: int = 1) -> str:
    """Wait until the job's worker reports ``done`` answers; its SLURM job id (RUNNING in squeue)."""

    def progressed() -> bool:
        progress = client.get(f"/jobs/{job_id}").json()["progress"]
        return bool(progress and progress["done"] >= done)

    _until(progressed, f"job {job_id} reported no progress")
    environ = [p / "environ" for p in Path("/proc").iterdir() if _is_worker(p, job_id)]
    assert environ and all(TOKEN.encode() not in e.read_bytes() for e in environ)  # the token stays home
    slurm_id = client.get(f"/jobs/{job_id}").json()["executor_job_id"]
    assert [j["state"] for j in _slurm_jobs(cluster, job_id)] == ["RUNNING"]
    return str(slurm_id)


def test_a_job_becomes_one_slurm_job_and_completes(server: Server, slurm: SlurmCluster) -> None:  # noqa: F811
    with server.client() as client:
        job = submit(client, model_args={"answer_field": "answer"}, limit=4)
        done = wait(client, job["job_id"], timeout=180)
        assert done["status"] == "completed", done["error"]
        assert done["result"]["results"]["demo_qa"]["exact_match,none"] == 1.0
        assert done["progress"]["done"] == done["progress"]["total"] == 4
        slurm_id = done["executor_job_id"]
        assert slurm_id and slurm_id.isdigit()
        shown = _slurm_jobs(slurm, job["job_id"])
        assert [(j["id"], j["state"]) for j in shown] == [(slurm_id, "COMPLETED")]
        log = client.get(f"/jobs/{job['job_id']}/logs").text
        assert f"--- job {job['job_id']}: attempt 1 (SLURM job {slurm_id} on {slurm.node}, restart 0)" in log
        assert "job finished" in log
        events = client.get(f"/jobs/{job['job_id']}/events").text
        assert "event: status" in events and '"completed"' in events
        scontrol = slurm.run("scontrol", "show", "job", "-o", slurm_id)
        assert "JobState=COMPLETED" in scontrol and "ExitCode=0:0" in scontrol
    assert not (server.root / "state" / "jobs" / f"{job['job_id']}.json").exists()  # its secrets went


def test_delete_cancels_the_slurm_job(server: Server, slurm: SlurmCluster) -> None:  # noqa: F811
    with server.client() as client:
        job = submit(client, model_args=SLOW, limit=200)
        slurm_id = _running_on_slurm(client, slurm, job["job_id"])
        assert client.delete(f"/jobs/{job['job_id']}").status_code == 200
        done = wait(client, job["job_id"], timeout=60)
        assert done["status"] == "cancelled" and done["error"] is None
        _until(
            lambda: [j["state"] for j in _slurm_jobs(slurm, job["job_id"])] == ["CANCELLED"], "not cancelled"
        )
        assert done["executor_job_id"] == slurm_id


def test_a_job_cancelled_outside_the_server_says_so_with_its_log(server: Server, slurm: SlurmCluster) -> None:  # noqa: F811
    with server.client() as client:
        job = submit(client, model_args=SLOW, limit=200)
        slurm_id = _running_on_slurm(client, slurm, job["job_id"])
        slurm.run("scancel", slurm_id)
        done = wait(client, job["job_id"], timeout=60)
        assert done["status"] == "cancelled"
        assert f"SLURM job {slurm_id} was cancelled outside the server (state CANCELLED" in done["error"]
        assert f"--- job {job['job_id']}: attempt 1" in done["error"]  # the log tail


@pytest.mark.slow  # SLURM enforces time limits in whole minutes: about 70 s
def test_a_job_over_its_time_limit_fails_with_timeout_and_the_log_tail(
    tmp_path: Path,
    slurm: SlurmCluster,  # noqa: F811
) -> None:
    srv = Server(tmp_path, free_port(), token=None)
    srv.start(*SLURM_FLAGS, "--slurm_time", "0:05")  # SLURM rounds it up to one minute
    try:
        with srv.client() as client:
            job = submit(client, model_args={"latency": 1.0}, limit=1000)
            slurm_id = _running_on_slurm(client, slurm, job["job_id"])
            done = wait(client, job["job_id"], timeout=240)
            assert done["status"] == "failed"
            first = done["error"].splitlines()[0]
            assert first.startswith(f"SLURM job {slurm_id} ended TIMEOUT (reason TimeLimit"), first
            assert "DUE TO TIME LIMIT" in done["error"]  # slurmstepd's line at the end of the log
            summary = client.get("/jobs").json()["jobs"][0]
            assert summary["status"] == "failed" and summary["error"]
    finally:
        srv.stop()


# opt-in (-m slow): on this single-node test cluster slurmctld sometimes shows the job FAILED after
# `scontrol requeue` and does not run it again within the test's wait (about 1 run in 4), and the
# server then reports it failed; to be investigated
@pytest.mark.slow
def test_a_requeued_job_starts_again_and_resumes_from_the_cache(server: Server, slurm: SlurmCluster) -> None:  # noqa: F811
    with server.client() as client:
        job = submit(client, model_args=SLOW, limit=40)
        slurm_id = _running_on_slurm(client, slurm, job["job_id"], done=8)
        slurm.run("scontrol", "requeue", slurm_id)  # what preemption with PreemptMode=REQUEUE does
        _until(lambda: [j["state"] for j in _slurm_jobs(slurm, job["job_id"])] == ["PENDING"], "not requeued")
        assert client.get(f"/jobs/{job['job_id']}").json()["status"] == "running"  # SLURM still has it
        # a requeued job waits two minutes (Reason=BeginTime) before it may start again: not here
        slurm.run("scontrol", "update", f"JobId={slurm_id}", "StartTime=now")
        done = wait(client, job["job_id"], timeout=300)
        assert done["status"] == "completed", done["error"]
        assert done["executor_job_id"] == slurm_id  # the same SLURM job, started again
        log = client.get(f"/jobs/{job['job_id']}/logs").text
        assert f"(SLURM job {slurm_id} on {slurm.node}, restart 1)" in log
        hits = [int(n) for n in re.findall(r"response cache \S+: (\d+) hits", log)]
        assert hits and hits[-1] >= 8, log[-2000:]  # the answers of the first start were not asked again


def test_a_two_gpu_job_runs_two_ranks_under_srun(tmp_path: Path, slurm: SlurmCluster) -> None:  # noqa: F811
    srv = Server(tmp_path, free_port(), token=None)
    srv.start("--executor", "slurm", "--slurm_gpus_per_node", "2")  # the cluster's node counts 2 GPUs
    try:
        with srv.client() as client:
            job = submit(client, model_args={"answer_field": "answer"}, limit=6, num_gpus=2)
            done = wait(client, job["job_id"], timeout=240)
            assert done["status"] == "completed", done["error"]
            assert done["result"]["results"]["demo_qa"]["exact_match,none"] == 1.0
            shown = slurm.run("scontrol", "show", "job", "-o", done["executor_job_id"])
            assert "NumTasks=2" in shown and "TresPerNode=gres:gpu:2" in shown, shown
            log = client.get(f"/jobs/{job['job_id']}/logs").text
            assert log.count("job finished") == 1, log[-3000:]  # rank 0 writes the results
            for rank in (0, 1):  # srun started both ranks, the launcher read SLURM's variables
                assert f"rank {rank} of 2 (local rank {rank}, slurm): process group joined" in log, log
            assert log.count("generate_until: 3 requests") == 2  # each answered half of the 6
    finally:
        srv.stop()


def test_a_job_sbatch_refuses_fails_with_sbatch_s_reason(tmp_path: Path, slurm: SlurmCluster) -> None:  # noqa: F811
    srv = Server(tmp_path, free_port(), token=None)
    srv.start("--executor", "slurm", "--slurm_partition", "nosuch", "--slurm_gpus_per_node", "0")
    try:
        with srv.client() as client:
            done = wait(client, submit(client)["job_id"], timeout=60)
            assert done["status"] == "failed" and done["executor_job_id"] is None
            assert done["error"].startswith("sbatch: error:")
            assert (
                "sbatch: error: Batch job submission failed: Invalid partition name specified"
                in done["error"]
            )
    finally:
        srv.stop()


def test_a_killed_server_reattaches_its_slurm_jobs_and_submits_none_twice(
    server: Server,
    slurm: SlurmCluster,  # noqa: F811
) -> None:
    with server.client() as client:
        first = submit(client, model_args=SLOW, limit=40)
        second = submit(client, model_args=SLOW, limit=40)
        ids = {j["job_id"]: _running_on_slurm(client, slurm, j["job_id"]) for j in (first, second)}
    server.stop(signal.SIGKILL)
    # the second as if the server died between sbatch and recording the SLURM id
    db = sqlite3.connect(server.root / "state" / "jobs.db")
    db.execute("UPDATE jobs SET executor_job_id=NULL WHERE job_id=?", (second["job_id"],))
    db.commit()
    db.close()
    server.start(*SLURM_FLAGS)
    with server.client() as client:
        for job_id, slurm_id in ids.items():
            done = wait(client, job_id, timeout=240)
            assert done["status"] == "completed", done["error"]
            assert [(j["id"], j["state"]) for j in _slurm_jobs(slurm, job_id)] == [(slurm_id, "COMPLETED")]
            assert done["executor_job_id"] == slurm_id
            log = client.get(f"/jobs/{job_id}/logs").text
            assert log.count("--- job") == 1 and "--- server: this job is watched again" in log


# -- the guide's cluster section -------------------------------------------------------------------


def _cluster_section() -> tuple[list[str], str]:
    """The shell lines and the output block of docs/service.md's "On a cluster (SLURM)"."""
    text = GUIDE.read_text(encoding="utf-8").split("## On a cluster (SLURM)", 1)[1].split("\n## ", 1)[0]
    shell = [
        line for block in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S) for line in block.splitlines()
    ]
    (shown,) = re.findall(r"^```text\n(.*?)^```", text, re.M | re.S)
    return shell, shown


def test_the_guides_cluster_command_is_a_valid_server_configuration() -> None:
    from lmms_eval.cli import build_parser

    shell, _ = _cluster_section()
    (serve,) = [line for line in shell if line.startswith("lmms-eval serve ")]
    parsed = build_parser().parse_args(shlex.split(serve)[1:])
    given = {k: v for k, v in vars(parsed).items() if k in ServerArgs.model_fields and v is not None}
    args = ServerArgs(**given)
    assert (
        args.executor == "slurm"
        and args.slurm_time == "4:00:00"
        and args.shared_path() == Path("/shared/eval/jobs")
    )
    executor = SlurmExecutor(args, check=False)
    argv = executor.sbatch_argv(_launch(Path("/shared/eval/jobs"), 16))
    for flag in (
        "--partition=gpu",
        "--account=mylab",
        "--qos=normal",
        "--nodes=2",
        "--gres=gpu:8",
        "--mem=128G",
    ):
        assert flag in argv, argv


def test_the_guides_squeue_and_scontrol_lines_show_what_it_says(server: Server, slurm: SlurmCluster) -> None:  # noqa: F811
    shell, shown = _cluster_section()
    documented_id = re.search(r"lmms-eval-([0-9a-f]{16})", shown)
    assert documented_id is not None
    with server.client() as client:
        job = submit(client, model_args=SLOW, limit=40)
        slurm_id = _running_on_slurm(client, slurm, job["job_id"])
        outputs = []
        for line in shell:
            if line.startswith(("squeue", "scontrol")):
                argv = shlex.split(
                    line.replace(documented_id.group(1), job["job_id"]).replace("job 1", f"job {slurm_id}")
                )
                outputs.append(slurm.run(*argv))
        client.delete(f"/jobs/{job['job_id']}")
    squeue_out, scontrol_out = outputs
    assert squeue_out.split()[:5] == shown.split()[:5]  # the same columns
    assert squeue_out.split()[5:8] == [slurm_id, f"lmms-eval-{job['job_id']}", "RUNNING"]
    for field in (
        "JobState=RUNNING",
        "Requeue=1",
        "Restarts=0",
        f"StdOut={server.root}/state/logs/{job['job_id']}.log",
    ):
        assert field in scontrol_out and field.split("=")[0] in shown
