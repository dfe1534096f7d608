"""File-system helpers of the response cache: network-FS detection, a lock directory, liveness."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

# file systems where SQLite's WAL (shared memory between processes) is unsafe
NETWORK_FS_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb",
        "smb2",
        "smb3",
        "smbfs",
        "lustre",
        "gpfs",
        "beegfs",
        "glusterfs",
        "fuse.glusterfs",
        "ceph",
        "fuse.ceph",
        "fuse.sshfs",
        "9p",
        "afs",
        "panfs",
        "wekafs",
        "fuse.juicefs",
        "fuse.s3fs",
        "fuse.gcsfuse",
    }
)


def filesystem_type(path: str | Path, mounts: str | None = None) -> str | None:
    """The type of the file system holding ``path`` (from ``/proc/mounts``; ``None`` when unknown)."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text(encoding="utf-8")
        except OSError:
            return None
    lines = mounts.splitlines()
    target = os.path.realpath(path)
    best, best_type = "", None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = fields[1].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, best_type = mount, fields[2]
    return best_type


def is_network_filesystem(path: str | Path) -> bool:
    fs_type = filesystem_type(path)
    return fs_type is not None and fs_type.lower() in NETWORK_FS_TYPES


HOST = socket.gethostname().replace("-", "_") or "host"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (zombies count as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def run_file_name() -> str:
    """``<host>-<pid>-<random>.db``: one run file per process and cache session."""
    return f"{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}.db"


def run_file_owner(path: Path) -> tuple[str, int] | None:
    """(host, pid) encoded in a run file name."""
    parts = path.stem.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])


# a run file (or one moved aside as damaged) and its SQLite side files: what ``runs/`` may hold
_RUN_ENTRY = re.compile(r"^[^-/]+-\d+-[0-9a-f]{8}\.(?:db|corrupt)(?:-wal|-shm|-journal)?$")
# a run file this young, of a live process of this host, is taken as in use without probing its
# lock: its owner creates it and takes the lock a moment later
RUN_FILE_GRACE_S = 10.0


def is_run_entry(name: str) -> bool:
    """Whether a file name in ``runs/`` is one the response cache writes."""
    return bool(_RUN_ENTRY.match(name))


def _age(path: Path) -> float:
    """Seconds since ``path`` or its WAL last changed (``inf`` when neither exists)."""
    newest = 0.0
    for candidate in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):
            newest = max(newest, candidate.stat().st_mtime)
    return time.time() - newest if newest else float("inf")


def run_file_locked(path: Path) -> bool:
    """Whether another connection holds ``path``'s SQLite lock (its run is writing to it).

    The probe opens the file with ``locking_mode=EXCLUSIVE`` (no ``-shm`` file) and asks for a
    write lock without waiting; it never writes and releases the lock at once.
    """
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=0, isolation_level=None
        )
    except sqlite3.Error:
        return False  # gone, or not openable: nobody writes it
    try:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)
    except sqlite3.DatabaseError:
        return False  # not a database: a damaged file nobody can write
    finally:
        conn.close()


def run_file_in_use(path: Path, foreign_quiet_s: float) -> bool:
    """Whether the run that owns run file ``path`` is still going.

    On this host: its process is alive and holds the file's lock (or created the file moments
    ago). Of another host: the file is locked (where the file system passes locks between hosts)
    or changed in the last ``foreign_quiet_s`` seconds.
    """
    owner = run_file_owner(path)
    if owner is not None and owner[0] == HOST:
        if not pid_alive(owner[1]):
            return False
        return _age(path) < RUN_FILE_GRACE_S or run_file_locked(path)
    return run_file_locked(path) or _age(path) < foreign_quiet_s


class LockTimeout(Exception):
    """The merge lock stayed taken for longer than the timeout."""


@contextlib.contextmanager
def lock_directory(path: Path, timeout: float, stale_after: float = 600.0) -> Iterator[None]:
    """Hold ``path`` (a directory; ``mkdir`` is atomic on local and network file systems).

    A lock left by a dead process of this host is broken at once; one older than ``stale_after``
    seconds (its holder was killed on another host) is broken too.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            path.mkdir()
            break
        except FileExistsError:
            if _lock_is_stale(path, stale_after):
                _break_lock(path)
                continue
            if time.monotonic() > deadline:
                raise LockTimeout(f"{path} is held by another process") from None
            time.sleep(0.02)
    with contextlib.suppress(OSError):
        (path / "owner").write_text(f"{HOST} {os.getpid()}\n", encoding="utf-8")
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _lock_is_stale(path: Path, stale_after: float) -> bool:
    try:
        host, pid = (path / "owner").read_text(encoding="utf-8").split()
        if host == HOST:
            return not pid_alive(int(pid))
    except (OSError, ValueError):
        pass  # being written, or from another host
    try:
        return time.time() - path.stat().st_mtime > stale_after
    except OSError:
        return False


def _break_lock(path: Path) -> None:
    doomed = path.with_name(f"{path.name}.stale-{uuid.uuid4().hex[:8]}")
    try:
        path.rename(doomed)  # only one breaker wins the rename
    except OSError:
        return
    logger.warning("response cache: removed a stale lock %s", path)
    shutil.rmtree(doomed, ignore_errors=True)


def remove_sqlite_files(path: Path) -> list[Path]:
    """Delete an SQLite database and its -wal, -shm and -journal files; return those removed."""
    removed = []
    for suffix in ("", "-wal", "-shm", "-journal"):
        candidate = path.with_name(path.name + suffix)
        try:
            candidate.unlink()
            removed.append(candidate)
        except FileNotFoundError:
            pass
    return removed
