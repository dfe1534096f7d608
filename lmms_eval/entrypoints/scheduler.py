"""Runs queued jobs as separate processes, on free devices or CPU slots, and records how they end."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from lmms_eval.entrypoints.server_args import ServerArgs
from lmms_eval.entrypoints.store import JobRow, JobStore

logger = logging.getLogger(__name__)

WORKER = "lmms_eval.entrypoints.worker"
KILL_GRACE_S = 5.0
LOG_TAIL_CHARS = 4000


@dataclass
class _Running:
    job_id: str
    proc: subprocess.Popen[bytes]
    devices: list[str]
    cpu: bool
    log: IO[bytes]
    tmp: str
    cancel_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def log_tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - chars))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _worker_alive(pid: int, job_id: str) -> bool:
    """Whether ``pid`` is still the worker of ``job_id`` (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    return WORKER in cmdline and job_id in cmdline


class Scheduler:
    """A background thread: start what fits, reap what ended, stop what was cancelled."""

    def __init__(self, args: ServerArgs, store: JobStore, poll_s: float = 0.1) -> None:
        self.args = args
        self.store = store
        self.poll_s = poll_s
        self.logs = args.state_path() / "logs"
        self.jobs_dir = args.state_path() / "jobs"
        self.progress_dir = args.state_path() / "progress"
        for folder in (self.logs, self.jobs_dir, self.progress_dir):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._running: dict[str, _Running] = {}
        self._pruned = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def recover(self) -> None:
        """Stop workers a killed server left behind and put their jobs back in the queue."""
        for row in self.store.requeue_running():
            if row.pid and _worker_alive(row.pid, row.job_id):
                with contextlib.suppress(OSError):
                    os.killpg(row.pid, signal.SIGKILL)
            logger.info("job %s was running when the server stopped; queued again", row.job_id)

    def start(self) -> None:
        self.recover()
        self._thread = threading.Thread(target=self._loop, name="lmms-eval-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop; running jobs are killed and left ``running`` (re-queued at next start)."""
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout)
        with self._lock:
            for run in self._running.values():
                self._signal(run, signal.SIGKILL)
                run.proc.wait(timeout)
                run.log.close()
            self._running.clear()

    def wake(self) -> None:
        self._wake.set()

    def log_path(self, job_id: str) -> Path:
        return self.logs / f"{job_id}.log"

    def progress_path(self, job_id: str) -> Path:
        return self.progress_dir / f"{job_id}.json"

    def progress(self, job_id: str) -> dict[str, Any] | None:
        """What the job's worker last reported (see ``worker.progress_writer``), or None."""
        try:
            return json.loads(self.progress_path(job_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def cancel(self, job_id: str) -> bool:
        """Cancel a queued or running job; False when it is neither."""
        if self.store.cancel_queued(job_id):
            self._pruned = False
            return True
        with self._lock:
            run = self._running.get(job_id)
            if run is None:
                return False
            if run.cancel_at is None:
                run.cancel_at = time.monotonic()
                self._signal(run, signal.SIGTERM)
        self._wake.set()
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._reap()
                self._launch()
            except Exception:  # the loop must survive one bad job
                logger.exception("scheduler step failed")
            self._wake.wait(self.poll_s)
            self._wake.clear()

    # -- resources -------------------------------------------------------------------------------

    def _free(self) -> tuple[list[str], int]:
        used = {d for r in self._running.values() for d in r.devices}
        free = [d for d in self.args.devices or [] if d not in used]
        cpu_used = sum(1 for r in self._running.values() if r.cpu)
        return free, self.args.cpu_slots - cpu_used

    def _fit(self, num_gpus: int) -> tuple[list[str], bool] | None:
        free, cpu_free = self._free()
        if self.args.devices and num_gpus > 0:
            return (free[:num_gpus], False) if len(free) >= num_gpus else None
        return ([], True) if cpu_free > 0 else None

    def _launch(self) -> None:
        with self._lock:
            for job_id, num_gpus in self.store.waiting(limit=50):
                fit = self._fit(num_gpus)
                if fit is None or not self.store.claim(job_id):
                    continue
                row = self.store.get(job_id)
                if row is not None:
                    self._spawn(row, *fit)

    def _argv(self, job_id: str, job_file: Path, n_gpus: int) -> list[str]:
        job = [str(job_file), str(self.progress_path(job_id))]
        if n_gpus > 1:
            return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc_per_node={n_gpus}", "-m", WORKER, *job]  # fmt: skip
        return [sys.executable, "-m", WORKER, *job]

    def _spawn(self, row: JobRow, devices: list[str], cpu: bool) -> None:
        job_file = self.jobs_dir / f"{row.job_id}.json"
        with os.fdopen(os.open(job_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump(row.request, f)  # it may hold an API key: private, and removed when the job ends
        self.progress_path(row.job_id).unlink(missing_ok=True)
        tmp = tempfile.mkdtemp(prefix=self.args.temp_dir_prefix)
        env = dict(os.environ, TMPDIR=tmp, PYTHONUNBUFFERED="1", LMMS_EVAL_JOB_NICE=str(self.args.job_nice))
        if self.args.devices:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
        log = self.log_path(row.job_id).open("ab")
        log.write(f"--- job {row.job_id}: attempt {row.attempts}\n".encode())  # claim() counted it
        log.flush()
        proc = subprocess.Popen(
            self._argv(row.job_id, job_file, len(devices)),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp,  # nothing the request names is read relative to the server's folder
            start_new_session=True,  # its own process group: cancel stops all of it
        )
        self._running[row.job_id] = _Running(row.job_id, proc, devices, cpu, log, tmp)
        self.store.set_pid(row.job_id, proc.pid)
        logger.info("job %s started (pid %d, devices %s)", row.job_id, proc.pid, devices or "cpu")

    def _signal(self, run: _Running, sig: signal.Signals) -> None:
        with contextlib.suppress(OSError):
            os.killpg(run.proc.pid, sig)

    def _reap(self) -> None:
        ended = 0
        with self._lock:
            for job_id, run in list(self._running.items()):
                code = run.proc.poll()
                if code is None:
                    if run.cancel_at is not None and time.monotonic() - run.cancel_at > KILL_GRACE_S:
                        self._signal(run, signal.SIGKILL)
                    continue
                del self._running[job_id]
                (self.jobs_dir / f"{job_id}.json").unlink(missing_ok=True)
                run.log.close()
                shutil.rmtree(run.tmp, ignore_errors=True)
                self._finished(run, code)
                ended += 1
        if ended or not self._pruned:  # once at start, then after jobs end (cancelled ones too)
            self.store.prune(self.args.max_completed_jobs)
            self._pruned = True

    def _finished(self, run: _Running, code: int) -> None:
        if run.cancel_at is not None:
            self.store.finish(run.job_id, "cancelled")
        elif code == 0:
            self.store.finish(run.job_id, "completed")
        else:
            tail = log_tail(self.log_path(run.job_id))
            self.store.finish(run.job_id, "failed", f"exit status {code}\n{tail}")
        logger.info("job %s ended with exit status %d", run.job_id, code)
