"""Registries of named components (metrics, aggregations, filters) and the registration decorators.

A :class:`Registry` maps names to objects or to lazy ``"module:attr"`` / ``"module.attr"`` paths that
are imported on first use. Unknown names raise a :class:`LookupError` subclass with "did you mean".
Models are registered in :mod:`lmms_eval.models.registry_v2`; :func:`register_model` feeds that
registry so a decorated class is found by ``--model`` without a second bookkeeping step.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from lmms_eval.errors import LmmsEvalError, did_you_mean

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class RegistryLookupError(LmmsEvalError, LookupError):
    """A name is not in a registry."""


def import_path(path: str) -> Any:
    """Import ``"pkg.module:attr"`` or ``"pkg.module.attr"``."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """A thread-safe name -> object registry with lazy import paths."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T | str] = {}
        self._lock = threading.RLock()

    def register(self, name: str, obj: T | str, overwrite: bool = False) -> None:
        with self._lock:
            existing = self._items.get(name)
            if existing is not None and existing is not obj and not overwrite:
                raise ValueError(f"{self.kind} '{name}' is already registered ({existing!r})")
            self._items[name] = obj

    def get(self, name: str) -> T:
        with self._lock:
            if name not in self._items:
                raise RegistryLookupError(
                    f"unknown {self.kind} '{name}'.{did_you_mean(name, self._items)} "
                    f"Available: {', '.join(sorted(self._items))}"
                )
            item = self._items[name]
            if isinstance(item, str):
                item = import_path(item)
                self._items[name] = item
            return item  # type: ignore[return-value]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def names(self) -> list[str]:
        return sorted(self._items)


# ------------------------------------------------------------------------------------------------
# Metrics and aggregations
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSpec:
    """A registered per-document metric with its default aggregation."""

    name: str
    fn: Callable[..., Any]
    aggregation: str
    higher_is_better: bool | None
    output_types: tuple[str, ...]


METRIC_REGISTRY: Registry[MetricSpec] = Registry("metric")
AGGREGATION_REGISTRY: Registry[Callable[..., Any]] = Registry("aggregation")
FILTER_REGISTRY: Registry[Any] = Registry("filter")
TASK_REGISTRY: Registry[Any] = Registry("task class")

DEFAULT_METRIC_REGISTRY: dict[str, list[str]] = {
    "loglikelihood": ["perplexity", "acc"],
    "multiple_choice": ["acc", "acc_norm"],
    "generate_until": ["exact_match"],
    "generate_until_multi_round": ["exact_match"],
}


def register_metric(
    metric: str,
    aggregation: str = "mean",
    higher_is_better: bool | None = True,
    output_type: str | tuple[str, ...] = ("generate_until",),
) -> Callable[[F], F]:
    """Register a per-document metric function under ``metric``."""

    def decorate(fn: F) -> F:
        types = (output_type,) if isinstance(output_type, str) else tuple(output_type)
        METRIC_REGISTRY.register(
            metric, MetricSpec(metric, fn, aggregation, higher_is_better, types), overwrite=True
        )
        return fn

    return decorate


def register_aggregation(name: str) -> Callable[[F], F]:
    """Register an aggregation ``fn(items) -> float`` under ``name``."""

    def decorate(fn: F) -> F:
        AGGREGATION_REGISTRY.register(name, fn, overwrite=True)
        return fn

    return decorate


def register_filter(name: str) -> Callable[[type[T]], type[T]]:
    """Register a :class:`~lmms_eval.api.filter.Filter` subclass under ``name``."""

    def decorate(cls: type[T]) -> type[T]:
        FILTER_REGISTRY.register(name, cls, overwrite=True)
        return cls

    return decorate


def register_task(name: str) -> Callable[[type[T]], type[T]]:
    """Register a Python task class, usable from YAML with ``class: name``."""

    def decorate(cls: type[T]) -> type[T]:
        TASK_REGISTRY.register(name, cls, overwrite=True)
        return cls

    return decorate


ModelSink = Callable[[str, type[Any], tuple[str, ...]], None]
_model_sink: ModelSink | None = None
_pending_models: list[tuple[str, type[Any], tuple[str, ...]]] = []


def set_model_sink(sink: ModelSink) -> None:
    """Where :func:`register_model` puts classes: the model registry of :mod:`lmms_eval.models`, which
    installs itself on import (``api/`` does not import ``models/``). Classes decorated before that
    are handed over now."""
    global _model_sink
    _model_sink = sink
    pending, _pending_models[:] = list(_pending_models), []
    for name, cls, aliases in pending:
        sink(name, cls, aliases)


MODEL_REGISTRY: dict[str, type[Any]] = {}
"""Every name given to :func:`register_model` -> its class (kept for code written for the published package)."""


def register_model(*names: str) -> Callable[[type[T]], type[T]]:
    """Register an ``lmms`` subclass under one or more ids (the first is canonical, others aliases).

    Chat or simple is taken from the class's ``is_simple`` attribute. The class goes into the model
    registry (:mod:`lmms_eval.models.registry_v2`, through :func:`set_model_sink`), so ``--model
    <name>`` finds it once the module that defines it is imported; no second table needs editing.
    """
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError("register_model needs at least one non-empty model name")

    def decorate(cls: type[T]) -> type[T]:
        from lmms_eval.api.model import lmms

        if not (isinstance(cls, type) and issubclass(cls, lmms)):
            raise TypeError(
                f"@register_model({names[0]!r}) decorates {cls!r}, which is not a subclass of "
                "lmms_eval.api.model.lmms"
            )
        if _model_sink is not None:
            _model_sink(names[0], cls, tuple(names[1:]))
        else:  # the model registry takes them when lmms_eval.models is imported
            _pending_models.append((names[0], cls, tuple(names[1:])))
        for name in names:
            MODEL_REGISTRY[name] = cls
        return cls

    return decorate


def get_metric(name: str) -> MetricSpec:
    _ensure_builtins()
    return METRIC_REGISTRY.get(name)


def get_aggregation(name: str) -> Callable[..., Any]:
    _ensure_builtins()
    return AGGREGATION_REGISTRY.get(name)


def get_filter(name: str) -> Any:
    _ensure_builtins()
    return FILTER_REGISTRY.get(name)


def known_metrics() -> list[str]:
    """Names of the registered metrics (built-in and plugin), sorted."""
    _ensure_builtins()
    return METRIC_REGISTRY.names()


def known_aggregations() -> list[str]:
    """Names of the registered aggregations, sorted."""
    _ensure_builtins()
    return AGGREGATION_REGISTRY.names()


_builtins_loaded = False


def _ensure_builtins() -> None:
    """Import the modules that register built-in metrics and filters (once)."""
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        importlib.import_module("lmms_eval.api.metrics")
        importlib.import_module("lmms_eval.filters")
