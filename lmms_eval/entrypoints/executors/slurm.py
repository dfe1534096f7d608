"""Jobs as SLURM jobs, through SLURM's own commands: ``sbatch``, ``squeue``, ``scontrol``, ``scancel``.

The commands find the cluster as any SLURM client does (``SLURM_CONF`` or the system
``slurm.conf``, inherited from the server's environment). Each job becomes one SLURM job named
``lmms-eval-<job_id>``, submitted with ``--requeue`` (a preempted job starts again and resumes
from the response cache) and its log appended to ``<shared_dir>/logs/<job_id>.log``. On the
node, the batch script runs the ordinary worker (under ``srun``, one task per GPU, when the job
spans several GPUs); nothing else of the server runs there.

A job's state comes from ``squeue`` (one call for every watched job, every
:data:`POLL_EVERY_S`) and, once it ended, ``scontrol show job`` for SLURM's reason and exit code:
no accounting daemon (``sacct``) is needed. When the server stops, SLURM jobs go on; the next
server finds them again by id, or by name when it stopped between ``sbatch`` and recording the id.
"""

from __future__ import annotations

import logging
import math
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lmms_eval.entrypoints.executors import Ended, Executor, ExecutorError, Handle, Launch, log_tail
from lmms_eval.entrypoints.server_args import TOKEN_ENV, ServerArgs, sbatch_extra
from lmms_eval.entrypoints.store import JobRow, Throttle

logger = logging.getLogger(__name__)

JOB_NAME_PREFIX = "lmms-eval-"
POLL_EVERY_S = 2.0
COMMAND_TIMEOUT_S = 60.0
# sbatch complaints that pass (the controller busy or unreachable): the job is submitted later;
# any other (an unknown partition, account or QOS, resources no node has) fails the job
TRANSIENT = ("temporarily", "unable to contact", "timed out", "socket", "try again", "connection")
# states of a job that may still run (SLURM's JOB_STATE names, as squeue %T prints them)
ACTIVE = frozenset(
    [
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SUSPENDED",
        "STOPPED",
        "SIGNALING",
        "STAGE_OUT",
        "RESV_DEL_HOLD",
        "POWER_UP_NODE",
    ]
)


@dataclass
class _Job:
    job_id: str
    slurm_id: str
    log_file: Path
    cancelled: bool = False


@dataclass(frozen=True)
class SlurmState:
    """One job as ``squeue`` shows it."""

    slurm_id: str
    name: str
    state: str
    reason: str


def job_name(job_id: str) -> str:
    return f"{JOB_NAME_PREFIX}{job_id}"


def _slurm_env() -> dict[str, str]:
    """The server's environment for the SLURM commands (and, through sbatch, the job), less its token."""
    return {k: v for k, v in os.environ.items() if k != TOKEN_ENV}


def slurm_command(argv: list[str], stdin: str | None = None) -> str:
    """Run a SLURM client command; its stdout, or :class:`ExecutorError` with its one-line complaint."""
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, env=_slurm_env())  # fmt: skip
    except FileNotFoundError:
        raise ExecutorError(f"{argv[0]}: not found (install SLURM's client commands on this host)") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExecutorError(f"{argv[0]}: {exc}") from None
    if done.returncode != 0:
        why = " ".join(done.stderr.split())[:300] or f"exit status {done.returncode}"
        raise ExecutorError(why if why.startswith(argv[0]) else f"{argv[0]}: {why}")
    return done.stdout


def _squeue(selector: list[str]) -> list[SlurmState]:
    """``squeue`` over ``selector`` (``-j ids`` or ``--name=names``), recently ended jobs included."""
    try:
        out = slurm_command(["squeue", "--noheader", "--states=all", "--format=%i|%j|%T|%r", *selector])
    except ExecutorError as exc:
        if "Invalid job id" in str(exc):  # every id asked for is gone from slurmctld's memory
            return []
        raise
    rows = [line.split("|", 3) for line in out.splitlines() if line.count("|") >= 3]
    return [SlurmState(r[0].strip(), r[1], r[2].strip(), r[3].strip()) for r in rows]


def _show_job(slurm_id: str) -> dict[str, str]:
    """``scontrol show job -o``'s ``Key=Value`` fields ({} when SLURM has forgotten the job)."""
    try:
        out = slurm_command(["scontrol", "show", "job", "-o", slurm_id])
    except ExecutorError:
        return {}
    fields: dict[str, str] = {}
    for word in out.split():
        key, sep, value = word.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields


