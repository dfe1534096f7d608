"""The ranks of one run: sharding requests, gathering answers on rank 0, failing together.

:class:`RunGroup` is the single-process case (every operation is local, torch is never imported);
:class:`TorchRunGroup` joins a ``torch.distributed`` process group over gloo (objects only, so the
model's own devices do not matter) when the launch has more than one process.

Protocol. The ranks meet only at *exchanges*: each rank sends one object to rank 0 (``gather_object``)
and rank 0 answers all with a verdict (``broadcast_object_list``). Every rank makes the same
exchanges in the same order: one per task (the answers), one for the cache counters, one at the end
(rank 0's results to all). A rank that raises anywhere takes part in its next exchange with the
error instead (:meth:`RunGroup.failed`), so the verdict fails every rank at once with one message
that names the failing rank and its error. A rank that dies breaks the process group: the others
see it at their next exchange (gloo notices the closed connection at once) and name the rank that
never reached the exchange (each rank marks its arrival in the launcher's key-value store). A rank
that hangs is named the same way once ``LMMS_EVAL_DIST_TIMEOUT`` seconds (default 1800) pass. When
the launcher stops a process with SIGTERM (torchrun does once another rank exited with an error),
the process raises :class:`RankFailed`, so its files and cache are closed properly.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.distributed.launch import LaunchInfo, launch_info
from lmms_eval.errors import ConfigError, LmmsEvalError, MissingDependencyError

logger = logging.getLogger(__name__)

TIMEOUT_ENV = "LMMS_EVAL_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 1800.0
FINISH_TIMEOUT_S = 120.0  # after a failure: how long ranks wait for rank 0 to close its files


class RankFailed(LmmsEvalError):
    """A rank of a multi-process run raised, died or hung; the message names the rank.

    ``results`` holds, on rank 0, the results of the tasks finished before (``status: failed``).
    """

    def __init__(self, message: str, rank: int | None = None) -> None:
        super().__init__(message)
        self.rank = rank
        self.results: dict[str, Any] | None = None


def shard_indices(requests: Sequence[Instance], rank: int, world_size: int) -> list[int]:
    """Positions in ``requests`` that rank ``rank`` answers: documents strided over the ranks.

    Documents are numbered in the order they first appear; document ``n`` goes to rank
    ``n % world_size``, with all its requests (the choices of a multiple-choice question stay
    together). Every rank computes the same split from the same list, whatever the world size.
    """
    position: dict[int, int] = {}
    chosen: list[int] = []
    for index, request in enumerate(requests):
        doc = position.setdefault(request.doc_id, len(position))
        if doc % world_size == rank:
            chosen.append(index)
    return chosen


def answers_of(requests: Sequence[Instance]) -> list[tuple[int, int, list[Any], list[Any], list[str]]]:
    """What a rank sends back for its requests: ``(doc_id, idx, resps, token_counts, failures)``."""
    return [(r.doc_id, r.idx, r.resps, r.token_counts, r.failures) for r in requests]


def fill_answers(
    requests: Sequence[Instance], indices: Sequence[int], answers: Sequence[Any], rank: int
) -> None:
    """Put rank ``rank``'s ``answers`` into ``requests`` at ``indices``; a mismatch is an error
    (a plain :class:`LmmsEvalError`, so that :meth:`RunGroup.failed` tells the other ranks)."""
    if len(answers) != len(indices):
        raise LmmsEvalError(f"rank {rank} answered {len(answers)} requests, expected {len(indices)}")
    for index, (doc_id, idx, resps, counts, failures) in zip(indices, answers):
        request = requests[index]
        if (request.doc_id, request.idx) != (doc_id, idx):
            raise LmmsEvalError(
                f"rank {rank} answered doc {doc_id} request {idx} where doc {request.doc_id} request "
                f"{request.idx} was expected: the ranks built different requests"
            )
        request.resps, request.token_counts, request.failures = list(resps), list(counts), list(failures)


class RunGroup:
    """The ranks of a run; this base class is the single process (no torch, nothing shared)."""

    def __init__(self, info: LaunchInfo | None = None) -> None:
        self.info = info or LaunchInfo()
        self.stage = "start-up"  # what this rank is doing, for the message when it fails

    @property
    def rank(self) -> int:
        return self.info.rank

    @property
    def world_size(self) -> int:
        return self.info.world_size

    @property
    def is_main(self) -> bool:
        return self.info.rank == 0

    def shard(self, requests: Sequence[Instance]) -> list[Instance]:
        """This rank's share of a task's requests (see :func:`shard_indices`), in request order."""
        if self.world_size == 1:
            return list(requests)
        return [requests[i] for i in shard_indices(requests, self.rank, self.world_size)]

    def collect(self, requests: Sequence[Instance], share: Sequence[Instance], where: str = "") -> None:
        """Give rank 0 every rank's answers to ``requests`` (``share`` is what this rank answered)."""

    def sum_counts(self, counts: Mapping[str, int], where: str = "") -> dict[str, int]:
        """On rank 0: ``counts`` summed over the ranks; elsewhere this rank's own."""
        return dict(counts)

    def share(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        return value

    def failed(self, exc: BaseException) -> BaseException:
        """The exception to raise for ``exc`` raised on this rank (the others are told)."""
        return exc

    def finish(self, failed: bool) -> None:
        """End of a run; after a failure, wait (a while) until every rank has closed its files."""


@dataclass(frozen=True)
class _Outcome:
    rank: int
    value: Any = None
    error: str | None = None
    where: str = ""


@dataclass(frozen=True)
class _Verdict:
    error: str | None = None
    rank: int | None = None
    reply: Any = None


def timeout_s(environ: Mapping[str, str] | None = None) -> float:
    """``LMMS_EVAL_DIST_TIMEOUT`` in seconds (default 1800): the longest wait at an exchange."""
    text = (os.environ if environ is None else environ).get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(f"{TIMEOUT_ENV}={text!r} is not a positive number of seconds")
    return value


class TorchRunGroup(RunGroup):
    """The ranks of a multi-process launch, joined over ``torch.distributed`` (gloo)."""

    def __init__(self, info: LaunchInfo, timeout: float | None = None) -> None:
        super().__init__(info)
        self.timeout = timeout_s() if timeout is None else timeout
        try:
            import torch.distributed as dist
        except ImportError:
            purpose = f"distributed evaluation ({info.launcher}, {info.world_size} processes)"
            raise MissingDependencyError("torch", "hf", purpose) from None
        self._dist: Any = dist
        self._pg: Any = None
        self._seq = 0
        self._broken: str | None = None
        self._connected = True  # False once the process group broke (a rank died, hung or was stopped)
        self._join(dist)
        self._store: Any = self._default_store(dist)
        self._watch_sigterm()

    def _join(self, dist: Any) -> None:
        timeout = timedelta(seconds=self.timeout)
        if dist.is_initialized():  # the caller's process group: talk over a gloo group of our own
            if dist.get_world_size() != self.world_size or dist.get_rank() != self.rank:
                raise ConfigError(
                    f"torch.distributed is initialized with rank {dist.get_rank()} of "
                    f"{dist.get_world_size()}, the environment says {self.rank} of {self.world_size}"
                )
            if dist.get_backend() != "gloo":
                self._pg = dist.new_group(backend="gloo", timeout=timeout)
            return
        where = f"{self.info.master_addr or '?'}:{self.info.master_port or '?'}"
        try:
            dist.init_process_group(
                "gloo",
                init_method=self.info.init_method(),
                rank=self.rank,
                world_size=self.world_size,
                timeout=timeout,
            )
        except Exception as exc:
            raise RankFailed(
                f"rank {self.rank}: cannot join the {self.world_size} processes of the run at {where}: "
                f"{_first_line(exc)}",
                self.rank,
            ) from None
        atexit.register(self._destroy)
        logger.info(
            "rank %d of %d (local rank %d, %s): process group joined",
            self.rank,
            self.world_size,
            self.info.local_rank,
            self.info.launcher,
        )

    @staticmethod
    def _default_store(dist: Any) -> Any:
        with contextlib.suppress(Exception):
            return dist.distributed_c10d._get_default_store()
        return None

    def _destroy(self) -> None:
        with contextlib.suppress(Exception):
            if self._dist.is_initialized():
                self._dist.destroy_process_group()

    def _watch_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        rank = self.rank

        def stopped(signum: int, frame: Any) -> None:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process
            if self._broken is not None:  # the failure is known: let the files close
                logger.info("rank %d: SIGTERM from the launcher while closing the run", rank)
                return
            self._broken = f"rank {rank}: stopped by the launcher (SIGTERM)"
            self._connected = False
            raise RankFailed(
                f"rank {rank} was stopped by the launcher (SIGTERM): another rank of the run exited "
                "with an error; the launcher's report names it",
                rank,
            )

        signal.signal(signal.SIGTERM, stopped)

    # -- exchanges ----------------------------------------------------------------------------------

    def _exchange(self, outcome: _Outcome, reply: Any = None) -> tuple[list[Any] | None, Any]:
        if self._broken is not None:
            raise RankFailed(self._broken)
        self._seq += 1
        self._mark(self._seq, self.rank)
        gathered: list[Any] | None = [None] * self.world_size if self.is_main else None
        box: list[Any] = [None]
        try:
            self._dist.gather_object(outcome, gathered, dst=0, group=self._pg)
            if gathered is not None:
                box[0] = self._judge(gathered, reply)
            self._dist.broadcast_object_list(box, src=0, group=self._pg)
        except Exception as exc:  # the process group broke: a rank died or hung
            self._connected = False
            self._broken = self._lost(exc, outcome.where)
            raise RankFailed(self._broken) from None
        verdict: _Verdict = box[0]
        if verdict.error is not None:
            self._broken = verdict.error
            raise RankFailed(verdict.error, verdict.rank)
        values = [o.value for o in gathered] if gathered is not None else None
        return values, verdict.reply

    @staticmethod
    def _judge(gathered: Sequence[_Outcome], reply: Any) -> _Verdict:
        for outcome in gathered:
            if outcome.error is not None:
                where = f" during {outcome.where}" if outcome.where else ""
                return _Verdict(f"rank {outcome.rank} failed{where}: {outcome.error}", outcome.rank)
        return _Verdict(reply=reply)

    def _mark(self, seq: int, rank: int) -> None:
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.set(f"lmms_eval/exchange/{seq}/{rank}", "1")

    def _arrived(self, seq: int, rank: int) -> bool | None:
        if self._store is None:
            return None
        try:
            return bool(self._store.check([f"lmms_eval/exchange/{seq}/{rank}"]))
        except Exception:
            return None

    def _lost(self, exc: BaseException, where: str) -> str:
        during = f" during {where}" if where else ""
        missing = [
            r for r in range(self.world_size) if r != self.rank and self._arrived(self._seq, r) is False
        ]
        detail = f"(rank {self.rank} saw: {_first_line(exc)})"
        if missing:
            names = ", ".join(map(str, missing))
            return (
                f"rank {names} stopped{during} without reporting an error: its process exited or hung "
                f"for over {self.timeout:g} s; the launcher's log shows its exit status {detail}"
            )
        return f"rank {self.rank} lost contact with the other ranks{during} {detail}"

    # -- the operations of a run --------------------------------------------------------------------

    def collect(self, requests: Sequence[Instance], share: Sequence[Instance], where: str = "") -> None:
        payload = None if self.is_main else answers_of(share)
        gathered, _ = self._exchange(_Outcome(self.rank, payload, where=where))
        if gathered is None:
            return
        self.stage = f"scoring of {where}"
        for rank in range(1, self.world_size):
            fill_answers(requests, shard_indices(requests, rank, self.world_size), gathered[rank], rank)

    def sum_counts(self, counts: Mapping[str, int], where: str = "") -> dict[str, int]:
        gathered, _ = self._exchange(_Outcome(self.rank, dict(counts), where=where))
        if gathered is None:
            return dict(counts)
        return {key: sum(int(part.get(key, 0)) for part in gathered) for key in counts}

    def share(self, value: Any) -> Any:
        self.stage = "the end of the run"
        _, reply = self._exchange(_Outcome(self.rank, where=self.stage), value if self.is_main else None)
        return reply

    def failed(self, exc: BaseException) -> BaseException:
        if isinstance(exc, RankFailed) or self._broken is not None:
            return exc
        if not isinstance(exc, Exception):  # Ctrl-C, SystemExit: the launcher stops the others
            self._broken = f"rank {self.rank}: {type(exc).__name__}"
            self._connected = False
            return exc
        error = (
            _first_line(exc)
            if isinstance(exc, LmmsEvalError)
            else f"{type(exc).__name__}: {_first_line(exc)}"
        )
        logger.error("rank %d: %s", self.rank, error, exc_info=not isinstance(exc, LmmsEvalError))
        try:
            self._exchange(_Outcome(self.rank, error=error, where=self.stage))
        except RankFailed as failure:
            return failure
        return exc  # not reached: the verdict names this rank's error

    def finish(self, failed: bool) -> None:
        if not failed or self._broken is None or not self._connected:
            return
        with contextlib.suppress(Exception):  # best effort: the run has failed already
            self._dist.monitored_barrier(group=self._pg, timeout=timedelta(seconds=FINISH_TIMEOUT_S))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_group: TorchRunGroup | None = None


def run_group(environ: Mapping[str, str] | None = None) -> RunGroup:
    """The ranks of this process's run: a :class:`TorchRunGroup` (joined once per process) when the
    launch has several processes, else the single-process :class:`RunGroup`."""
    global _group
    info = launch_info(environ)
    if not info.distributed:
        return RunGroup(info)
    if _group is None or _group.info != info:
        _group = TorchRunGroup(info)
    return _group


def is_main_process(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process is rank 0 (or the only one); a broken launch environment counts as main."""
    try:
        return launch_info(environ).is_main
    except ConfigError:
        return True


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "TIMEOUT_ENV",
    "RankFailed",
    "RunGroup",
    "TorchRunGroup",
    "answers_of",
    "fill_answers",
    "is_main_process",
    "run_group",
    "shard_indices",
    "timeout_s",
]
