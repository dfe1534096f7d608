"""The job store: one SQLite file (WAL), so queued, running and finished jobs survive restarts.

State is never lost silently: one server at a time holds a folder's :class:`StateLock`; a store
that is damaged, truncated or empty refuses to open (it is never replaced by an empty one); a
store that fails while the server runs raises :class:`StoreError` (:class:`StoreFullError` when
its disk is full), logged once a minute at most.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_eval.errors import LmmsEvalError
from lmms_eval.secrets import redact

logger = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"
LOCK_FILE = "server.lock"
_CORRUPT, _FULL, _NOTADB = 11, 13, 26  # SQLite's primary result codes


class StateError(LmmsEvalError):
    """The server cannot start on its state folder (in use by another server, or its store damaged)."""


class StoreError(LmmsEvalError):
    """The job store failed while the server runs (HTTP 503)."""


class StoreFullError(StoreError):
    """A write to the job store failed for lack of space (HTTP 507); it succeeds once space is freed."""


class Throttle:
    """Each distinct message at most once per ``every_s`` seconds: a failure repeated by a polling
    loop is logged once, not many times a second."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def allow(self, message: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(message, -self.every_s) < self.every_s:
                return False
            self._last[message] = now
            return True


class StateLock:
    """An exclusive lock (``flock``) on a state folder, held while a server lives; the lock file
    names its holder (pid, host, address) for the refusal message of a second server."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_FILE
        self._fd: int | None = None

    def acquire(self, host: str, port: int) -> None:
        """Take the lock or raise :class:`StateError` naming the server that holds it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StateError(
                f"{self.path}: cannot open the state folder's lock file ({exc.strerror})"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise StateError(
                f"{self.path.parent}: the state folder is in use by another eval server ({holder}); "
                "stop that server or give this one another --state_dir"
            ) from None
        self._fd = fd
        info = {"pid": os.getpid(), "hostname": socket.gethostname(), "host": host, "port": port}
        with contextlib.suppress(OSError):  # the lock holds even when the note cannot be written
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "another process"
    where = f" on {info.get('hostname')}" if info.get("hostname") not in (None, socket.gethostname()) else ""
    address = f", serving http://{info['host']}:{info['port']}" if info.get("port") else ""
    return f"pid {info['pid']}{where}{address}"


def recovery_hint(path: Path) -> str:
    aside = path.with_name(path.name + ".damaged")
    return (
        f"move it aside (mv {path} {aside}) and recover its jobs with: sqlite3 {aside} .recover | "
        f"sqlite3 {path} (where .recover fails: sqlite3 {aside} .dump | sqlite3 {path})"
    )


def _damaged(path: Path, why: str) -> StateError:
    return StateError(
        f"{path}: the job store is {why}; the server does not start over it (its jobs would be lost): "
        + recovery_hint(path)
    )


def _wal_has_frames(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    return wal.exists() and wal.stat().st_size > 0


def _check_file(path: Path) -> None:
    """Refuse an empty, foreign or truncated file before SQLite sees it (it would start it empty)."""
    size = path.stat().st_size
    if size == 0:
        raise _damaged(path, "empty (0 bytes)")
    with path.open("rb") as f:
        header = f.read(100)
    if not header.startswith(SQLITE_HEADER) or len(header) < 100:
        raise _damaged(path, "not a SQLite database")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    size_valid = header[24:28] == header[92:96]  # the header's page count is current
    if size_valid and not _wal_has_frames(path) and size < pages * page_size:
        raise _damaged(path, f"truncated ({size} of {pages * page_size} bytes)")


def _create(path: Path) -> None:
    """A new, empty store, made under another name and renamed: never a half-made ``jobs.db``."""
    if _wal_has_frames(path):
        raise _damaged(path, "missing but its write-ahead log is there")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    os.close(fd)
    try:
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
        finally:
            db.close()
        os.replace(tmp, path)
    finally:
        for leftover in (tmp, f"{tmp}-wal", f"{tmp}-shm"):
            Path(leftover).unlink(missing_ok=True)


def _out_of_space(exc: sqlite3.Error, folder: Path) -> bool:
    """Whether a SQLite error comes from a full disk (SQLITE_FULL, or an I/O error on a full one)."""
    if ((getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF) == _FULL or "disk is full" in str(exc):
        return True
    try:
        return os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT UNIQUE NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    request TEXT NOT NULL,
    num_gpus INTEGER NOT NULL DEFAULT 0,
    output_path TEXT NOT NULL,
    error TEXT,
    pid INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, seq);
"""


@dataclass(frozen=True)
class JobRow:
    job_id: str
    status: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    request: dict[str, Any]
    num_gpus: int
    output_path: str
    error: str | None
    pid: int | None
    attempts: int
    training_run: str | None = None
    step: int | None = None
    metadata: dict[str, Any] | None = None
    executor_job_id: str | None = None  # the job's id in its executor (a SLURM job id, a pid)

    def training(self) -> dict[str, Any] | None:
        """``training_run``, ``step`` and ``metadata`` where the job was given any (else None)."""
        given = {"training_run": self.training_run, "step": self.step, "metadata": self.metadata}
        given = {k: v for k, v in given.items() if v is not None}
        return given or None

    def job_document(self) -> dict[str, Any]:
        """What the job's worker reads: the run settings, and its training run under :data:`TRAINING_KEY`."""
        training = self.training()
        return self.request if training is None else {**self.request, TRAINING_KEY: training}


def _row(r: sqlite3.Row) -> JobRow:
    return JobRow(
        job_id=r["job_id"],
        status=r["status"],
        created_at=r["created_at"],
        started_at=r["started_at"],
        finished_at=r["finished_at"],
        request=json.loads(r["request"]),
        num_gpus=r["num_gpus"],
        output_path=r["output_path"],
        error=r["error"],
        pid=r["pid"],
        attempts=r["attempts"],
        training_run=r["training_run"],
        step=r["step"],
        metadata=json.loads(r["metadata"]) if r["metadata"] else None,
        executor_job_id=r["executor_job_id"],
    )


# the training run of a job (POST /evaluate's training_run, step, metadata): columns added to stores
# made before them, so older jobs.db files open unchanged (their jobs have none)
_TRAINING_COLUMNS = {"training_run": "TEXT", "step": "INTEGER", "metadata": "TEXT"}
TRAINING_KEY = "__training__"  # the key of the job file (see JobRow.job_document) the worker takes out


def _add_training_columns(db: sqlite3.Connection) -> None:
    have = {row[1] for row in db.execute("PRAGMA table_info(jobs)").fetchall()}
    for name, kind in _TRAINING_COLUMNS.items():
        if name not in have:
            db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")
    db.execute("CREATE INDEX IF NOT EXISTS jobs_training ON jobs (training_run, step)")


def _add_executor_column(db: sqlite3.Connection) -> None:
    """``executor_job_id`` (where the executor runs the job), added to stores made before it."""
    if "executor_job_id" not in {row[1] for row in db.execute("PRAGMA table_info(jobs)").fetchall()}:
        db.execute("ALTER TABLE jobs ADD COLUMN executor_job_id TEXT")


class JobStore:
    """Thread-safe access to the jobs table (one connection, one lock)."""

    def __init__(self, path: Path) -> None:
        """Open the store, or create it where no file is; the folder and the file are private to
        the server's user, since queued jobs keep the secrets they need (API keys in
        ``model_args``) until they end. A damaged, truncated or empty file raises :class:`StateError`."""
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists():
            _check_file(path)
        else:
            try:
                _create(path)
            except (OSError, sqlite3.Error) as exc:
                raise StateError(f"{path}: cannot create the job store ({exc})") from None
        self.path = path
        self._lock = threading.Lock()
        self._throttle = Throttle()
        self._broken: str | None = None  # damage seen while running: every call fails from then on
        self.full: str | None = None  # the last write failed for lack of space (cleared by the next)
        self._checkpoint_due = False
        uri = f"{path.absolute().as_uri()}?mode=rw"  # never creates an empty file over a missing one
        self._db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        try:
            problems = [r[0] for r in self._db.execute("PRAGMA quick_check(3)").fetchall()]
            if problems != ["ok"]:
                raise _damaged(path, f"damaged ({' '.join(' '.join(problems).split())[:200]})")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA secure_delete=ON")  # a replaced request leaves no copy of its secrets
            self._db.executescript(_SCHEMA)
            _add_training_columns(self._db)
            _add_executor_column(self._db)
        except sqlite3.Error as exc:
            self._db.close()
            if _out_of_space(exc, path.parent):
                raise StateError(f"{path.parent}: no space left to open the job store; free some") from None
            raise _damaged(path, f"unreadable ({exc})") from None
        except StateError:
            self._db.close()
            raise

    @contextmanager
    def _use(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection under the lock, in a transaction when ``write``; SQLite errors become
        :class:`StoreError` (one line, logged once a minute at most)."""
        with self._lock:
            if self._broken:
                raise StoreError(self._broken)
            try:
                if write:
                    self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                if write:
                    self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise self._failure(exc) from None
            except BaseException:
                if write and self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            if write:
                self.full = None
                if self._checkpoint_due:
                    self._checkpoint()

    def _failure(self, exc: sqlite3.Error) -> StoreError:
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        text = str(exc)
        error: StoreError
        if _out_of_space(exc, self.path.parent):
            self.full = f"{self.path.parent}: no space left for the job store; free some and retry"
            error = StoreFullError(self.full)
        elif code in (_CORRUPT, _NOTADB) or "malformed" in text or "not a database" in text:
            self._broken = (
                f"{self.path}: the job store is damaged ({text}); stop the server, "
                + recovery_hint(self.path)
            )
            error = StoreError(self._broken)
        else:
            error = StoreError(f"{self.path}: the job store cannot be read or written ({text})")
        if self._throttle.allow(str(error)):
            logger.error("%s", error)
        return error

    @property
    def broken(self) -> str | None:
        """Why the store refuses every call, once damage was seen (None while it is sound)."""
        return self._broken

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def insert(
        self,
        job_id: str,
        request: dict[str, Any],
        num_gpus: int,
        output_path: str,
        max_queued: int,
        training: Mapping[str, Any] | None = None,
    ) -> bool:
        """Add a queued job (``training``: its ``training_run``, ``step``, ``metadata``); False when
        ``max_queued`` jobs are already waiting."""
        with self._use(write=True) as db:
            (queued,) = db.execute("SELECT COUNT(*) FROM jobs WHERE status='queued'").fetchone()
            if queued >= max_queued:
                return False
            training = training or {}
            metadata = training.get("metadata")
            db.execute(
                "INSERT INTO jobs (job_id, status, created_at, request, num_gpus, output_path, "
                "training_run, step, metadata) VALUES (?, 'queued', ?, ?, ?, ?, ?, ?, ?)",
                (
                    job_id,
                    time.time(),
                    json.dumps(request),
                    num_gpus,
                    output_path,
                    training.get("training_run"),
                    training.get("step"),
                    json.dumps(metadata) if metadata is not None else None,
                ),
            )
            return True

    def get(self, job_id: str) -> JobRow | None:
        with self._use() as db:
            r = db.execute("SELECT * FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        return _row(r) if r else None

    def list(self, status: str | None = None, limit: int = 1000) -> list[JobRow]:
        query = "SELECT * FROM jobs" + (" WHERE status=?" if status else "") + " ORDER BY seq LIMIT ?"
        with self._use() as db:
            rows = db.execute(query, (status, limit) if status else (limit,)).fetchall()
        return [_row(r) for r in rows]

    def list_training(self, training_run: str | None, limit: int = 1000) -> list[JobRow]:
        """The jobs of one training run by step (every job, oldest first, when ``training_run`` is None)."""
        if training_run is None:
            return self.list(limit=limit)
        with self._use() as db:
            rows = db.execute(
                "SELECT * FROM jobs WHERE training_run=? ORDER BY step, seq LIMIT ?", (training_run, limit)
            ).fetchall()
        return [_row(r) for r in rows]

    def waiting(self, limit: int = 50) -> list[tuple[str, int]]:
        """``(job_id, num_gpus)`` of the oldest queued jobs (cheap: the scheduler asks often)."""
        with self._use() as db:
            rows = db.execute(
                "SELECT job_id, num_gpus FROM jobs WHERE status='queued' ORDER BY seq LIMIT ?", (limit,)
            ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def position(self, job_id: str) -> int | None:
        """How many queued jobs are ahead of ``job_id`` (None when it is not queued)."""
        with self._use() as db:
            row = db.execute("SELECT seq, status FROM jobs WHERE job_id=?", (job_id,)).fetchone()
            if row is None or row["status"] != "queued":
                return None
            (ahead,) = db.execute(
                "SELECT COUNT(*) FROM jobs WHERE status='queued' AND seq < ?", (row["seq"],)
            ).fetchone()
        return int(ahead)

    def counts(self) -> dict[str, int]:
        with self._use() as db:
            rows = db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall()
        return {r[0]: r[1] for r in rows}

    def claim(self, job_id: str) -> bool:
        """Mark a queued job running; False if another claimer (thread or process) was first."""
        with self._use(write=True) as db:
            cur = db.execute(
                "UPDATE jobs SET status='running', started_at=?, attempts=attempts+1 "
                "WHERE job_id=? AND status='queued'",
                (time.time(), job_id),
            )
            return cur.rowcount == 1

    def set_pid(self, job_id: str, pid: int | None) -> None:
        with self._use(write=True) as db:
            db.execute("UPDATE jobs SET pid=? WHERE job_id=?", (pid, job_id))

    def set_executor_job_id(self, job_id: str, executor_job_id: str, pid: int | None = None) -> None:
        """Record where a started job runs (its SLURM job id, or its process id and ``pid``)."""
        with self._use(write=True) as db:
            db.execute(
                "UPDATE jobs SET executor_job_id=?, pid=? WHERE job_id=?", (executor_job_id, pid, job_id)
            )

    def finish(self, job_id: str, status: str, error: str | None = None) -> None:
        """Record how a job ended; its request is kept with secrets redacted (no longer needed)."""
        with self._use(write=True) as db:
            row = db.execute("SELECT request FROM jobs WHERE job_id=?", (job_id,)).fetchone()
            request = json.dumps(redact(json.loads(row["request"]))) if row else "{}"
            db.execute(
                "UPDATE jobs SET status=?, finished_at=?, error=?, pid=NULL, request=? WHERE job_id=?",
                (status, time.time(), error, request, job_id),
            )
        self._forget_old_pages()

    def _forget_old_pages(self) -> None:
        """Empty the WAL file, which still holds the pages written before a request was redacted."""
        with self._lock:
            self._checkpoint()

    def _checkpoint(self) -> None:
        """(Under the lock.) When it fails (no space), it is tried again after the next write."""
        try:
            busy, _, _ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            self._checkpoint_due = bool(busy)
        except sqlite3.Error:
            self._checkpoint_due = True

    def cancel_queued(self, job_id: str) -> bool:
        with self._use(write=True) as db:
            cur = db.execute(
                "UPDATE jobs SET status='cancelled', finished_at=? WHERE job_id=? AND status='queued'",
                (time.time(), job_id),
            )
            if cur.rowcount != 1:
                return False
            row = db.execute("SELECT request FROM jobs WHERE job_id=?", (job_id,)).fetchone()
            request = json.dumps(redact(json.loads(row["request"])))
            db.execute("UPDATE jobs SET request=? WHERE job_id=?", (request, job_id))
        self._forget_old_pages()
        return True

    def requeue_running(self) -> list[JobRow]:
        """Put jobs a previous server left ``running`` back in the queue; returns them as they were."""
        with self._use(write=True) as db:
            rows = [_row(r) for r in db.execute("SELECT * FROM jobs WHERE status='running'").fetchall()]
            db.execute(
                "UPDATE jobs SET status='queued', started_at=NULL, pid=NULL, executor_job_id=NULL "
                "WHERE status='running'"
            )
        return rows

    def requeue(self, job_id: str) -> None:
        """Put one running job back in the queue (its worker is gone, or never started)."""
        with self._use(write=True) as db:
            db.execute(
                "UPDATE jobs SET status='queued', started_at=NULL, pid=NULL, executor_job_id=NULL "
                "WHERE job_id=? AND status='running'",
                (job_id,),
            )

    def prune(self, keep: int) -> int:
        """Forget finished jobs beyond the newest ``keep`` (their output files stay)."""
        with self._use(write=True) as db:
            cur = db.execute(
                "DELETE FROM jobs WHERE status IN ('completed','failed','cancelled') AND seq NOT IN "
                "(SELECT seq FROM jobs WHERE status IN ('completed','failed','cancelled') "
                "ORDER BY seq DESC LIMIT ?)",
                (keep,),
            )
            return cur.rowcount
