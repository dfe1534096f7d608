"""Where the eval server's jobs run: one small interface, one class per engine.

The scheduler (:mod:`lmms_eval.entrypoints.scheduler`) owns the job store, the job files and the
order of things; an :class:`Executor` only starts a claimed job somewhere, says when it ended and
how, cancels it, and finds it again after a server restart. Two engines exist: processes on the
server's own machine (:class:`~lmms_eval.entrypoints.executors.local.LocalExecutor`, the default)
and SLURM jobs (:class:`~lmms_eval.entrypoints.executors.slurm.SlurmExecutor`). Either way the
job runs the ordinary worker, ``python -m lmms_eval.entrypoints.worker <job.json> <progress.json>``,
whose log, progress file and results the server reads from the shared folder.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lmms_eval.errors import LmmsEvalError

if TYPE_CHECKING:
    from lmms_eval.entrypoints.server_args import ServerArgs
    from lmms_eval.entrypoints.store import JobRow

WORKER = "lmms_eval.entrypoints.worker"
LOG_TAIL_CHARS = 4000


class ExecutorError(LmmsEvalError):
    """A job could not be handed to the engine: it goes back to the queue, or, when the engine
    refused it for good (``permanent``: an unknown partition, say), it fails with this message."""

    def __init__(self, message: str, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True)
class Launch:
    """A claimed job, ready to start: its files in the shared folder and its attempt number."""

    job_id: str
    num_gpus: int
    attempt: int
    job_file: Path
    progress_file: Path
    log_file: Path

    def worker_args(self) -> list[str]:
        return ["-m", WORKER, str(self.job_file), str(self.progress_file)]


@dataclass(frozen=True)
class Handle:
    """What identifies a started job to its engine: shown as ``executor_job_id`` (a process id
    for local jobs, the SLURM job id for SLURM jobs)."""

    executor_job_id: str
    pid: int | None = None


@dataclass(frozen=True)
class Ended:
    """How a job ended. ``lost``: the engine no longer knows it and left no outcome (the
    scheduler decides from the job's own files: completed when its results were written, else
    queued again)."""

    status: Literal["completed", "failed", "cancelled", "lost"]
    error: str | None = None


class Executor(ABC):
    """One engine that runs the server's jobs."""

    name: str = ""
    outlives_server: bool = False  # whether running jobs go on when the server stops

    def refusal(self, num_gpus: int) -> str | None:
        """Why a job asking for ``num_gpus`` can never run here (a 422), or None."""
        return None

    def fits(self, num_gpus: int) -> bool:
        """Whether a job asking for ``num_gpus`` can start now (else it waits in the queue)."""
        return True

    @abstractmethod
    def submit(self, launch: Launch) -> Handle:
        """Start the job; :class:`ExecutorError` (one line) when it cannot start now."""

    @abstractmethod
    def poll(self) -> list[tuple[str, Ended]]:
        """The watched jobs that ended since the last call, with how (each reported once)."""

    @abstractmethod
    def cancel(self, job_id: str) -> bool:
        """Ask a watched job to stop (it ends ``cancelled``); False when it is not watched."""

    @abstractmethod
    def attach(self, row: JobRow, launch: Launch) -> bool | Ended:
        """After a restart, a job the store says is running: True when it still runs under the
        engine and is watched again; its :class:`Ended` when it ended while no server watched;
        False when nothing of it runs (it was stopped, or never started)."""

    def executor_job_id(self, job_id: str) -> str | None:
        """The id under which a watched job runs (None when it is not watched)."""
        return None

    @abstractmethod
    def watched(self) -> list[str]:
        """The ids of the jobs it watches (started or re-attached, not yet reported ended)."""

    @abstractmethod
    def stop(self) -> None:
        """The server stops: stop the jobs, or leave them to the engine (``outlives_server``)."""


def log_tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    """The last ``chars`` characters of a job's log ("" when it cannot be read)."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - chars))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def make_executor(args: ServerArgs) -> Executor:
    """The executor ``--executor`` names."""
    if args.executor == "slurm":
        from lmms_eval.entrypoints.executors.slurm import SlurmExecutor

        return SlurmExecutor(args)
    from lmms_eval.entrypoints.executors.local import LocalExecutor

    return LocalExecutor(args)


__all__ = ["Ended", "Executor", "ExecutorError", "Handle", "Launch", "log_tail", "make_executor"]
