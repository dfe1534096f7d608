"""The launch form, derived from the run settings model, and the preview of what it submits.

:func:`run_options` lists the ``run`` options of :class:`lmms_eval.settings.EvalSettings` (name,
flag, kind, default, help, group), so the form follows the settings model. :func:`preview` turns the
form's values into the equivalent ``lmms-eval eval`` command (quoted for a POSIX shell), the
``--config`` YAML and the body of ``POST /evaluate``: one source for all three.
"""

from __future__ import annotations

import shlex
import typing
from typing import Any

import yaml

from lmms_eval.errors import ConfigError
from lmms_eval.settings import EvalSettings, cli_of, flag_name, options

FIRST = ("model", "model_args", "tasks")
SERVER_ONLY = {"num_gpus": "GPUs the job takes on the eval server (0: a CPU slot)"}


def _kind(annotation: Any) -> tuple[str, list[str] | None]:
    if annotation is bool:
        return "bool", None
    literals = [a for a in typing.get_args(annotation) if typing.get_origin(a) is typing.Literal]
    if literals:
        return "choice", [str(v) for v in typing.get_args(literals[0])]
    return "text", None


def default_text(value: Any) -> str:
    """A default as the form shows it (a list of seeds as ``0,1234,...``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join("" if v is None else str(v) for v in value)
    return str(value)


def run_options() -> list[dict[str, Any]]:
    """Every ``run`` option of the settings model, in definition order."""
    out = []
    for name, info in options("run"):
        cli = cli_of(name)
        kind, choices = _kind(info.annotation)
        default = info.get_default(call_default_factory=True)
        out.append(
            {
                "name": name,
                "flag": cli.flags[0],
                "kind": kind,
                "choices": choices,
                "default": default_text(default) if kind != "bool" else bool(default),
                "help": info.description or "",
                "group": cli.group,
            }
        )
    return out


def _typed(text: str) -> Any:
    """A form text as the value it stands for in YAML and JSON (numbers as numbers)."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _given(values: dict[str, Any]) -> dict[str, Any]:
    """The options that differ from their defaults, typed, in definition order."""
    known = {o["name"]: o for o in run_options()}
    unknown = sorted(set(values) - set(known) - set(SERVER_ONLY))
    if unknown:
        raise ConfigError(f"unknown option '{unknown[0]}'; the run options are listed at /api/options")
    given: dict[str, Any] = {}
    for name in sorted(known, key=lambda n: (n not in FIRST, FIRST.index(n) if n in FIRST else 0)):
        if name not in values:
            continue
        value, option = values[name], known[name]
        if option["kind"] == "bool":
            if bool(value) != option["default"]:
                given[name] = bool(value)
            continue
        text = "" if value is None else str(value).strip()
        if text and (name in FIRST or text != option["default"]):
            given[name] = text if name in FIRST else _typed(text)
    return given


def _command(given: dict[str, Any]) -> str:
    words = ["lmms-eval", "eval"]
    for name, value in given.items():
        if value is True:
            words.append(flag_name(name))
        elif value is not False:
            words += [flag_name(name), str(value)]
    return " ".join(shlex.quote(w) for w in words)


def preview(values: dict[str, Any]) -> dict[str, Any]:
    """``command``, ``yaml`` and ``body`` (for ``POST /evaluate``) of the form's values, and the first
    problem the settings model finds in them (``error``, or None)."""
    server = {k: _typed(str(values[k])) for k in SERVER_ONLY if str(values.get(k, "")).strip()}
    given = _given({k: v for k, v in values.items() if k not in SERVER_ONLY})
    error = None
    if not given.get("model"):
        error = "choose a model"
    elif not given.get("tasks"):
        error = "choose at least one task"
    else:
        try:
            EvalSettings.from_keywords("launch form", **given)
        except ConfigError as exc:
            error = str(exc)
    return {
        "command": _command(given),
        "yaml": yaml.safe_dump(given, sort_keys=False, allow_unicode=True) if given else "",
        "body": {**given, **server},
        "error": error,
    }
