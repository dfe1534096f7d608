"""``ResponseCache``: model answers stored in SQLite, safe to share between processes.

Layout of a cache folder ``PATH`` (``--use_cache PATH``):

* ``PATH/cache.db`` — the shared store. During a run a process only *reads* it; it is written only
  by merges, which hold the lock directory ``PATH/.merge.lock``.
* ``PATH/runs/<host>-<pid>-<random>.db`` — one *run file* per process (per rank), created on the
  first answer. The process is its only writer: every batch of answers the model returns is
  committed there at once, so ``kill -9`` loses nothing that was already answered. The file is in
  WAL mode with ``locking_mode=EXCLUSIVE``: SQLite then keeps the WAL index in process memory (no
  shared-memory ``-shm`` file, no mmap), which is safe on network file systems too, and the
  exclusive lock tells other processes that the file is in use.
* On :meth:`ResponseCache.close` the run file is merged into ``cache.db`` and deleted. A run file
  left behind by a killed process (its lock is free and, on this host, its pid is gone) is merged
  by the next process that opens the cache, so rerunning the same command resumes where it stopped.
* An evaluation holds the cache from the start (:meth:`ResponseCache.hold`: its run file is created
  and locked before the first answer), so ``lmms-eval cache clear`` / ``prune`` see it and wait or
  refuse (:mod:`lmms_eval.caching._guard`). Should ``cache.db`` be deleted or replaced all the same,
  the cache notices (inode check) and reopens it before reading or merging, so no answer is merged
  into a deleted file.

``cache.db`` uses WAL (readers never wait for a merge) on local disks. On a network file system
(NFS, Lustre, GPFS, CIFS, ... per ``/proc/mounts``), or when WAL cannot be enabled, it uses
``journal_mode=DELETE`` and no mmap, because WAL needs shared memory between processes, which such
file systems cannot give across hosts. ``LMMS_EVAL_CACHE_JOURNAL=wal|delete`` overrides the choice.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_eval.caching._files import (
    HOST,
    LockTimeout,
    is_network_filesystem,
    lock_directory,
    pid_alive,
    remove_sqlite_files,
    run_file_name,
    run_file_owner,
)
from lmms_eval.caching._guard import (
    CACHE_DB,
    CACHE_TABLES,
    FOREIGN_RUN_QUIET_S,
    LOCK_DIR,
    RUNS_DIR,
    CacheError,
    CacheInUseError,
    NotACacheError,
    check_cache_folder,
    remove_own_files,
    when_idle,
)

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
JOURNAL_ENV = "LMMS_EVAL_CACHE_JOURNAL"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS responses (
    cache_key TEXT PRIMARY KEY,
    request_type TEXT NOT NULL,
    task_name TEXT NOT NULL,
    doc_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    model TEXT NOT NULL,
    model_fingerprint TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_task ON responses (task_name, doc_id);
CREATE INDEX IF NOT EXISTS responses_model ON responses (model, model_fingerprint);
"""
_COLUMNS = (
    "cache_key, request_type, task_name, doc_id, idx, repeat, model, model_fingerprint, response, created_at"
)
_INSERT = f"INSERT OR REPLACE INTO responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


@dataclass(frozen=True)
class CacheEntry:
    """One stored answer; ``response`` is the JSON-ready record of :func:`keys.encode_response`."""

    key: str
    request_type: str
    task_name: str
    doc_id: int
    idx: int
    repeat: int
    model: str
    model_fingerprint: str
    response: dict[str, Any]

    def row(self) -> tuple[Any, ...]:
        return (
            self.key,
            self.request_type,
            self.task_name,
            self.doc_id,
            self.idx,
            self.repeat,
            self.model,
            self.model_fingerprint,
            json.dumps(self.response, ensure_ascii=False, allow_nan=False),
            time.time(),
        )


OPEN_RETRY_S = 30.0


class _Locked(Exception):
    """The root database was busy while it was being opened (retried by ``_open_root``)."""


def _damaged(file: Path, folder: Path, exc: BaseException) -> CacheError:
    return CacheError(
        f"response cache file {file} is damaged or is not a response cache ({exc}). Remove it with "
        f"'lmms-eval cache clear --path {folder}', or pass --use_cache a new folder; the cache only "
        "saves model calls, so no results are lost"
    )


