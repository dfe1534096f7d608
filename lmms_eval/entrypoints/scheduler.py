"""Runs queued jobs as separate processes, on free devices or CPU slots, and records how they end.

A store write that fails (its disk full, say) never fails a job: the write waits in order and is
done once the store accepts writes again, and no new job starts meanwhile. Each job's temporary
folder (``<temp_dir_prefix><job_id>_*``) is removed when the job ends, when the server stops, and
at the next start after a crash.
"""

from __future__ import annotations

import contextlib
import glob
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from lmms_eval.entrypoints.server_args import ServerArgs
from lmms_eval.entrypoints.store import JobRow, JobStore, StoreError, Throttle

logger = logging.getLogger(__name__)

WORKER = "lmms_eval.entrypoints.worker"
KILL_GRACE_S = 5.0
LOG_TAIL_CHARS = 4000
STORE_RETRY_S = 2.0
FINISHED_RUN = (
    "completed",
    "completed_with_failures",
)  # results status of a run that ended  # the loop's pace while the store refuses writes


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


def _stop_orphan(pid: int, job_id: str) -> None:
    """Kill the process group of a worker no server watches, and wait (bounded) until it is gone."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_GRACE_S
    while _worker_alive(pid, job_id) and time.monotonic() < deadline:
        time.sleep(0.05)


def _results_written(row: JobRow) -> bool:
    """Whether the job's worker finished its run: a results file of status ``completed`` (or
    ``completed_with_failures``), written after the job started, lies in its output folder (one
    of status ``starting`` or ``running`` is a run cut short)."""
    from lmms_eval.errors import LmmsEvalError
    from lmms_eval.results import ResultsFile, find_runs

    started = row.started_at or 0.0
    for run in find_runs(row.output_path):
        path = run.results
        try:
            if path is None or not path.is_file() or path.stat().st_mtime < started:
                continue
            if ResultsFile.load(path).status in FINISHED_RUN:
                return True
        except (OSError, LmmsEvalError):
            continue
    return False


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
        self._deferred: list[tuple[str, Callable[[], None]]] = []  # store writes that wait for the store
        self._throttle = Throttle()
        self._pruned = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def recover(self) -> None:
        """Jobs a previous server left ``running``: their workers are stopped (the job resumes from
        the response cache); a job whose results file was written after it started (its worker
        finished while no server watched it) is completed, not run again; the others are queued."""
        for row in self.store.list("running"):
            if row.pid and _worker_alive(row.pid, row.job_id):
                _stop_orphan(row.pid, row.job_id)
            self._remove_job_files(row.job_id)
            job_id = row.job_id
            if _results_written(row):
                self._note(job_id, "finished while no server watched it; its results are kept")
                self._record(f"job {job_id} completed", lambda j=job_id: self.store.finish(j, "completed"))
            else:
                self._note(job_id, "was running when the server stopped; queued again")
                self._record(f"job {job_id} queued again", lambda j=job_id: self.store.requeue(j))

    def _note(self, job_id: str, text: str) -> None:
        logger.info("job %s %s", job_id, text)
        with contextlib.suppress(OSError), self.log_path(job_id).open("a", encoding="utf-8") as log:
            log.write(f"--- server: this job {text}\n")

    def start(self) -> None:
        self.recover()
        self._thread = threading.Thread(target=self._loop, name="lmms-eval-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop; running jobs are killed and left ``running`` (recovered at next start),
        and their temporary folders removed."""
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout)
        with self._lock:
            for run in self._running.values():
                self._signal(run, signal.SIGKILL)
                run.proc.wait(timeout)
                run.log.close()
                self._remove_job_files(run.job_id, run.tmp)
            self._running.clear()
        with contextlib.suppress(StoreError):
            self._flush()

    def _remove_job_files(self, job_id: str, tmp: str | None = None) -> None:
        """A job's file (it may hold an API key) and its temporary folder, also one a killed server
        left (found by its name)."""
        (self.jobs_dir / f"{job_id}.json").unlink(missing_ok=True)
        pattern = os.path.join(tempfile.gettempdir(), glob.escape(self.args.temp_dir_prefix + job_id) + "_*")
        for folder in {*glob.glob(pattern), *([tmp] if tmp else [])}:
            shutil.rmtree(folder, ignore_errors=True)

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
            pause = self.poll_s
            try:
                self._step()
            except StoreError:  # logged by the store, once a minute at most
                pause = STORE_RETRY_S
            except Exception as exc:  # the loop must survive one bad job
                if self._throttle.allow(repr(exc)):
                    logger.exception("scheduler step failed")
                pause = STORE_RETRY_S
            self._wake.wait(pause)
            self._wake.clear()

    def _step(self) -> None:
        self._flush()
        self._reap()
        if not self._deferred:  # no new job while the outcome of another waits
            self._launch()
        if not self._pruned:  # once at start, then after jobs end (cancelled ones too)
            self.store.prune(self.args.max_completed_jobs)
            self._pruned = True

    def _record(self, what: str, write: Callable[[], None]) -> None:
        """Do a store write now or, when the store refuses it, later and in order: a job's outcome
        is recorded once the store accepts writes again, never dropped."""
        if not self._deferred:
            try:
                write()
                return
            except StoreError:
                logger.warning("%s: not recorded yet (the job store refuses writes); retried", what)
        self._deferred.append((what, write))

    def _flush(self) -> None:
        while self._deferred:
            what, write = self._deferred[0]
            write()  # StoreError: it stays first in line
            self._deferred.pop(0)
            logger.info("%s: recorded", what)

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
                row = self.store.get(job_id) if fit is not None else None
                if fit is None or row is None:
                    continue
                try:
                    job_file = self._write_job_file(row)
                except OSError as exc:  # no space, say: the job waits in the queue
                    if self._throttle.allow(f"job file {exc}"):
                        logger.warning("job %s cannot start yet: %s", job_id, exc)
                    continue
                claimed = False
                try:
                    claimed = self.store.claim(job_id)
                finally:
                    if not claimed:
                        job_file.unlink(missing_ok=True)
                if claimed:
                    self._spawn(row, job_file, *fit)

    def _write_job_file(self, row: JobRow) -> Path:
        job_file = self.jobs_dir / f"{row.job_id}.json"
        try:
            with os.fdopen(os.open(job_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                json.dump(
                    row.job_document(), f
                )  # it may hold an API key: private, and removed when the job ends
        except OSError:
            job_file.unlink(missing_ok=True)
            raise
        return job_file

    def _argv(self, job_id: str, job_file: Path, n_gpus: int) -> list[str]:
        job = [str(job_file), str(self.progress_path(job_id))]
        if n_gpus > 1:
            return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc_per_node={n_gpus}", "-m", WORKER, *job]  # fmt: skip
        return [sys.executable, "-m", WORKER, *job]

    def _spawn(self, row: JobRow, job_file: Path, devices: list[str], cpu: bool) -> None:
        """Start the claimed job's worker; when it cannot start, the job goes back to the queue."""
        tmp: str | None = None
        try:
            self.progress_path(row.job_id).unlink(missing_ok=True)
            tmp = tempfile.mkdtemp(prefix=f"{self.args.temp_dir_prefix}{row.job_id}_")
            env = dict(
                os.environ, TMPDIR=tmp, PYTHONUNBUFFERED="1", LMMS_EVAL_JOB_NICE=str(self.args.job_nice)
            )
            if self.args.devices:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
            log = self.log_path(row.job_id).open("ab")
            with contextlib.suppress(OSError):  # a full disk loses the line, not the job
                log.write(f"--- job {row.job_id}: attempt {row.attempts + 1}\n".encode())  # claimed
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
        except OSError as exc:
            logger.warning("job %s could not start (%s); queued again", row.job_id, exc)
            self._remove_job_files(row.job_id, tmp)
            self._record(f"job {row.job_id} queued again", lambda: self.store.requeue(row.job_id))
            return
        self._running[row.job_id] = _Running(row.job_id, proc, devices, cpu, log, tmp)
        self._record(f"job {row.job_id} pid", lambda: self.store.set_pid(row.job_id, proc.pid))
        logger.info("job %s started (pid %d, devices %s)", row.job_id, proc.pid, devices or "cpu")

    def _signal(self, run: _Running, sig: signal.Signals) -> None:
        with contextlib.suppress(OSError):
            os.killpg(run.proc.pid, sig)

    def _reap(self) -> None:
        with self._lock:
            for job_id, run in list(self._running.items()):
                code = run.proc.poll()
                if code is None:
                    if run.cancel_at is not None and time.monotonic() - run.cancel_at > KILL_GRACE_S:
                        self._signal(run, signal.SIGKILL)
                    continue
                del self._running[job_id]
                run.log.close()
                self._remove_job_files(job_id, run.tmp)
                self._finished(run, code)
                self._pruned = False

    def _finished(self, run: _Running, code: int) -> None:
        job_id = run.job_id
        if run.cancel_at is not None:
            self._record(f"job {job_id} cancelled", lambda: self.store.finish(job_id, "cancelled"))
        elif code == 0:
            self._record(f"job {job_id} completed", lambda: self.store.finish(job_id, "completed"))
        else:
            error = f"exit status {code}\n{log_tail(self.log_path(job_id))}"
            self._record(f"job {job_id} failed", lambda: self.store.finish(job_id, "failed", error))
        logger.info("job %s ended with exit status %d", job_id, code)
