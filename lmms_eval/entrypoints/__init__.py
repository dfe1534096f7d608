"""Evaluation as a service: the HTTP eval server (:func:`launch_server`, :class:`ServerArgs`) and its
clients (:class:`EvalClient`, :class:`AsyncEvalClient`). Imported lazily: ``import lmms_eval``
imports no FastAPI."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmms_eval.entrypoints.client import AsyncEvalClient, EvalClient
    from lmms_eval.entrypoints.server import launch_server
    from lmms_eval.entrypoints.server_args import ServerArgs

_LAZY = {
    "ServerArgs": "server_args",
    "launch_server": "server",
    "create_app": "server",
    "EvalClient": "client",
    "AsyncEvalClient": "client",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"lmms_eval.entrypoints.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'lmms_eval.entrypoints' has no attribute {name!r}")


__all__ = ["AsyncEvalClient", "EvalClient", "ServerArgs", "launch_server"]
