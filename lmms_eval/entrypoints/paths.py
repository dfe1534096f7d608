"""Where the files a request names may lie: every path in a request is confined to a server root.

Which values are paths is read from types, never from a list of names: the request fields are the
run options whose field in :class:`~lmms_eval.settings.EvalSettings` carries a
:class:`~lmms_eval.api.path_types.PathArg`, and the ``model_args`` keys are the constructor
arguments of the requested model's class (resolved through the registry) typed with a path kind
(``ModelPath``, ``FileOrText``, ``DataPath``, ``OutputPath``, ...). Each kind has one root:

| kind | fields and model arguments (built-in) | root (``ServerArgs``) |
|---|---|---|
| checkpoint | ``pretrained``, ``model`` (vllm, sglang) | ``checkpoint_root`` (an absolute path may also lie in ``output_root``, where ``/merge`` writes) |
| file or text | ``system_prompt``, ``chat_template``, ``apply_chat_template`` | ``data_root`` |
| data | ``responses`` (dummy), ``include_path`` (each folder), ``dataset_root`` | ``data_root`` |
| task | ``tasks`` entries that are YAML files or folders | ``data_root`` |
| output | ``output_path``, ``baseline``, ``logs`` (from_log: earlier runs' samples) | ``output_root`` |
| cache | ``use_cache`` | ``cache_dir`` |

One rule decides whether a value is a path: a value of the data, output and cache kinds always is;
one of the checkpoint and file-or-text kinds is when it is written as a path
(:func:`~lmms_eval.api.path_types.looks_like_path`: it starts with ``/``, ``~``, ``./`` or ``../``,
or has a ``..`` part) or names something under its root (a file, for file-or-text), except that an absolute
file-or-text value that names nothing (``/no_think``) is text; a task entry
is when it is written as a path, holds a ``/`` or ends in ``.yaml``/``.yml``. Anything else (a Hub id such as
``Qwen/Qwen2-VL-2B-Instruct``, an inline prompt, a task name) is passed on unchanged: the job runs
in an empty temporary folder, so it names no file there. A path is relative to its root, resolved
with links followed, and passed on absolute; one that resolves outside its root is refused with a
422 that names the field. Model arguments typed ``NotAPath`` (an API model name) are never paths.
A ``model_args`` key the model's signature does not declare (taken by ``**kwargs``, or the model
cannot be resolved) is treated as a checkpoint: every string in its value that is written as a path
must lie in ``checkpoint_root`` (or ``output_root``).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi import HTTPException

from lmms_eval.api.model import constructor_hints
from lmms_eval.api.path_types import TASK_FILE_SUFFIXES, PathArg, PathKind, looks_like_path, path_arg_of
from lmms_eval.entrypoints.server_args import ServerArgs
from lmms_eval.errors import LmmsEvalError
from lmms_eval.secrets import is_secret_name
from lmms_eval.settings import options, show_value
from lmms_eval.utils import parse_arg_string, path_within

UNDECLARED = PathArg(PathKind.CHECKPOINT)  # a model argument no signature declares
# where a job writes when the request names no folder (relative to the root of the field's kind)
_REQUEST_DEFAULTS = {"output_path": "{job_id}", "use_cache": "."}


def confined(root: Path, value: str | None, default: Path, field: str = "path", *also: Path) -> Path:
    """``value`` resolved under ``root`` (relative paths are relative to it); outside is a 422.

    An absolute ``value`` may also lie in one of the folders ``also``.
    """
    try:
        resolved = path_within(root, value or default)
        if resolved is None and value and Path(value).expanduser().is_absolute():
            resolved = next((r for r in (path_within(a, value) for a in also) if r is not None), None)
    except (ValueError, OSError, RuntimeError) as exc:  # a NUL byte, a name too long, a link loop
        raise HTTPException(422, f"{field}: {_shown(field, value)} is not a usable path ({exc})") from None
    if resolved is None:
        where = " or ".join(dict.fromkeys(str(folder.resolve()) for folder in (root, *also)))
        raise HTTPException(422, f"{field}: {_shown(field, value)} is outside the server's folder {where}")
    return resolved


def _shown(field: str, value: str | None) -> str:
    """The value as a message shows it (shortened), never the value of a secret-named key."""
    return (
        "the value (not shown: a secret)" if is_secret_name(field.rpartition(".")[2]) else show_value(value)
    )


def roots(args: ServerArgs, kind: PathKind) -> tuple[Path, ...]:
    """The server folder of a path kind first, then the other folders an absolute path may lie in."""
    if kind is PathKind.CHECKPOINT:
        return (args.checkpoint_path(), args.output_path())
    if kind is PathKind.OUTPUT:
        return (args.output_path(),)
    if kind is PathKind.CACHE:
        return (args.cache_path(),)
    return (args.data_path(),)


def _absolute_text(value: str) -> bool:
    """An absolute value that names nothing (``/no_think``): text, read the same way by the job, since
    an absolute path means the same file in the job's folder as here."""
    try:
        return value.startswith("/") and "\x00" not in value and not os.path.lexists(value)
    except (ValueError, OSError):
        return False


