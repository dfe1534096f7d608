"""The scheduler: a background loop that hands queued jobs to an executor and records how they end.

Where jobs run is the executor's business (:mod:`lmms_eval.entrypoints.executors`: processes on
this machine, or SLURM jobs); the scheduler owns the order: claim a job in the store, write its
job file into the shared folder, start it, watch it, record its end. A store write that fails (its
disk full, say) never fails a job: the write waits in order and is done once the store accepts
writes again, and no new job starts meanwhile. Each job's temporary folder
(``<temp_dir_prefix><job_id>_*``) is removed when the job ends, when the server stops, and at the
next start after a crash.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmms_eval.entrypoints.executors import Ended, Executor, ExecutorError, Launch, log_tail, make_executor
from lmms_eval.entrypoints.server_args import ServerArgs
from lmms_eval.entrypoints.store import JobRow, JobStore, StoreError, Throttle

logger = logging.getLogger(__name__)

STORE_RETRY_S = 2.0  # the loop's pace while the store refuses writes
FINISHED_RUN = ("completed", "completed_with_failures")  # results status of a run that ended

__all__ = ["Scheduler", "log_tail"]


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
    """A background thread: hand what fits to the executor, record what ended, cancel on request."""

    def __init__(
        self, args: ServerArgs, store: JobStore, poll_s: float = 0.1, executor: Executor | None = None
    ) -> None:
        self.args = args
        self.store = store
        self.poll_s = poll_s
        self.executor = executor or make_executor(args)
        shared = args.shared_path()
        self.logs = shared / "logs"
        self.jobs_dir = shared / "jobs"
        self.progress_dir = shared / "progress"
        for folder in (self.logs, self.jobs_dir, self.progress_dir):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._deferred: list[tuple[str, Callable[[], None]]] = []  # store writes that wait for the store
        self._throttle = Throttle()
        self._pruned = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _launch_of(self, row: JobRow, attempt: int) -> Launch:
        return Launch(
            job_id=row.job_id,
            num_gpus=row.num_gpus,
            attempt=attempt,
            job_file=self.jobs_dir / f"{row.job_id}.json",
            progress_file=self.progress_path(row.job_id),
            log_file=self.log_path(row.job_id),
        )

    def recover(self) -> None:
        """Jobs a previous server left ``running``: the executor re-attaches those that still run
        (SLURM jobs) and says how the others ended; a job of which nothing runs is completed when
        its results file was written after it started (its worker finished while no server
        watched it), else queued again (its orphaned local worker stopped first); it resumes from
        the response cache."""
        for row in self.store.list("running"):
            try:
                found = self.executor.attach(row, self._launch_of(row, row.attempts))
            except ExecutorError as exc:
                logger.warning("job %s: %s; queued again", row.job_id, exc)
                found = False
            if found is True:
                self._reattached(row)
                continue
            self._remove_job_files(row.job_id)
            if isinstance(found, Ended) and found.status != "lost":
                self._note(row.job_id, f"ended {found.status} while no server watched it")
                self._record_end(row.job_id, found)
            else:
                self._settle_lost(row.job_id, "was running when the server stopped", row)

    def _reattached(self, row: JobRow) -> None:
        job_id, eid = row.job_id, self.executor.executor_job_id(row.job_id)
        self._note(job_id, f"is watched again ({self.executor.name} job {eid})")
        if eid and eid != row.executor_job_id:  # found by name: the server stopped before recording it
            self._record(
                f"job {job_id} {self.executor.name} id", lambda: self.store.set_executor_job_id(job_id, eid)
            )

    def _settle_lost(self, job_id: str, why: str, row: JobRow | None = None) -> None:
        """A job of which nothing runs and nothing is known: completed when its results were
        written after it started, else queued again (recorded in order, as every outcome)."""

        def settle() -> None:
            current = row or self.store.get(job_id)
            if current is None:
                return
            if _results_written(current):
                self._note(job_id, "finished while no server watched it; its results are kept")
                self.store.finish(job_id, "completed")
            else:
                self._note(job_id, f"{why}; queued again")
                self.store.requeue(job_id)

        self._record(f"job {job_id} settled", settle)

    def _note(self, job_id: str, text: str) -> None:
        logger.info("job %s %s", job_id, text)
        with contextlib.suppress(OSError), self.log_path(job_id).open("a", encoding="utf-8") as log:
            log.write(f"--- server: this job {text}\n")

    def start(self) -> None:
        self.recover()
        self._thread = threading.Thread(target=self._loop, name="lmms-eval-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop. Local jobs are killed and left ``running`` (recovered at next start), their
        temporary folders removed; SLURM jobs go on (re-attached at next start)."""
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout)
        with self._lock:
            running = self.executor.watched()
            self.executor.stop()
            if not self.executor.outlives_server:
                for job_id in running:
                    self._remove_job_files(job_id)
        with contextlib.suppress(StoreError):
            self._flush()

    def _remove_job_files(self, job_id: str) -> None:
        """A job's file (it may hold an API key) and its temporary folder, also one a killed server
        left (found by its name)."""
        (self.jobs_dir / f"{job_id}.json").unlink(missing_ok=True)
        pattern = os.path.join(tempfile.gettempdir(), glob.escape(self.args.temp_dir_prefix + job_id) + "_*")
        for folder in glob.glob(pattern):
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

    def refusal(self, num_gpus: int) -> str | None:
        """Why a job asking for ``num_gpus`` can never run on this server's executor, or None."""
        return self.executor.refusal(num_gpus)

    def cancel(self, job_id: str) -> bool:
        """Cancel a queued or running job; False when it is neither."""
        if self.store.cancel_queued(job_id):
            self._pruned = False
            return True
        with self._lock:
            if not self.executor.cancel(job_id):
                return False
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

    def _launch(self) -> None:
        with self._lock:
            for job_id, num_gpus in self.store.waiting(limit=50):
                if not self.executor.fits(num_gpus):
                    continue
                row = self.store.get(job_id)
                if row is None:
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
                    self._start(self._launch_of(row, row.attempts + 1))

    def _write_job_file(self, row: JobRow) -> Path:
        job_file = self.jobs_dir / f"{row.job_id}.json"
        try:
            with os.fdopen(os.open(job_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                json.dump(row.job_document(), f)  # it may hold an API key: private, removed when the job ends
        except OSError:
            job_file.unlink(missing_ok=True)
            raise
        return job_file

    def _start(self, launch: Launch) -> None:
        """Hand the claimed job to the executor; when it cannot start, the job goes back to the queue."""
        job_id = launch.job_id
        launch.progress_file.unlink(missing_ok=True)
        try:
            handle = self.executor.submit(launch)
        except ExecutorError as exc:
            self._remove_job_files(job_id)
            if exc.permanent:
                logger.warning("job %s refused: %s", job_id, exc)
                self._record_end(job_id, Ended("failed", str(exc)))
                return
            logger.warning("job %s could not start (%s); queued again", job_id, exc)
            self._record(f"job {job_id} queued again", lambda: self.store.requeue(job_id))
            return
        self._record(
            f"job {job_id} {self.executor.name} id",
            lambda: self.store.set_executor_job_id(job_id, handle.executor_job_id, handle.pid),
        )

    def _reap(self) -> None:
        with self._lock:
            for job_id, ended in self.executor.poll():
                self._remove_job_files(job_id)
                if ended.status == "lost":
                    self._settle_lost(job_id, ended.error or "was lost")
                else:
                    self._record_end(job_id, ended)
                self._pruned = False

    def _record_end(self, job_id: str, ended: Ended) -> None:
        status, error = ended.status, ended.error
        self._record(f"job {job_id} {status}", lambda: self.store.finish(job_id, status, error))
