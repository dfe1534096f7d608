"""Optional packages and torch's thread count for the local backends.

* :func:`import_dependency` imports an optional package or raises a one-line
  :class:`DependencyImportError` (a :class:`~lmms_eval.errors.MissingDependencyError`) saying which
  model needs it and how to install it; :func:`import_torch` and :func:`import_transformers` are
  the two the transformers backends need (``pip install 'lmms_eval[hf]'``).
* :func:`import_torch` is where our code first imports torch. The first time, unless the user chose
  a thread count (``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` set, or ``torch.set_num_threads``
  called before), it sets torch's intra-op threads to ``max(1, usable cores // local processes)``,
  never more than torch's own default: usable cores are the CPUs this process may run on
  (``os.sched_getaffinity``, else ``os.cpu_count()``), local processes are ``LOCAL_WORLD_SIZE``
  (set by torchrun / accelerate) or 1. ``LMMS_EVAL_NUM_THREADS=N`` sets ``N`` whatever else is
  set. Several processes that each start a thread per core fight over the cores, and OpenMP
  threads that spin-wait on a busy machine make small models many times slower.
* :func:`fit_threads_to_model`: a model under ``SMALL_MODEL_PARAMETERS`` (50 M) parameters gains
  nothing from intra-op threads (its matrices are too small to split), but loses many times over
  when another program holds a core: with the automatic count, it runs on one thread. The rule
  depends on the model only, never on the machine's load, so a run is repeatable.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lmms_eval.errors import ConfigError, LmmsEvalError, MissingDependencyError
from lmms_eval.models.registry_v2 import INSTALL_HF as HF_INSTALL

logger = logging.getLogger(__name__)


THREADS_ENV = "LMMS_EVAL_NUM_THREADS"
USER_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")

SMALL_MODEL_PARAMETERS = 50_000_000

_threads_configured = False
_plan: ThreadPlan | None = None


class DependencyImportError(MissingDependencyError):
    """An optional package is not importable; the message names the model and the install command."""

    def __init__(self, package: str, install: str, purpose: str, detail: str = "") -> None:
        state = f"which cannot be imported ({detail})" if detail else "which is not installed"
        LmmsEvalError.__init__(
            self, f"{purpose} needs the '{package}' package, {state}. Install it with: {install}"
        )
        self.package = package
        self.install = install


def import_dependency(module: str, install: str, purpose: str) -> Any:
    """``importlib.import_module(module)``, or :class:`DependencyImportError` naming ``install``.

    A package that is installed but fails to import (one of its own dependencies is missing or
    broken) is reported with the import error, so the message does not claim it is missing.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        top = module.split(".")[0]
        detail = "" if missing in (None, module, top) else str(exc).splitlines()[0]
        raise DependencyImportError(top, install, purpose, detail) from exc


def import_torch(model: str) -> Any:
    """torch for ``model`` (a one-line error when it is missing); sets its threads the first time."""
    global _threads_configured
    imported_before = "torch" in sys.modules
    torch = import_dependency("torch", HF_INSTALL, f"model '{model}'")
    if not _threads_configured:
        _threads_configured = True
        configure_torch_threads(torch, imported_before)
    return torch


def import_transformers(model: str) -> Any:
    """transformers for ``model`` (a one-line error when it is missing)."""
    return import_dependency("transformers", HF_INSTALL, f"model '{model}'")


# -- threads -------------------------------------------------------------------------------------------


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask), else the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def local_processes(environ: Mapping[str, str]) -> int:
    """Processes of this run on this machine: ``LOCAL_WORLD_SIZE`` (torchrun, accelerate) or 1."""
    value = environ.get("LOCAL_WORLD_SIZE", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else 1


@dataclass(frozen=True)
class ThreadPlan:
    """What to do with torch's intra-op thread count: ``threads`` to set (``None``: leave it), and why."""

    threads: int | None
    reason: str
    automatic: bool = False  # chosen by the rule, not by the user


def thread_plan(environ: Mapping[str, str], cores: int, current: int, imported_before: bool) -> ThreadPlan:
    """The rule of the module doc. ``current`` is torch's thread count now; when torch was imported
    before our code, a count other than ``cores`` (torch's default) means the user set it. The
    automatic count is never above ``current`` (torch's default leaves out hyper-threads on some
    machines)."""
    override = environ.get(THREADS_ENV, "").strip()
    if override:
        if not override.isdigit() or int(override) < 1:
            raise ConfigError(
                f"{THREADS_ENV}={override!r} is not a positive integer; set it to the number of torch "
                f"threads per process (e.g. {THREADS_ENV}=2) or unset it"
            )
        return ThreadPlan(int(override), f"{THREADS_ENV}={override}")
    chosen = [name for name in USER_THREAD_VARS if environ.get(name, "").strip()]
    if chosen:
        return ThreadPlan(None, f"{chosen[0]} is set")
    if imported_before and current != cores:
        return ThreadPlan(None, f"torch.set_num_threads({current}) was called before")
    processes = local_processes(environ)
    threads = min(max(1, current), max(1, cores // processes))
    return ThreadPlan(
        threads, f"{cores} usable cores, {processes} local process(es); {THREADS_ENV} overrides", True
    )


def configure_torch_threads(torch: Any, imported_before: bool) -> ThreadPlan:
    """Apply :func:`thread_plan` to ``torch`` (the module, or a stand-in in tests)."""
    global _plan
    current = int(torch.get_num_threads())
    plan = _plan = thread_plan(os.environ, usable_cores(), current, imported_before)
    if plan.threads is None:
        logger.debug("torch intra-op threads left at %d: %s", current, plan.reason)
    else:
        if plan.threads != current:
            torch.set_num_threads(plan.threads)
        logger.debug("torch intra-op threads: %d (%s)", plan.threads, plan.reason)
    return plan


def fit_threads_to_model(torch: Any, parameters: int) -> None:
    """One intra-op thread for a model under :data:`SMALL_MODEL_PARAMETERS`, when the count is ours."""
    if _plan is None or not _plan.automatic or parameters >= SMALL_MODEL_PARAMETERS:
        return
    if int(torch.get_num_threads()) != 1:
        torch.set_num_threads(1)
        logger.debug("torch intra-op threads: 1 (a small model: %d parameters)", parameters)


__all__ = [
    "HF_INSTALL",
    "THREADS_ENV",
    "DependencyImportError",
    "ThreadPlan",
    "configure_torch_threads",
    "fit_threads_to_model",
    "import_dependency",
    "import_torch",
    "import_transformers",
    "local_processes",
    "thread_plan",
    "usable_cores",
]