def is_path(kind: PathKind, value: str, root: Path) -> bool:
    """Whether ``value`` of ``kind`` names a file or folder (see the module docstring)."""
    if kind is PathKind.NAME:
        return False
    if kind is PathKind.FILE_OR_TEXT and _absolute_text(value):
        return False
    if not kind.may_be_other or looks_like_path(value):
        return True
    if kind is PathKind.TASK:
        return "/" in value or "\\" in value or value.endswith(TASK_FILE_SUFFIXES)
    try:  # text that happens to name a folder stays text: only files are read as prompts
        found = root / value
        return found.is_file() if kind is PathKind.FILE_OR_TEXT else found.exists()
    except (ValueError, OSError):
        return True  # not a usable name: confined() says why


def confine_value(args: ServerArgs, field: str, arg: PathArg, value: Any) -> Any:
    """``value`` with every string in it that is a path of ``arg``'s kind resolved inside its root."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()] if arg.many else [value]
        folders = roots(args, arg.kind)
        done = [
            str(confined(folders[0], p, Path("."), field, *folders[1:]))
            if is_path(arg.kind, p, folders[0])
            else p
            for p in parts
        ]
        return ",".join(done) if arg.many else done[0]
    if isinstance(value, Mapping):
        return {k: confine_value(args, field, arg, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [confine_value(args, field, arg, v) for v in value]
    return value  # numbers, flags, None


@functools.cache
def request_path_fields() -> dict[str, PathArg]:
    """The run options that name files or folders, from the settings model's field types."""
    fields: dict[str, PathArg] = {}
    for name, info in options("run"):
        arg = next((m for m in info.metadata if isinstance(m, PathArg)), None) or path_arg_of(info.annotation)
        if arg is not None:
            fields[name] = arg
    return fields


def constructor_path_args(cls: type) -> dict[str, PathArg]:
    """The path kind of each constructor argument of ``cls`` typed with one."""
    out: dict[str, PathArg] = {}
    for name, hint in constructor_hints(cls, extras=True).items():
        arg = path_arg_of(hint)
        if arg is not None:
            out[name] = arg
    return out


def model_path_args(model: Any, force_simple: bool = False) -> dict[str, PathArg | None] | None:
    """Each declared constructor argument of the model ``model`` resolves to (with its path kind, or
    None for an argument that is not a path), or None when the model cannot be resolved."""
    if not isinstance(model, str) or not model:
        return None
    from lmms_eval.models import ensure_registry

    try:
        cls = ensure_registry().get_model_class(model, force_simple)
    except (LmmsEvalError, ImportError):  # an unknown model or one that does not import: its job fails
        return None
    return declared_path_args(cls)


def declared_path_args(cls: type) -> dict[str, PathArg | None]:
    """Each constructor argument ``cls`` declares, with its path kind (None: not a path). Where the
    constructor takes ``**kwargs``, the arguments of the base classes' constructors count too (a
    subclass that passes its keywords on)."""
    out: dict[str, PathArg | None] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        kinds = constructor_path_args(klass)
        more = False
        for name, p in inspect.signature(klass.__init__).parameters.items():
            if p.kind is p.VAR_KEYWORD:
                more = True
            elif p.kind is not p.VAR_POSITIONAL and name != "self":
                out.setdefault(name, kinds.get(name))
        if not more:
            break
    return out


def _model_args(args: ServerArgs, given: Mapping[str, Any]) -> dict[str, Any] | None:
    if not given.get("model_args"):
        return None
    parsed = parse_arg_string(given["model_args"])
    declared = model_path_args(given.get("model"), bool(given.get("force_simple"))) or {}
    for key, value in parsed.items():
        arg = declared.get(key, UNDECLARED)
        if arg is not None:
            parsed[key] = confine_value(args, f"model_args.{key}", arg, value)
    return parsed


def confine_request(args: ServerArgs, job_id: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The request's keywords with every path resolved inside its root (or a 422)."""
    out = dict(given)
    for name, arg in request_path_fields().items():
        value = given.get(name)
        if value is None or value == "":
            default = _REQUEST_DEFAULTS.get(name)
            if default is None:
                continue
            value = default.format(job_id=job_id)
        if not isinstance(value, bool):  # apply_chat_template may be a flag
            out[name] = confine_value(args, name, arg, value)
    model_args = _model_args(args, given)
    if model_args is not None:
        out["model_args"] = model_args
    return out