def nodes_and_gpus(num_gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """``(nodes, GPUs per node)`` of a job asking for ``num_gpus`` (0 GPUs on CPU-only nodes)."""
    if gpus_per_node == 0 or num_gpus == 0:
        return 1, 0
    nodes = math.ceil(num_gpus / gpus_per_node)
    return nodes, num_gpus // nodes


class SlurmExecutor(Executor):
    """Jobs handed to SLURM (``lmms-eval serve --executor slurm``)."""

    name = "slurm"
    outlives_server = True

    def __init__(self, args: ServerArgs, poll_every_s: float = POLL_EVERY_S, check: bool = True) -> None:
        """``check``: ask the cluster once (``squeue``) that it answers; :class:`ExecutorError`
        (one line) when it does not, so that the server does not start."""
        conf = os.environ.get("SLURM_CONF")
        if check and conf and not os.path.isfile(conf):  # squeue would retry it for a minute
            raise ExecutorError(f"--executor slurm: SLURM_CONF={conf} is not a file (SLURM's slurm.conf)")
        if check:
            try:
                slurm_command(["squeue", "--noheader", "--jobs=0", "--format=%i"])
            except ExecutorError as exc:
                if "Invalid job id" not in str(exc):
                    where = conf or "the system slurm.conf"
                    raise ExecutorError(
                        f"--executor slurm: SLURM does not answer ({exc}); cluster: {where}"
                    ) from None
        self.args = args
        self.poll_every_s = poll_every_s
        self._jobs: dict[str, _Job] = {}
        self._last_poll = 0.0
        self._throttle = Throttle()

    def refusal(self, num_gpus: int) -> str | None:
        per_node = self.args.slurm_gpus_per_node
        if per_node and num_gpus > per_node and num_gpus % per_node:
            return (
                f"num_gpus: {num_gpus} GPUs do not fill whole nodes of {per_node} "
                f"(--slurm_gpus_per_node); ask for at most {per_node} or a multiple of it"
            )
        return None

    def watched(self) -> list[str]:
        return list(self._jobs)

    def executor_job_id(self, job_id: str) -> str | None:
        job = self._jobs.get(job_id)
        return job.slurm_id if job else None

    def sbatch_argv(self, launch: Launch) -> list[str]:
        """The ``sbatch`` command of a job (the batch script comes on stdin)."""
        nodes, gpus = nodes_and_gpus(launch.num_gpus, self.args.slurm_gpus_per_node)
        argv = ["sbatch", "--parsable", f"--job-name={job_name(launch.job_id)}",
                f"--output={launch.log_file}", "--open-mode=append", "--requeue",
                f"--chdir={launch.log_file.parent}", f"--nodes={nodes}"]  # fmt: skip
        argv += [f"--ntasks-per-node={gpus}", f"--gres=gpu:{gpus}"] if gpus else ["--ntasks=1"]
        for flag, value in (("--partition", self.args.slurm_partition), ("--account", self.args.slurm_account),
                            ("--qos", self.args.slurm_qos), ("--time", self.args.slurm_time)):  # fmt: skip
            if value:
                argv.append(f"{flag}={value}")
        return argv + sbatch_extra(self.args.slurm_extra)

    def batch_script(self, launch: Launch) -> str:
        """The script SLURM runs on the first node: a private temporary folder, then the worker
        (each rank under ``srun`` when the job spans several GPUs)."""
        nodes, gpus = nodes_and_gpus(launch.num_gpus, self.args.slurm_gpus_per_node)
        worker = shlex.join([sys.executable, *launch.worker_args()])
        if nodes * gpus > 1:
            worker = f"srun --kill-on-bad-exit=1 {worker}"
        prefix = shlex.quote(f"{self.args.temp_dir_prefix}{launch.job_id}_")
        return f"""#!/bin/bash
# lmms-eval server job {launch.job_id}: the ordinary worker, its log appended to {launch.log_file.name}
echo "--- job {launch.job_id}: attempt {launch.attempt} (SLURM job $SLURM_JOB_ID on $(hostname -s), \
restart ${{SLURM_RESTART_COUNT:-0}})"
tmp=$(mktemp -d "${{TMPDIR:-/tmp}}/"{prefix}XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' TERM
cd "$tmp" || exit 1
export TMPDIR="$tmp" PYTHONUNBUFFERED=1
{worker}
"""

    def _find(self, job_id: str) -> SlurmState | None:
        """The SLURM job of ``job_id`` by its name (the newest, when SLURM still shows several)."""
        found = _squeue([f"--name={job_name(job_id)}"])
        active = [s for s in found if s.state in ACTIVE]
        pick = active or found
        return max(pick, key=lambda s: int(s.slurm_id) if s.slurm_id.isdigit() else 0) if pick else None

    def submit(self, launch: Launch) -> Handle:
        if launch.attempt > 1:  # a server that stopped between sbatch and the store: never twice
            known = self._find(launch.job_id)
            if known is not None and known.state in ACTIVE:
                logger.info("job %s: SLURM job %s already runs it", launch.job_id, known.slurm_id)
                self._jobs[launch.job_id] = _Job(launch.job_id, known.slurm_id, launch.log_file)
                return Handle(known.slurm_id)
        try:
            out = slurm_command(self.sbatch_argv(launch), stdin=self.batch_script(launch))
        except ExecutorError as exc:
            transient = any(word in str(exc).lower() for word in TRANSIENT) or "not found" in str(exc)
            raise ExecutorError(str(exc), permanent=not transient) from None
        slurm_id = out.strip().split(";")[0]
        if not slurm_id.isdigit():
            raise ExecutorError(f"sbatch: unexpected answer {out.strip()[:100]!r}")
        self._jobs[launch.job_id] = _Job(launch.job_id, slurm_id, launch.log_file)
        logger.info("job %s submitted as SLURM job %s", launch.job_id, slurm_id)
        return Handle(slurm_id)

    def cancel(self, job_id: str) -> bool:
        job = self._jobs.get(job_id)
        if job is None:
            return False
        job.cancelled = True
        try:
            slurm_command(["scancel", job.slurm_id])
        except ExecutorError as exc:  # it may have ended meanwhile: the next poll says how
            logger.warning("job %s: %s", job_id, exc)
        return True

    def poll(self) -> list[tuple[str, Ended]]:
        now = time.monotonic()
        if not self._jobs or now - self._last_poll < self.poll_every_s:
            return []
        self._last_poll = now
        try:
            states = {
                s.slurm_id: s
                for s in _squeue(["--jobs=" + ",".join(j.slurm_id for j in self._jobs.values())])
            }
        except ExecutorError as exc:  # slurmctld unreachable: the jobs are not failed for it
            if self._throttle.allow(str(exc)):
                logger.warning("cannot ask SLURM about the running jobs: %s", exc)
            return []
        ended: list[tuple[str, Ended]] = []
        for job_id, job in list(self._jobs.items()):
            state = states.get(job.slurm_id)
            if state is not None and state.state in ACTIVE:
                continue
            del self._jobs[job_id]
            ended.append((job_id, self._outcome(job, state)))
        return ended

    def _outcome(self, job: _Job, state: SlurmState | None) -> Ended:
        """How an ended SLURM job went, in SLURM's words (state, reason, exit code) and its log's."""
        if state is None:
            return Ended("lost", f"SLURM job {job.slurm_id} is no longer known to SLURM")
        if state.state == "COMPLETED":
            return Ended("completed")
        if job.cancelled:
            return Ended("cancelled")
        shown = _show_job(job.slurm_id)
        reason = shown.get("Reason", state.reason)
        exit_code = shown.get("ExitCode", "?")
        tail = log_tail(job.log_file)
        logger.info("job %s: SLURM job %s ended %s (%s)", job.job_id, job.slurm_id, state.state, reason)
        if state.state == "CANCELLED":
            why = f"SLURM job {job.slurm_id} was cancelled outside the server (state CANCELLED, reason {reason})"
            return Ended("cancelled", f"{why}\n{tail}")
        why = f"SLURM job {job.slurm_id} ended {state.state} (reason {reason}, exit code {exit_code})"
        return Ended("failed", f"{why}\n{tail}")

    def attach(self, row: JobRow, launch: Launch) -> bool | Ended:
        """Find the job's SLURM job (by the recorded id, else by its name): watched again while it
        may run; how it ended when it ended while no server watched; False when there is none."""
        eid = row.executor_job_id
        found = _squeue([f"--jobs={eid}"]) if eid else []
        state = found[0] if found else self._find(row.job_id)
        if state is None:
            return False
        job = _Job(row.job_id, state.slurm_id, launch.log_file)
        if state.state in ACTIVE:
            self._jobs[row.job_id] = job
            logger.info("job %s: re-attached to SLURM job %s (%s)", row.job_id, state.slurm_id, state.state)
            return True
        return self._outcome(job, state)

    def stop(self) -> None:
        if self._jobs:
            logger.info("%d SLURM job(s) go on; the next server re-attaches them", len(self._jobs))
        self._jobs.clear()
