"""``--config`` files: one run or a list of runs, an ``env:`` block and ``${VAR:-default}`` expansion."""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from lmms_eval.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
SECRET_KEY = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)


def expand_vars(value: Any, where: str) -> Any:
    """Expand ``${VAR}``, ``${VAR:-default}`` and ``$VAR`` in strings (recursively).

    An unset variable without a default is an error naming it.
    """
    if isinstance(value, dict):
        return {k: expand_vars(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [expand_vars(v, where) for v in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        default = match.group(2)
        if name in os.environ and (os.environ[name] or default is None):
            return os.environ[name]
        if default is not None:
            return default
        raise ConfigError(
            f"{where}: environment variable '{name}' is not set (use ${{{name}:-default}} for a default)"
        )

    return _VAR.sub(replace, value)


def load_run_configs(path: str) -> list[dict[str, Any]]:
    """The run mappings of a config file (a list of mappings is a batch of runs)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except FileNotFoundError:
        raise ConfigError(f"--config: file '{path}' not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path}: invalid YAML: {' '.join(str(exc).split())}") from None
    runs = data if isinstance(data, list) else [data]
    out = []
    for i, run in enumerate(runs):
        where = f"{path}" + (f"[{i}]" if isinstance(data, list) else "")
        if not isinstance(run, dict):
            raise ConfigError(f"{where}: each run must be a mapping of option names to values")
        env = run.pop("env", None) or {}
        if not isinstance(env, dict):
            raise ConfigError(f"{where}: 'env' must be a mapping of variable names to values")
        for name, value in env.items():
            os.environ[str(name)] = str(expand_vars(value, f"{where}.env.{name}"))
        out.append({str(k).replace("-", "_"): expand_vars(v, f"{where}.{k}") for k, v in run.items()})
    return out
