"""The job store: one SQLite file (WAL), so queued, running and finished jobs survive restarts."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_eval.secrets import redact

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
    )


class JobStore:
    """Thread-safe access to the jobs table (one connection, one lock)."""

    def __init__(self, path: Path) -> None:
        """Open (or create) the store; the folder and the file are private to the server's user,
        since queued jobs keep the secrets they need (API keys in ``model_args``) until they end."""
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o600, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA secure_delete=ON")  # a replaced request leaves no copy of its secrets
        self._db.executescript(_SCHEMA)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def insert(
        self, job_id: str, request: dict[str, Any], num_gpus: int, output_path: str, max_queued: int
    ) -> bool:
        """Add a queued job; False when ``max_queued`` jobs are already waiting."""
        with self._tx() as db:
            (queued,) = db.execute("SELECT COUNT(*) FROM jobs WHERE status='queued'").fetchone()
            if queued >= max_queued:
                return False
            db.execute(
                "INSERT INTO jobs (job_id, status, created_at, request, num_gpus, output_path) "
                "VALUES (?, 'queued', ?, ?, ?, ?)",
                (job_id, time.time(), json.dumps(request), num_gpus, output_path),
            )
            return True

    def get(self, job_id: str) -> JobRow | None:
        with self._lock:
            r = self._db.execute("SELECT * FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        return _row(r) if r else None

    def list(self, status: str | None = None, limit: int = 1000) -> list[JobRow]:
        query = "SELECT * FROM jobs" + (" WHERE status=?" if status else "") + " ORDER BY seq LIMIT ?"
        with self._lock:
            rows = self._db.execute(query, (status, limit) if status else (limit,)).fetchall()
        return [_row(r) for r in rows]

    def waiting(self, limit: int = 50) -> list[tuple[str, int]]:
        """``(job_id, num_gpus)`` of the oldest queued jobs (cheap: the scheduler asks often)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT job_id, num_gpus FROM jobs WHERE status='queued' ORDER BY seq LIMIT ?", (limit,)
            ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def position(self, job_id: str) -> int | None:
        """How many queued jobs are ahead of ``job_id`` (None when it is not queued)."""
        with self._lock:
            row = self._db.execute("SELECT seq, status FROM jobs WHERE job_id=?", (job_id,)).fetchone()
            if row is None or row["status"] != "queued":
                return None
            (ahead,) = self._db.execute(
                "SELECT COUNT(*) FROM jobs WHERE status='queued' AND seq < ?", (row["seq"],)
            ).fetchone()
        return int(ahead)

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall()
        return {r[0]: r[1] for r in rows}

    def claim(self, job_id: str) -> bool:
        """Mark a queued job running; False if another claimer (thread or process) was first."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE jobs SET status='running', started_at=?, attempts=attempts+1 "
                "WHERE job_id=? AND status='queued'",
                (time.time(), job_id),
            )
            return cur.rowcount == 1

    def set_pid(self, job_id: str, pid: int | None) -> None:
        with self._tx() as db:
            db.execute("UPDATE jobs SET pid=? WHERE job_id=?", (pid, job_id))

    def finish(self, job_id: str, status: str, error: str | None = None) -> None:
        """Record how a job ended; its request is kept with secrets redacted (no longer needed)."""
        with self._tx() as db:
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
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def cancel_queued(self, job_id: str) -> bool:
        with self._tx() as db:
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
        with self._tx() as db:
            rows = [_row(r) for r in db.execute("SELECT * FROM jobs WHERE status='running'").fetchall()]
            db.execute("UPDATE jobs SET status='queued', started_at=NULL, pid=NULL WHERE status='running'")
        return rows

    def prune(self, keep: int) -> int:
        """Forget finished jobs beyond the newest ``keep`` (their output files stay)."""
        with self._tx() as db:
            cur = db.execute(
                "DELETE FROM jobs WHERE status IN ('completed','failed','cancelled') AND seq NOT IN "
                "(SELECT seq FROM jobs WHERE status IN ('completed','failed','cancelled') "
                "ORDER BY seq DESC LIMIT ?)",
                (keep,),
            )
            return cur.rowcount
