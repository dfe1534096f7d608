"""Where this process sits in a multi-process launch, read from the environment (no torch).

Launchers and the variables read, first match wins:

* ``torchrun`` / ``python -m torch.distributed.run`` and ``accelerate launch`` (single or multi node):
  ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK`` (the node),
  ``MASTER_ADDR``, ``MASTER_PORT``;
* SLURM ``srun`` (one task per process, no torchrun): ``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS`` (else
  ``SLURM_NTASKS``), ``SLURM_LOCALID``, ``SLURM_STEP_TASKS_PER_NODE`` (else ``SLURM_TASKS_PER_NODE``),
  ``SLURM_NODEID``; the master is ``MASTER_ADDR`` or the first host of ``SLURM_STEP_NODELIST`` (else
  ``SLURM_JOB_NODELIST``), its port ``MASTER_PORT`` or one derived from ``SLURM_JOB_ID``. SLURM
  variables count only inside an ``srun`` step (``SLURM_STEP_ID`` set): a batch script that runs
  ``python -m lmms_eval`` directly is one process, whatever ``--ntasks`` the job asked for;
* nothing of the above: a single process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from lmms_eval.errors import ConfigError

DEFAULT_PORT = 29500
_BRACKET = re.compile(r"\[([^\]]*)\]")


@dataclass(frozen=True)
class LaunchInfo:
    """This process's place in the launch: global rank, local rank on its node, and the master."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    node_rank: int = 0
    master_addr: str | None = None
    master_port: int | None = None
    launcher: str = "single"  # torchrun | accelerate | slurm | env | single

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def init_method(self) -> str:
        """The ``init_method`` of ``torch.distributed.init_process_group`` for this launch."""
        if self.launcher != "slurm":
            return "env://"
        return f"tcp://{self.master_addr}:{self.master_port}"


def _int(environ: Mapping[str, str], name: str, default: int | None = None, minimum: int = 0) -> int:
    text = environ.get(name, "").strip()
    if not text:
        if default is None:
            raise ConfigError(f"distributed launch: {name} is not set (the launcher sets it)")
        return default
    if not text.isdigit() or int(text) < minimum:
        raise ConfigError(f"distributed launch: {name}={text!r} is not an integer >= {minimum}")
    return int(text)


def first_host(nodelist: str) -> str:
    """The first host of a SLURM node list (``gpu[03-05,9],cpu1`` -> ``gpu03``)."""
    depth, end = 0, len(nodelist)
    for i, char in enumerate(nodelist):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            end = i
            break
    head = nodelist[:end].strip()
    return _BRACKET.sub(lambda m: m.group(1).split(",")[0].split("-")[0], head)


def tasks_on_node(spec: str, node: int) -> int:
    """Tasks on node ``node`` from ``SLURM_TASKS_PER_NODE`` (``4(x2),3`` -> 4, 4, 3)."""
    counts: list[int] = []
    for part in spec.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if match is None:
            raise ConfigError(f"distributed launch: cannot read SLURM_TASKS_PER_NODE={spec!r}")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts[node] if node < len(counts) else counts[-1]


def _from_torch_env(environ: Mapping[str, str]) -> LaunchInfo:
    world = _int(environ, "WORLD_SIZE", minimum=1)
    rank = _int(environ, "RANK", 0 if world == 1 else None)
    local_world = _int(environ, "LOCAL_WORLD_SIZE", 0)
    local_rank = _int(environ, "LOCAL_RANK", rank % local_world if local_world else 0)
    if any(name.startswith("ACCELERATE_") for name in environ):
        launcher = "accelerate"
    elif environ.get("TORCHELASTIC_RUN_ID"):
        launcher = "torchrun"
    else:
        launcher = "env"
    port = environ.get("MASTER_PORT", "").strip()
    return LaunchInfo(
        rank=rank,
        world_size=world,
        local_rank=local_rank,
        local_world_size=local_world or 1,
        node_rank=_int(environ, "GROUP_RANK", 0),
        master_addr=environ.get("MASTER_ADDR") or None,
        master_port=int(port) if port.isdigit() else None,
        launcher=launcher,
    )


def _from_slurm(environ: Mapping[str, str]) -> LaunchInfo:
    world_name = "SLURM_STEP_NUM_TASKS" if environ.get("SLURM_STEP_NUM_TASKS") else "SLURM_NTASKS"
    world = _int(environ, world_name, 1, minimum=1)
    node = _int(environ, "SLURM_NODEID", 0)
    per_node = environ.get("SLURM_STEP_TASKS_PER_NODE") or environ.get("SLURM_TASKS_PER_NODE") or "1"
    nodes = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST") or "127.0.0.1"
    job = environ.get("SLURM_JOB_ID", "").strip()
    port_text = environ.get("MASTER_PORT", "").strip()
    if port_text.isdigit():
        port = int(port_text)
    else:  # two jobs sharing a node get different ports
        port = DEFAULT_PORT + (int(job) % 10000 if job.isdigit() else 0)
    return LaunchInfo(
        rank=_int(environ, "SLURM_PROCID"),
        world_size=world,
        local_rank=_int(environ, "SLURM_LOCALID", 0),
        local_world_size=tasks_on_node(per_node, node),
        node_rank=node,
        master_addr=environ.get("MASTER_ADDR") or first_host(nodes),
        master_port=port,
        launcher="slurm",
    )


def launch_info(environ: Mapping[str, str] | None = None) -> LaunchInfo:
    """This process's :class:`LaunchInfo` (see the module docstring); a bad variable is a ConfigError."""
    env = os.environ if environ is None else environ
    if env.get("WORLD_SIZE", "").strip():
        info = _from_torch_env(env)
    elif env.get("SLURM_PROCID", "").strip() and env.get("SLURM_STEP_ID", "").strip():
        info = _from_slurm(env)
    else:
        return LaunchInfo()
    if info.rank >= info.world_size:
        raise ConfigError(
            f"distributed launch: rank {info.rank} is not below the world size {info.world_size}"
        )
    return info


__all__ = ["DEFAULT_PORT", "LaunchInfo", "first_host", "launch_info", "tasks_on_node"]
