"""lmms_eval: unified, reproducible evaluation of large multimodal models.

The public API is imported lazily so that ``import lmms_eval`` stays cheap::

    import lmms_eval
    results = lmms_eval.simple_evaluate(model="dummy", tasks=["demo_qa"])
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# The package root wires the built-in components of the upper layers into the registries of api/
# (which never imports them): lazy "module:Class" paths, no filter module is imported here.
from lmms_eval import filters as _filters  # noqa: F401

__version__ = "0.1.0"

if TYPE_CHECKING:
    from lmms_eval.evaluator import evaluate, simple_evaluate
    from lmms_eval.tasks import TaskManager

_LAZY = {
    "simple_evaluate": "lmms_eval.evaluator",
    "evaluate": "lmms_eval.evaluator",
    "TaskManager": "lmms_eval.tasks",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    if name in ("tasks", "models", "api", "evaluator", "protocol"):
        return import_module(f"lmms_eval.{name}")
    raise AttributeError(f"module 'lmms_eval' has no attribute {name!r}")


__all__ = ["TaskManager", "__version__", "evaluate", "simple_evaluate"]
