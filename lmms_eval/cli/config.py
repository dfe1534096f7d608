"""``--config`` files: one run or a list of runs, an ``env:`` block and ``${VAR:-default}`` expansion.

Each run's ``env:`` applies to that run only: its values are visible when the run's other values
are expanded, and they are exported while the run executes (see :func:`temporary_env`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from lmms_eval.errors import ConfigError

# ${VAR}, ${VAR:-default} (default when unset or empty), ${VAR-default} (default when unset), $VAR
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand_vars(value: Any, where: str, environ: Mapping[str, str] | None = None) -> Any:
    """Expand ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}`` and ``$VAR`` in strings (recursively).

    An unset variable without a default is an error naming it.
    """
    env = os.environ if environ is None else environ
    if isinstance(value, dict):
        return {k: expand_vars(v, f"{where}.{k}", env) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_vars(v, where, env) for v in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(4)
        colon, default = match.group(2), match.group(3)
        current = env.get(name)
        if default is None:
            if current is None:
                raise ConfigError(
                    f"{where}: environment variable '{name}' is not set (use ${{{name}:-default}} for a default)"
                )
            return current
        if current is None or (colon and current == ""):
            return default
        return current

    return _VAR.sub(replace, value)


def _read_config_text(path: str) -> str:
    """The text of a config file; a folder, an unreadable or a non-UTF-8 file is a one-line error."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise ConfigError(f"--config: file '{path}' not found") from None
    except IsADirectoryError:
        raise ConfigError(f"--config {path}: is a folder; pass a YAML file") from None
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read it: {exc.strerror or exc}") from None
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark some editors write
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"--config {path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8"
        ) from None


def load_run_configs(path: str) -> list[dict[str, Any]]:
    """The runs of a config file (a list of mappings is a batch), each with its own ``env`` mapping."""
    text = _read_config_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path}: invalid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        raise ConfigError(
            f"--config {path}: the file has no options (it is empty or all comments); "
            "write one option per line, e.g. 'model: dummy'"
        )
    if data == []:
        raise ConfigError(f"--config {path}: the list of runs is empty; give at least one run")
    runs = data if isinstance(data, list) else [data]
    out = []
    for i, run in enumerate(runs):
        where = f"{path}" + (f"[{i}]" if isinstance(data, list) else "")
        if not isinstance(run, dict):
            raise ConfigError(f"{where}: each run must be a mapping of option names to values")
        env_block = run.pop("env", None) or {}
        if not isinstance(env_block, dict):
            raise ConfigError(f"{where}: 'env' must be a mapping of variable names to values")
        env = {str(k): str(expand_vars(v, f"{where}.env.{k}")) for k, v in env_block.items()}
        view = {**os.environ, **env}
        values = {str(k).replace("-", "_"): expand_vars(v, f"{where}.{k}", view) for k, v in run.items()}
        out.append({"env": env, **values})
    return out


@contextlib.contextmanager
def temporary_env(env: Mapping[str, str]) -> Iterator[None]:
    """Export ``env`` for the duration of a run, then restore the previous values."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
