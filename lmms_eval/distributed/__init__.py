"""Data-parallel evaluation over several processes (``torchrun``, ``accelerate launch``, SLURM ``srun``).

* :mod:`~lmms_eval.distributed.launch` reads the launch from the environment (no torch):
  :func:`launch_info` gives rank, world size, local rank and the master address;
* :mod:`~lmms_eval.distributed.group` shards each task's requests over the ranks (documents strided
  by their order), gathers the answers on rank 0, which filters, scores, aggregates and writes in
  document order (so results do not depend on the number of ranks), and fails every rank together
  when one raises, dies or hangs (:class:`RankFailed`, naming the rank);
* :func:`device_for_rank`: the device of a local model's replica on this rank.

torch is imported only when a launch has more than one process.
"""

from __future__ import annotations

from lmms_eval.distributed.group import (
    DEFAULT_TIMEOUT_S,
    TIMEOUT_ENV,
    RankFailed,
    RunGroup,
    TorchRunGroup,
    is_main_process,
    run_group,
    shard_indices,
    timeout_s,
)
from lmms_eval.distributed.launch import LaunchInfo, launch_info


def device_for_rank(requested: str | None, cuda_available: bool, info: LaunchInfo | None = None) -> str:
    """Where this rank's model replica goes.

    An explicit device with an index (``cuda:1``, ``cpu``, ``mps``) is kept. ``cuda`` or nothing
    becomes ``cuda:LOCAL_RANK`` when CUDA is available (``cuda`` in a single process), else ``cpu``
    (when nothing was asked for).
    """
    launch = info or launch_info()
    if requested and requested != "cuda":
        return requested
    if not cuda_available:
        return requested or "cpu"
    return f"cuda:{launch.local_rank}" if launch.distributed else "cuda"


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "TIMEOUT_ENV",
    "LaunchInfo",
    "RankFailed",
    "RunGroup",
    "TorchRunGroup",
    "device_for_rank",
    "is_main_process",
    "launch_info",
    "run_group",
    "shard_indices",
    "timeout_s",
]
