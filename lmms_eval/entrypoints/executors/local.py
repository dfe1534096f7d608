"""Jobs as processes on the server's own machine, on free devices (``--devices``) or CPU slots.

Each job is one process group (``torch.distributed.run --standalone`` for ``num_gpus > 1``) in
its own temporary folder, with ``CUDA_VISIBLE_DEVICES`` set to the devices it got. Cancel sends
``SIGTERM``, then ``SIGKILL`` after :data:`KILL_GRACE_S`. When the server stops, its jobs are
killed; after a crash, a worker left behind is stopped and the job queued again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lmms_eval.entrypoints.executors import WORKER, Ended, Executor, ExecutorError, Handle, Launch, log_tail
from lmms_eval.entrypoints.server_args import ServerArgs
from lmms_eval.entrypoints.store import JobRow

logger = logging.getLogger(__name__)

KILL_GRACE_S = 5.0


@dataclass
class _Running:
    job_id: str
    proc: subprocess.Popen[bytes]
    devices: list[str]
    cpu: bool
    log: IO[bytes]
    log_path: Path
    tmp: str
    cancel_at: float | None = None


def worker_alive(pid: int, job_id: str) -> bool:
    """Whether ``pid`` is still the worker of ``job_id`` (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    return WORKER in cmdline and job_id in cmdline


def stop_orphan(pid: int, job_id: str) -> None:
    """Kill the process group of a worker no server watches, and wait (bounded) until it is gone."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_GRACE_S
    while worker_alive(pid, job_id) and time.monotonic() < deadline:
        time.sleep(0.05)


class LocalExecutor(Executor):
    """Worker processes on this machine (the default executor)."""

    name = "local"

    def __init__(self, args: ServerArgs) -> None:
        self.args = args
        self._running: dict[str, _Running] = {}

    def refusal(self, num_gpus: int) -> str | None:
        devices = self.args.devices
        if devices and num_gpus > len(devices):
            return f"num_gpus: {num_gpus} asked, the server has {len(devices)}"
        return None

    def _place(self, num_gpus: int) -> tuple[list[str], bool] | None:
        """The devices (or a CPU slot) a job of ``num_gpus`` gets now, or None when none is free."""
        used = {d for r in self._running.values() for d in r.devices}
        free = [d for d in self.args.devices or [] if d not in used]
        if self.args.devices and num_gpus > 0:
            return (free[:num_gpus], False) if len(free) >= num_gpus else None
        cpu_used = sum(1 for r in self._running.values() if r.cpu)
        return ([], True) if self.args.cpu_slots - cpu_used > 0 else None

    def fits(self, num_gpus: int) -> bool:
        return self._place(num_gpus) is not None

    def watched(self) -> list[str]:
        return list(self._running)

    def _argv(self, launch: Launch, n_gpus: int) -> list[str]:
        job = [str(launch.job_file), str(launch.progress_file)]
        if n_gpus > 1:
            return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc_per_node={n_gpus}", "-m", WORKER, *job]  # fmt: skip
        return [sys.executable, "-m", WORKER, *job]

    def submit(self, launch: Launch) -> Handle:
        place = self._place(launch.num_gpus)
        if place is None:
            raise ExecutorError(f"job {launch.job_id}: no free device or CPU slot")
        devices, cpu = place
        tmp: str | None = None
        try:
            tmp = tempfile.mkdtemp(prefix=f"{self.args.temp_dir_prefix}{launch.job_id}_")
            env = dict(
                os.environ, TMPDIR=tmp, PYTHONUNBUFFERED="1", LMMS_EVAL_JOB_NICE=str(self.args.job_nice)
            )
            if self.args.devices:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
            log = launch.log_file.open("ab")
            with contextlib.suppress(OSError):  # a full disk loses the line, not the job
                log.write(f"--- job {launch.job_id}: attempt {launch.attempt}\n".encode())
                log.flush()
            proc = subprocess.Popen(
                self._argv(launch, len(devices)),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=tmp,  # nothing the request names is read relative to the server's folder
                start_new_session=True,  # its own process group: cancel stops all of it
            )
        except OSError as exc:
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
            raise ExecutorError(f"job {launch.job_id} could not start ({exc})") from None
        self._running[launch.job_id] = _Running(launch.job_id, proc, devices, cpu, log, launch.log_file, tmp)
        logger.info("job %s started (pid %d, devices %s)", launch.job_id, proc.pid, devices or "cpu")
        return Handle(str(proc.pid), proc.pid)

    def _signal(self, run: _Running, sig: signal.Signals) -> None:
        with contextlib.suppress(OSError):
            os.killpg(run.proc.pid, sig)

    def cancel(self, job_id: str) -> bool:
        run = self._running.get(job_id)
        if run is None:
            return False
        if run.cancel_at is None:
            run.cancel_at = time.monotonic()
            self._signal(run, signal.SIGTERM)
        return True

    def poll(self) -> list[tuple[str, Ended]]:
        ended: list[tuple[str, Ended]] = []
        for job_id, run in list(self._running.items()):
            code = run.proc.poll()
            if code is None:
                if run.cancel_at is not None and time.monotonic() - run.cancel_at > KILL_GRACE_S:
                    self._signal(run, signal.SIGKILL)
                continue
            del self._running[job_id]
            run.log.close()
            shutil.rmtree(run.tmp, ignore_errors=True)
            logger.info("job %s ended with exit status %d", job_id, code)
            if run.cancel_at is not None:
                ended.append((job_id, Ended("cancelled")))
            elif code == 0:
                ended.append((job_id, Ended("completed")))
            else:
                ended.append((job_id, Ended("failed", f"exit status {code}\n{log_tail(run.log_path)}")))
        return ended

    def attach(self, row: JobRow, launch: Launch) -> bool | Ended:
        """A local worker is never re-attached (its exit status went with the old server): one
        left behind is stopped, and the job resumes from the response cache."""
        if row.pid and worker_alive(row.pid, row.job_id):
            stop_orphan(row.pid, row.job_id)
        return False

    def stop(self) -> None:
        """Kill every job (each is recovered at the next start) and remove its temporary folder."""
        for run in self._running.values():
            self._signal(run, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.proc.wait(10)
            run.log.close()
            shutil.rmtree(run.tmp, ignore_errors=True)
        self._running.clear()
