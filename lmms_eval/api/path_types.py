"""Path kinds: what a string argument that may name a local file or folder stands for.

A backend declares every constructor argument that can name a file or folder with one of the types
below (``pretrained: ModelPath | None = None``), and so do the path options of the run settings. The
annotation is plain ``str`` to Python, pydantic and :func:`~lmms_eval.api.model.check_arg_types`;
the :class:`PathArg` in it says which kind of path it is. The eval server reads these kinds from
the signatures (:mod:`lmms_eval.entrypoints.paths`) and confines each value to the server root of
its kind, so an argument typed here is confined by construction:

================  ===========================================================  ========================
type              the value is                                                 server root
================  ===========================================================  ========================
``ModelPath``     a checkpoint folder, or a Hub id (``Qwen/Qwen2-VL-2B``)       ``checkpoint_root``
``FileOrText``    a file to read, or the text itself (a system prompt, Jinja)  ``data_root``
``DataPath``      an input file or folder (``responses=``, ``dataset_root``)   ``data_root``
``TaskPath``      a task name, or a task YAML file or folder                   ``data_root``
``OutputPath``    an earlier or a new run's outputs (``logs=``, ``baseline``)  ``output_root``
``CachePath``     a response cache folder                                      ``cache_dir``
``NotAPath``      a name never opened as a file (an API model name)            none
================  ===========================================================  ========================

:func:`looks_like_path` is the one test of whether a value written as text names a path.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin


class PathKind(str, enum.Enum):
    """What a path argument names, and so which server root holds it."""

    CHECKPOINT = "checkpoint"
    FILE_OR_TEXT = "file_or_text"
    DATA = "data"
    TASK = "task"
    OUTPUT = "output"
    CACHE = "cache"
    NAME = "name"

    @property
    def may_be_other(self) -> bool:
        """Whether a value of this kind may also be something else than a path (a Hub id, text)."""
        return self in (PathKind.CHECKPOINT, PathKind.FILE_OR_TEXT, PathKind.TASK, PathKind.NAME)


@dataclass(frozen=True)
class PathArg:
    """The marker in ``Annotated[str, PathArg(kind)]``; ``many``: a comma-separated list of them."""

    kind: PathKind
    many: bool = False


ModelPath = Annotated[str, PathArg(PathKind.CHECKPOINT)]
FileOrText = Annotated[str, PathArg(PathKind.FILE_OR_TEXT)]
DataPath = Annotated[str, PathArg(PathKind.DATA)]
DataPaths = Annotated[str, PathArg(PathKind.DATA, many=True)]
TaskPaths = Annotated[str, PathArg(PathKind.TASK, many=True)]
OutputPath = Annotated[str, PathArg(PathKind.OUTPUT)]
CachePath = Annotated[str, PathArg(PathKind.CACHE)]
NotAPath = Annotated[str, PathArg(PathKind.NAME)]

_PATH_START = ("/", "\\", "~", "./", ".\\", "../", "..\\")
_SEGMENTS = re.compile(r"[/\\]")
TASK_FILE_SUFFIXES = (".yaml", ".yml")


def looks_like_path(value: str) -> bool:
    """Whether ``value`` is written as a path whatever folder it is read from: it starts with ``/``,
    ``~``, ``./`` or ``../`` (or their ``\\`` forms), is ``.`` or ``..``, or has a ``..`` part."""
    return value.startswith(_PATH_START) or ".." in _SEGMENTS.split(value) or value == "."


def path_arg_of(annotation: Any) -> PathArg | None:
    """The :class:`PathArg` of an annotation (``ModelPath``, ``FileOrText | None``, ...), or None."""
    for marker in getattr(annotation, "__metadata__", ()):
        if isinstance(marker, PathArg):
            return marker
    for member in get_args(annotation) if get_origin(annotation) is not Annotated else ():
        found = path_arg_of(member)
        if found is not None:
            return found
    return None


__all__ = [
    "CachePath",
    "DataPath",
    "DataPaths",
    "FileOrText",
    "ModelPath",
    "NotAPath",
    "OutputPath",
    "PathArg",
    "PathKind",
    "TaskPaths",
    "looks_like_path",
    "path_arg_of",
]
