"""What keeps ``cache clear`` / ``cache prune`` safe: only our folders, only our files, never a live run.

* :func:`check_cache_folder` tells a response cache folder from any other: its ``cache.db`` has the
  cache's tables, or (a damaged ``cache.db``, or none) its ``runs/`` folder holds only run files.
* :func:`live_runs` lists the run files whose evaluation is still going (see
  :func:`~lmms_eval.caching._files.run_file_in_use`).
* :func:`when_idle` runs an action under the merge lock once no evaluation holds the cache, waiting
  up to ``wait`` seconds for them to end, else raises :class:`CacheInUseError` naming them.
* :func:`remove_own_files` deletes the files the cache writes and nothing else.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from lmms_eval.caching._files import (
    LockTimeout,
    is_run_entry,
    lock_directory,
    remove_sqlite_files,
    run_file_in_use,
    run_file_owner,
)
from lmms_eval.errors import LmmsEvalError

logger = logging.getLogger(__name__)

T = TypeVar("T")

CACHE_DB = "cache.db"
RUNS_DIR = "runs"
LOCK_DIR = ".merge.lock"
CACHE_TABLES = frozenset({"meta", "responses"})
# a run file of another host counts as in use (and is not deleted after merging) until it has not
# changed for this long, where the file system does not pass SQLite locks between hosts
FOREIGN_RUN_QUIET_S = 60.0
WAIT_POLL_S = 0.25
_SQLITE_HEADER = b"SQLite format 3\x00"


class CacheError(LmmsEvalError):
    """The response cache cannot be used (a damaged file, an unwritable folder)."""


class NotACacheError(CacheError):
    """A folder (or its ``cache.db``) is not a response cache, so nothing in it is touched."""


class CacheInUseError(CacheError):
    """A running evaluation holds the cache (its run file is locked)."""


# -- which folders are ours ------------------------------------------------------------------------


def cache_tables(db: Path, header: bytes = b"") -> set[str]:
    """The tables of SQLite file ``db``, read without writing; raises ``sqlite3.DatabaseError``.

    A read-only connection to a WAL database would create ``-wal``/``-shm`` files and leave them
    behind, so a WAL database without both (``header`` bytes 18-19 are 2) is read as immutable:
    then everything is in the main file.
    """
    wal = header[18:20] == b"\x02\x02"
    sides = all(db.with_name(db.name + suffix).exists() for suffix in ("-wal", "-shm"))
    query = "immutable=1" if wal and not sides else "mode=ro"
    with contextlib.closing(
        sqlite3.connect(f"{db.resolve().as_uri()}?{query}", uri=True, timeout=5.0, isolation_level=None)
    ) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(name) for (name,) in rows}


def _db_verdict(db: Path) -> tuple[str, str]:
    """``("ours", "")``, ``("unreadable", why)`` (maybe a damaged cache) or ``("foreign", why)``."""
    if not db.is_file():
        return "foreign", "is not a file"
    try:
        with db.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        return "unreadable", f"cannot be read ({exc})"
    if not header.startswith(_SQLITE_HEADER):
        return "unreadable", "is not an SQLite database"
    try:
        tables = cache_tables(db, header)
    except sqlite3.DatabaseError as exc:
        return "unreadable", f"cannot be read ({exc})"
    if tables >= CACHE_TABLES:
        return "ours", ""
    if not tables:
        return "unreadable", "has no tables"
    return "foreign", "holds other tables (" + ", ".join(sorted(tables)[:5]) + ")"


def _runs_are_ours(runs: Path) -> bool:
    try:
        return runs.is_dir() and all(is_run_entry(entry.name) for entry in runs.iterdir())
    except OSError:
        return False


def check_cache_folder(folder: Path, action: str) -> None:
    """Raise :class:`NotACacheError` unless ``folder`` is a response cache (see the module doc)."""
    tail = f"'lmms-eval cache {action}' changed nothing"
    if not folder.is_dir():
        raise NotACacheError(f"{folder} is not a folder, so it is not a response cache; {tail}")
    db = folder / CACHE_DB
    runs_ours = _runs_are_ours(folder / RUNS_DIR)
    if not (db.exists() or db.is_symlink()):
        if runs_ours:
            return
        raise NotACacheError(
            f"{folder} is not a response cache (it has no {CACHE_DB} and no {RUNS_DIR}/ folder of run "
            f"files); {tail}"
        )
    verdict, why = _db_verdict(db)
    if verdict == "ours" or (verdict == "unreadable" and runs_ours):
        return
    raise NotACacheError(f"{folder} is not a response cache: its {CACHE_DB} {why}; {tail}")


# -- who holds the cache -----------------------------------------------------------------------------


def live_runs(folder: Path, exclude: Path | None = None) -> list[Path]:
    """Run files under ``folder/runs`` whose evaluation is still going (``exclude``: our own)."""
    runs = folder / RUNS_DIR
    if not runs.is_dir():
        return []
    return [
        path
        for path in sorted(runs.glob("*.db"))
        if path != exclude and run_file_in_use(path, FOREIGN_RUN_QUIET_S)
    ]


def describe_holders(folder: Path, holders: list[Path]) -> str:
    """``process 12 on host h (runs/h-12-0a1b2c3d.db)`` for each holder, comma-separated."""
    parts = []
    for path in holders:
        owner = run_file_owner(path)
        who = f"process {owner[1]} on host {owner[0]}" if owner is not None else "a process"
        parts.append(f"{who} ({path.relative_to(folder)})")
    return ", ".join(parts)


def when_idle(
    folder: Path,
    action: str,
    run: Callable[[], T],
    wait: float,
    lock_timeout: float,
    exclude: Path | None = None,
) -> T:
    """``run()`` under the merge lock once no evaluation holds ``folder`` (see the module doc).

    The lock is not held between checks, so the evaluations waited for can merge their answers.
    """
    deadline = time.monotonic() + max(0.0, wait)
    waiting = False
    while True:
        remaining = deadline - time.monotonic()
        try:
            with lock_directory(folder / LOCK_DIR, max(lock_timeout, remaining)):
                holders = live_runs(folder, exclude)
                if not holders:
                    return run()
        except LockTimeout as exc:
            raise CacheInUseError(f"cache {action}: {exc}; try again later, nothing was changed") from None
        if time.monotonic() >= deadline:
            raise CacheInUseError(_in_use_message(folder, action, holders, wait))
        if not waiting:
            waiting = True
            logger.warning(
                "cache %s: waiting up to %g s for %s to end", action, wait, describe_holders(folder, holders)
            )
        time.sleep(max(0.01, min(WAIT_POLL_S, deadline - time.monotonic())))


def _in_use_message(folder: Path, action: str, holders: list[Path], wait: float) -> str:
    count = f"{len(holders)} running evaluation" + ("s" if len(holders) > 1 else "")
    waited = f"still in use after {wait:g} s" if wait > 0 else "in use"
    return (
        f"cache {action}: response cache {folder} is {waited} by {count}: "
        f"{describe_holders(folder, holders)}; nothing was changed. Let it finish, or pass "
        f"--wait SECONDS to wait for it"
    )


# -- removing ---------------------------------------------------------------------------------------


def remove_own_files(folder: Path) -> list[Path]:
    """Delete ``cache.db`` (and side files), the run files no evaluation holds and stale locks.

    Call it holding the merge lock. Everything else in the folder is left alone (and counted in
    a warning).
    """
    removed = remove_sqlite_files(folder / CACHE_DB)
    runs = folder / RUNS_DIR
    groups: dict[str, list[Path]] = {}  # run file name -> it and its side files
    foreign = 0
    for entry in sorted(runs.iterdir()) if runs.is_dir() else []:
        if not (entry.is_file() and is_run_entry(entry.name)):
            foreign += 1
            continue
        base = entry.name
        for suffix in ("-wal", "-shm", "-journal"):
            base = base.removesuffix(suffix)
        groups.setdefault(base, []).append(entry)
    kept = 0
    for base, files in groups.items():
        if base.endswith(".db") and run_file_in_use(runs / base, FOREIGN_RUN_QUIET_S):
            kept += len(files)  # an evaluation that started a moment ago
            continue
        for entry in files:
            entry.unlink(missing_ok=True)
            removed.append(entry)
    for stale in folder.glob(LOCK_DIR + ".stale-*"):
        shutil.rmtree(stale, ignore_errors=True)
        removed.append(stale)
    if kept:
        logger.warning("cache clear: kept %d file(s) of an evaluation that has just started", kept)
    if foreign:
        logger.warning("cache clear: left %d entr(ies) in %s that the cache did not write", foreign, runs)
    return removed


__all__ = [
    "CACHE_DB",
    "CACHE_TABLES",
    "FOREIGN_RUN_QUIET_S",
    "LOCK_DIR",
    "RUNS_DIR",
    "CacheError",
    "CacheInUseError",
    "NotACacheError",
    "cache_tables",
    "check_cache_folder",
    "describe_holders",
    "live_runs",
    "remove_own_files",
    "when_idle",
]