class ResponseCache:
    """A response cache folder (see the module docstring); close it to merge this process's answers."""

    def __init__(self, path: str | os.PathLike[str], journal_mode: str = "auto", lock_timeout: float = 60.0):
        self.path = Path(path).expanduser()
        self.db_path = self.path / CACHE_DB
        self.runs_dir = self.path / RUNS_DIR
        self.lock_timeout = lock_timeout
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"cannot create the response cache folder {self.path}: {exc}") from None
        self.journal_mode = self._choose_journal_mode(journal_mode)
        self._lock = threading.RLock()
        self._run: sqlite3.Connection | None = None
        self._run_path: Path | None = None
        self._write_error: str | None = None
        self.committed = 0  # answers this process committed to its run file
        self._db_ident: tuple[int, int] | None = None
        self._db = self._open_root()  # first: refuses a cache.db that is not ours, before runs/ exists
        try:
            self.runs_dir.mkdir(exist_ok=True)
        except OSError as exc:
            self._db.close()
            raise CacheError(f"cannot create the response cache folder {self.runs_dir}: {exc}") from None
        self.merge_pending()

    # -- opening ------------------------------------------------------------------------------------

    def _choose_journal_mode(self, requested: str) -> str:
        choice = (os.environ.get(JOURNAL_ENV) or requested or "auto").strip().lower()
        if choice not in ("auto", "wal", "delete"):
            raise CacheError(f"{JOURNAL_ENV}: expected wal, delete or auto, got {choice!r}")
        if choice == "auto":
            choice = "delete" if is_network_filesystem(self.path) else "wal"
        return choice

    def _open_root(self) -> sqlite3.Connection:
        """The root database, created if new. Processes opening one folder at the same moment (the
        ranks of a distributed run) may find it locked while another switches it to WAL: retried."""
        deadline = time.monotonic() + OPEN_RETRY_S
        while True:
            try:
                return self._open_root_once()
            except _Locked:
                if time.monotonic() > deadline:
                    raise _damaged(
                        self.db_path, self.path, sqlite3.OperationalError("database is locked")
                    ) from None
                time.sleep(0.05)

    def _open_root_once(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                str(self.db_path), timeout=30.0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise CacheError(f"cannot open the response cache {self.db_path}: {exc}") from None
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and not tables >= CACHE_TABLES:  # someone's database: do not touch it
                db.close()
                raise NotACacheError(
                    f"{self.db_path} is not a response cache (it holds tables "
                    f"{', '.join(sorted(tables)[:5])}); pass --use_cache a folder of its own"
                )
            mode = str(db.execute(f"PRAGMA journal_mode={self.journal_mode}").fetchone()[0]).lower()
            if mode != self.journal_mode:
                logger.info(
                    "response cache %s: WAL is not available; using journal_mode=DELETE", self.db_path
                )
                db.execute("PRAGMA journal_mode=DELETE")
                self.journal_mode = "delete"
            db.execute("PRAGMA synchronous=" + ("NORMAL" if self.journal_mode == "wal" else "FULL"))
            db.execute("PRAGMA mmap_size=0")
            # one transaction: a process opening the folder at the same time (another rank) sees
            # all of the schema or none of it, never a database that looks like someone else's
            db.executescript(
                f"BEGIN IMMEDIATE;\n{_SCHEMA}\nINSERT OR IGNORE INTO meta (key, value) "
                f"VALUES ('schema_version', '{SCHEMA_VERSION}');\nCOMMIT;"
            )
            version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
            check = db.execute("PRAGMA quick_check(1)").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            db.close()
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise _Locked from None
            raise _damaged(self.db_path, self.path, exc) from None
        if check != "ok":
            db.close()
            raise _damaged(self.db_path, self.path, ValueError(f"integrity check: {check}"))
        if version != SCHEMA_VERSION:
            db.close()
            raise _damaged(
                self.db_path, self.path, ValueError(f"schema version {version}, expected {SCHEMA_VERSION}")
            )
        self._db_ident = self._root_ident()
        return db

    def _root_ident(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.db_path)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def _ensure_root(self) -> None:
        """Reopen ``cache.db`` if it was deleted or replaced since it was opened (``cache clear``)."""
        ident = self._root_ident()
        if ident is not None and ident == self._db_ident:
            return
        logger.warning("response cache: %s was removed or replaced; opening it again", self.db_path)
        old, self._db = self._db, self._open_root()
        old.close()

    def _open_run(self) -> sqlite3.Connection:
        path = self.runs_dir / run_file_name()
        conn = sqlite3.connect(str(path), timeout=0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # before any WAL access: no -shm file, no mmap
        if str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower() != "wal":
            conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA synchronous=NORMAL")  # survives a killed process; fsync is left to close
        conn.executescript(_SCHEMA)
        conn.execute(  # the first write takes the exclusive lock, held until close
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('owner', ?)",
            (json.dumps({"host": HOST, "pid": os.getpid(), "started": time.time()}),),
        )
        self._run_path = path
        logger.debug("response cache: answers of this process go to %s", path)
        return conn

    def hold(self) -> bool:
        """Create (and lock) this process's run file now, so that ``cache clear``/``prune`` see a
        running evaluation before its first answer; ``False`` if it cannot be written."""
        with self._lock:
            self._start_run()
            return self._run is not None

    def _start_run(self) -> sqlite3.Connection | None:
        if self._run is None and self._write_error is None:
            try:
                self._run = self._open_run()
                self._ensure_root()
            except (sqlite3.Error, OSError) as exc:
                self._write_error = str(exc)
                logger.error(
                    "response cache %s: cannot create a run file (%s); the run goes on without storing",
                    self.path,
                    exc,
                )
        return self._run

    # -- reading and writing --------------------------------------------------------------------------

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored records of those ``keys`` that are in the cache (undecodable ones left out)."""
        found: dict[str, dict[str, Any]] = {}
        if not keys:
            return found
        with self._lock:
            self._ensure_root()
            sources = [self._db] + ([self._run] if self._run is not None else [])
            for begin in range(0, len(keys), 500):
                part = list(keys[begin : begin + 500])
                marks = ",".join("?" * len(part))
                for conn in sources:
                    try:
                        rows = conn.execute(
                            f"SELECT cache_key, response FROM responses WHERE cache_key IN ({marks})", part
                        ).fetchall()
                    except sqlite3.DatabaseError as exc:
                        raise _damaged(self.db_path, self.path, exc) from None
                    for key, text in rows:
                        try:
                            found[key] = json.loads(text)
                        except ValueError:
                            logger.warning(
                                "response cache %s: ignoring an unreadable entry %s", self.path, key
                            )
        return found

    def put_many(self, entries: Sequence[CacheEntry]) -> int:
        """Store ``entries`` in this process's run file in one committed transaction; returns the count."""
        if not entries or self._write_error is not None:
            return 0
        with self._lock:
            run = self._start_run()
            if run is None:
                return 0
            try:
                run.execute("BEGIN")
                run.executemany(_INSERT, [e.row() for e in entries])
                run.execute("COMMIT")
                self.committed += len(entries)
            except (sqlite3.Error, OSError, ValueError) as exc:
                self._write_error = str(exc)
                logger.error(
                    "response cache %s: cannot store answers (%s); the run goes on without storing more",
                    self.path,
                    exc,
                )
                return 0
        logger.debug("response cache: committed %d answer(s), %d in this run", len(entries), self.committed)
        return len(entries)

    def put(self, entry: CacheEntry) -> int:
        return self.put_many([entry])

    # -- merging ------------------------------------------------------------------------------------

    def _copy_rows(self, rows: Iterable[tuple[Any, ...]]) -> int:
        count = 0
        self._db.execute("BEGIN IMMEDIATE")
        try:
            batch: list[tuple[Any, ...]] = []
            for row in rows:
                batch.append(row)
                if len(batch) >= 1000:
                    self._db.executemany(_INSERT, batch)
                    count += len(batch)
                    batch = []
            self._db.executemany(_INSERT, batch)
            count += len(batch)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return count

    @staticmethod
    def _rows(conn: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
        cursor = conn.execute(f"SELECT {_COLUMNS} FROM responses")
        while True:
            chunk = cursor.fetchmany(1000)
            if not chunk:
                return
            yield from chunk

    def pending_run_files(self) -> list[Path]:
        """Run files not merged yet (of running processes, or left by killed ones)."""
        return sorted(p for p in self.runs_dir.glob("*.db") if p != self._run_path)

    def merge_pending(self) -> int:
        """Merge run files whose process is gone into ``cache.db``; returns the entries merged."""
        if not self.pending_run_files():
            return 0
        try:
            with self._lock, lock_directory(self.path / LOCK_DIR, self.lock_timeout):
                return self._merge_pending_locked()
        except LockTimeout as exc:
            logger.warning("response cache: not merging earlier runs now (%s)", exc)
            return 0

    def _merge_pending_locked(self) -> int:
        self._ensure_root()
        merged = 0
        for path in self.pending_run_files():  # listed under the lock: another process may have merged some
            merged += self._merge_orphan(path)
        if merged:
            logger.info("response cache %s: merged %d answers of earlier runs", self.path, merged)
        return merged

    def _merge_orphan(self, path: Path) -> int:
        owner = run_file_owner(path)
        if owner is not None and owner[0] == HOST and pid_alive(owner[1]):
            return 0  # a running process of this host
        try:  # mode=rw: never create a file that another process has just merged and removed
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=rw",
                uri=True,
                timeout=0,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error:
            return 0
        try:
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            conn.execute("BEGIN IMMEDIATE")  # fails while the owner holds its lock
        except sqlite3.OperationalError as exc:
            conn.close()
            if "locked" in str(exc) or "busy" in str(exc):
                return 0
            return self._quarantine(path, exc)
        except sqlite3.DatabaseError as exc:
            conn.close()
            return self._quarantine(path, exc)
        try:
            count = self._copy_rows(self._rows(conn))
        except sqlite3.DatabaseError as exc:
            conn.close()
            return self._quarantine(path, exc)
        conn.execute("ROLLBACK")
        conn.close()
        quiet = owner is not None and owner[0] == HOST
        if not quiet:
            try:
                quiet = time.time() - path.stat().st_mtime > FOREIGN_RUN_QUIET_S
            except OSError:
                quiet = False
        if quiet:
            remove_sqlite_files(path)
        return count

    def _quarantine(self, path: Path, exc: BaseException) -> int:
        if "no such table" in str(exc):  # created but never written: nothing to keep
            remove_sqlite_files(path)
            return 0
        target = path.with_suffix(".corrupt")
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                path.with_name(path.name + suffix).rename(target.with_name(target.name + suffix))
        logger.warning(
            "response cache: run file %s is damaged (%s); moved it aside to %s, its answers are lost",
            path,
            exc,
            target,
        )
        return 0

    @classmethod
    def merge_shards(
        cls, shard_paths: Iterable[str | os.PathLike[str]], output_path: str | os.PathLike[str]
    ) -> int:
        """Merge per-rank caches into the cache at ``output_path``; returns the entries merged.

        A shard is a run file (``runs/*.db``, e.g. copied from a node's local disk), another
        cache's ``cache.db``, or a cache folder (its ``cache.db`` and the run files left in it).
        ``output_path`` is a cache folder (created if missing) or its ``cache.db``. Answers are
        keyed by request, not by rank, so shards of runs with any number of ranks merge. A shard
        that is not a response cache, is damaged, or is still written by a running evaluation is
        a :class:`CacheError` naming it, and nothing of it is merged.
        """
        target = Path(output_path).expanduser()
        folder = target.parent if target.name == CACHE_DB else target
        files: list[Path] = []
        for shard in map(Path, shard_paths):
            shard = shard.expanduser()
            if shard.is_dir():
                files += [p for p in [shard / CACHE_DB] if p.is_file()] + sorted(
                    (shard / RUNS_DIR).glob("*.db")
                )
            elif shard.is_file():
                files.append(shard)
            else:
                raise CacheError(f"merge_shards: {shard} does not exist")
        cache = cls(folder)
        merged = 0
        try:
            for file in files:
                if file.resolve() == cache.db_path.resolve():
                    continue
                with cache._lock, lock_directory(cache.path / LOCK_DIR, cache.lock_timeout):
                    cache._ensure_root()
                    merged += cache._merge_shard(file)
        finally:
            cache.close()
        logger.info("response cache %s: merged %d answers from %d shard file(s)", folder, merged, len(files))
        return merged

    def _merge_shard(self, file: Path) -> int:
        try:
            conn = sqlite3.connect(
                f"{file.resolve().as_uri()}?mode=ro", uri=True, timeout=0, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise CacheError(f"merge_shards: cannot open {file}: {exc}") from None
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "responses" not in tables:
                raise NotACacheError(f"merge_shards: {file} is not a response cache (no responses table)")
            return self._copy_rows(self._rows(conn))
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise CacheInUseError(
                    f"merge_shards: {file} is being written by a running evaluation"
                ) from None
            raise _damaged(file, self.path, exc) from None
        except sqlite3.DatabaseError as exc:
            raise _damaged(file, self.path, exc) from None
        finally:
            conn.close()

    # -- management ---------------------------------------------------------------------------------

    def stats(self) -> list[dict[str, Any]]:
        """Entries per (task, model, model fingerprint) in ``cache.db``."""
        with self._lock:
            self._ensure_root()
            rows = self._db.execute(
                "SELECT task_name, model, model_fingerprint, COUNT(*) FROM responses "
                "GROUP BY task_name, model, model_fingerprint ORDER BY task_name, model, model_fingerprint"
            ).fetchall()
        return [{"task": t, "model": m, "model_fingerprint": f, "entries": int(n)} for t, m, f, n in rows]

    def __len__(self) -> int:
        with self._lock:
            total = int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
            if self._run is not None:
                total += int(self._run.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
            return total

    def prune(self, task: str | None = None, model: str | None = None, wait: float = 0.0) -> int:
        """Delete the entries of a task and/or a model (id or fingerprint); returns how many.

        Runs once no other evaluation holds the cache (waiting up to ``wait`` seconds, else
        :class:`CacheInUseError`), after merging what killed runs left, so a running evaluation
        cannot put pruned answers back afterwards.
        """
        if not task and not model:
            raise CacheError("cache prune needs --task and/or --model")
        clauses, params = [], []
        if task:
            clauses.append("task_name = ?")
            params.append(task)
        if model:
            clauses.append("(model = ? OR model_fingerprint = ?)")
            params += [model, model]

        def delete() -> int:
            self._merge_pending_locked()
            cursor = self._db.execute(f"DELETE FROM responses WHERE {' AND '.join(clauses)}", params)
            return int(cursor.rowcount)

        with self._lock:
            return when_idle(self.path, "prune", delete, wait, self.lock_timeout, exclude=self._run_path)

    def close(self) -> None:
        """Merge this process's answers into ``cache.db`` and release the files."""
        with self._lock:
            run, self._run = self._run, None
            if run is not None:
                assert self._run_path is not None
                try:
                    with lock_directory(self.path / LOCK_DIR, self.lock_timeout):
                        self._ensure_root()
                        self._copy_rows(self._rows(run))
                    run.close()
                    remove_sqlite_files(self._run_path)
                except (LockTimeout, sqlite3.Error) as exc:
                    run.close()
                    logger.warning(
                        "response cache: could not merge %s now (%s); the next run will", self._run_path, exc
                    )
                self._run_path = None
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def clear_cache(path: str | os.PathLike[str], wait: float = 0.0, lock_timeout: float = 60.0) -> list[Path]:
    """Delete a cache folder's own files (also when ``cache.db`` is damaged); returns those removed.

    Refuses (:class:`NotACacheError`) a folder that is not a response cache, and
    (:class:`CacheInUseError`) while an evaluation holds the cache, after waiting up to ``wait``
    seconds for it to end. Removes ``cache.db`` and its side files, the run files no evaluation
    holds and stale locks; nothing else in the folder. A missing folder has nothing to remove.
    """
    folder = Path(path).expanduser()
    if not folder.exists():
        return []
    check_cache_folder(folder, "clear")
    return when_idle(folder, "clear", lambda: remove_own_files(folder), wait, lock_timeout)


def default_cache_path() -> Path:
    """``$LMMS_EVAL_USE_CACHE`` when it names a folder, else ``$LMMS_EVAL_HOME/eval_cache``."""
    from lmms_eval.utils import get_default_cache_dir

    env = os.environ.get("LMMS_EVAL_USE_CACHE", "").strip()
    if env and env.lower() not in _TRUE | _FALSE:
        return Path(env).expanduser()
    return Path(get_default_cache_dir()) / "eval_cache"


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def resolve_cache_path(use_cache: str | os.PathLike[str] | None) -> Path | None:
    """The cache folder of a run: ``use_cache`` if given, else from ``LMMS_EVAL_USE_CACHE``.

    ``LMMS_EVAL_USE_CACHE=True`` caches under ``$LMMS_EVAL_HOME/eval_cache`` (default
    ``~/.cache/lmms-eval/eval_cache``); a folder name caches there; unset or false: no cache.
    """
    if use_cache is not None and str(use_cache).strip():
        return Path(use_cache).expanduser()
    env = os.environ.get("LMMS_EVAL_USE_CACHE", "").strip()
    if env.lower() in _FALSE:
        return None
    return default_cache_path()


__all__ = [
    "CACHE_DB",
    "RUNS_DIR",
    "CacheEntry",
    "CacheError",
    "CacheInUseError",
    "NotACacheError",
    "ResponseCache",
    "check_cache_folder",
    "clear_cache",
    "default_cache_path",
    "resolve_cache_path",
]
