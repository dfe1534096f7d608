"""A real single-node SLURM cluster for the tests, started as root under a temporary folder.

It runs its own ``munged`` (own key and socket), ``slurmctld`` and ``slurmd`` with its own
``slurm.conf`` (own ports, spool, state and logs), and stops them at the end. Where it cannot start
(not root, ``slurm-wlm``/``munge`` missing and not installable) the tests that use it are skipped
with the reason. ``SLURM_CONF`` is exported while it lives, so the server and the SLURM client
commands run by the tests find this cluster as any SLURM client would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo", "srun")
START_TIMEOUT_S = 60.0
FAKE_GPUS = 2


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    node: str
    partition: str = "debug"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True) -> str:
        """A SLURM client command against this cluster; its stdout."""
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=self.env())
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout

    def jobs(self) -> list[dict[str, str]]:
        """Every job squeue still shows (recently ended ones too): id, name, state, reason."""
        out = self.run("squeue", "--noheader", "--states=all", "--format=%i|%j|%T|%r")
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        return [{"id": r[0], "name": r[1], "state": r[2], "reason": r[3]} for r in rows]


def _which(name: str) -> str | None:
    """A SLURM or munge program, also where PATH lacks the sbin folders."""
    return shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _why_not() -> str | None:
    """Why no cluster can start here (None when it can), installing the packages when missing."""
    if os.geteuid() != 0:
        return "a test SLURM cluster needs root (slurmd runs jobs as their user)"
    missing = [name for name in (*DAEMONS, *CLIENTS) if _which(name) is None]
    if missing and shutil.which("apt-get"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["apt-get", "install", "-y", "-qq", "slurm-wlm", "munge"],
                           capture_output=True, timeout=600, check=False)  # fmt: skip
        missing = [name for name in (*DAEMONS, *CLIENTS) if _which(name) is None]
    if missing:
        return f"SLURM is not installed ({', '.join(missing)} missing; apt-get install slurm-wlm munge)"
    return None


def _write_conf(root: Path, node: str) -> Path:
    ctld_port, slurmd_port = _free_ports(2)
    memory = 1024
    conf = root / "slurm.conf"
    conf.write_text(
        f"""ClusterName=lmmstest
SlurmctldHost={node}
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root / "munge" / "munge.socket"}
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root / "slurmd.pid"}
SlurmctldLogFile={root / "slurmctld.log"}
SlurmdLogFile={root / "slurmd.log"}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=300
KillWait=5
InactiveLimit=0
GresTypes=gpu
NodeName={node} NodeAddr=127.0.0.1 CPUs=2 RealMemory={memory} Gres=gpu:{FAKE_GPUS} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
""",
        encoding="utf-8",
    )
    # GPUs that SLURM counts and hands out but that are plain files: a job can ask for them
    lines = []
    for i in range(FAKE_GPUS):
        (root / f"fakegpu{i}").touch()
        lines.append(f"NodeName={node} Name=gpu File={root / f'fakegpu{i}'}\n")
    (root / "gres.conf").write_text("".join(lines), encoding="utf-8")
    return conf


def _start(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


def _wait_idle(cluster: SlurmCluster, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    state = ""
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited with status {proc.returncode}")  # type: ignore[index]
        state = cluster.run("sinfo", "--noheader", "--format=%T", check=False).strip()
        if state == "idle":
            return
        time.sleep(0.5)
    raise RuntimeError(f"the node is not idle after {START_TIMEOUT_S:.0f} s (sinfo: {state or 'no answer'})")


def _stop(cluster: SlurmCluster | None, procs: list[subprocess.Popen[bytes]]) -> None:
    """Cancel every job, wait (bounded) until none runs, then stop the daemons (newest first)."""
    if cluster is not None and procs:
        with contextlib.suppress(Exception):
            cluster.run("scancel", "--user", "root", check=False)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(
                j["state"] in ("RUNNING", "COMPLETING", "PENDING", "CONFIGURING") for j in cluster.jobs()
            ):
                time.sleep(0.5)
    for proc in reversed(procs):
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _munge(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    folder = root / "munge"
    folder.mkdir(mode=0o700)
    key = folder / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o400)
    argv = [str(_which("munged")), "--foreground", "--force", f"--socket={folder / 'munge.socket'}", f"--key-file={key}",
            f"--pid-file={folder / 'munged.pid'}", f"--log-file={folder / 'munged.log'}",
            f"--seed-file={folder / 'munged.seed'}"]  # fmt: skip
    return _start(argv, root / "munged.out", env)


@contextlib.contextmanager
def slurm_cluster() -> Iterator[SlurmCluster]:
    """Start the cluster (or raise :class:`RuntimeError` saying why it cannot start); stop it at the end."""
    why = _why_not()
    if why:
        raise RuntimeError(why)
    root = Path(tempfile.mkdtemp(prefix="lmms_slurm_"))
    root.chmod(0o755)
    for sub in ("state", "spool"):
        (root / sub).mkdir()
    node = socket.gethostname().split(".")[0]
    conf = _write_conf(root, node)
    cluster = SlurmCluster(root, conf, node)
    env = cluster.env()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_munge(root, env))
        socket_path = root / "munge" / "munge.socket"
        deadline = time.monotonic() + 10
        while not socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        procs.append(
            _start([str(_which("slurmctld")), "-D", "-i", "-f", str(conf)], root / "slurmctld.out", env)
        )
        procs.append(_start([str(_which("slurmd")), "-D", "-f", str(conf)], root / "slurmd.out", env))
        _wait_idle(cluster, procs)
        yield cluster
    except (RuntimeError, OSError) as exc:
        logs = "".join(
            f"\n--- {p.name}:\n{p.read_text(errors='replace')[-1500:]}" for p in sorted(root.glob("*.log*"))
        )
        raise RuntimeError(f"{exc}{logs}") from None
    finally:
        _stop(cluster, procs)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    """The session's cluster, with ``SLURM_CONF`` exported while it lives; the test is skipped
    (with the reason) where SLURM cannot start here."""
    try:
        manager = slurm_cluster()
        cluster = manager.__enter__()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"no test SLURM cluster: {exc}")
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous
        manager.__exit__(None, None, None)
