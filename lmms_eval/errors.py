"""Exception hierarchy.

Every error a user can cause derives from :class:`LmmsEvalError`. Its message is one line that names
the file, key or value at fault and what is allowed; the CLI prints it without a traceback and exits
with a non-zero status.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


def did_you_mean(name: str, candidates: Iterable[str], n: int = 3) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest candidates, or ``""``."""
    pool = sorted(set(candidates))
    close = get_close_matches(name, pool, n=n, cutoff=0.6)
    if not close:
        lowered = name.lower()
        close = [c for c in pool if lowered and (lowered in c.lower() or c.lower() in lowered)][:n]
    if not close:
        return ""
    return " Did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


class LmmsEvalError(Exception):
    """Base class for errors caused by user input or environment (printed without traceback)."""


class ConfigError(LmmsEvalError):
    """A task YAML, run config or CLI value is invalid."""


class TaskNotFoundError(LmmsEvalError):
    """A requested task, group or tag does not exist."""


class ModelNotFoundError(LmmsEvalError):
    """A requested model id is not registered."""


class ModelArgsError(LmmsEvalError):
    """``--model_args`` could not be parsed or were rejected by the model."""


class DatasetError(LmmsEvalError):
    """A dataset could not be loaded (missing files, hub unreachable, bad split)."""


class MissingDependencyError(LmmsEvalError):
    """An optional dependency is not installed."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'lmms_eval[{extra}]'"
        )
