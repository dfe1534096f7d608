"""File-system helpers of the response cache: network-FS detection, a lock directory, liveness."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
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
