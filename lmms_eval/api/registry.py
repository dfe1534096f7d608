"""One generic registry of named components, its instances for metrics, aggregations, filters and task
classes, and the registration decorators.

A :class:`Registry` maps names (and aliases) to objects or to lazy ``"module:attr"`` /
``"module.attr"`` paths that are imported on first use. It is the one kind of name table in the
package: models (:class:`lmms_eval.models.registry_v2.ModelRegistryV2` is a subclass), metrics,
aggregations, filters, task classes, judge providers (:mod:`lmms_eval.llm_judge.providers`) and the
batched forms of statistics use it. Rules shared by all of them:

* registering a name that already holds a different definition raises :class:`RegistrationError`
  (one line naming both) unless ``overwrite=True``; registering the same definition again (a module
  imported twice, a lazy path and the object it names) is not a collision;
* unknown names raise (by default :class:`RegistryLookupError`) with "did you mean" and the names;
* :meth:`Registry.view` is a live, read-only mapping; writing to it says which function registers;
* loaders (:meth:`Registry.add_loader`: the module of the built-in metrics, entry points) run once,
  before the first read or registration, so built-ins and plugins come first and a later
  registration of one of their names is a collision;
* all of it is thread-safe.

Built-in components that live above ``api/`` (filters in :mod:`lmms_eval.filters`, models in
:mod:`lmms_eval.models`) are registered by their own packages as lazy paths; ``api/`` never names
them. :func:`register_model` hands classes to the model registry through the store that
:mod:`lmms_eval.models` installs with :func:`set_model_store` on import.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, Protocol, TypeVar

from lmms_eval.errors import LmmsEvalError, did_you_mean

logger = logging.getLogger(__name__)

T = TypeVar("T")
V = TypeVar("V")
F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


class RegistryLookupError(LmmsEvalError, LookupError):
    """A name is not in a registry."""


class RegistrationError(LmmsEvalError, ValueError):
    """A name is already taken by a different definition, or a registration is malformed."""


class ReadOnlyViewError(LmmsEvalError, TypeError):
    """Something tried to write to a read-only view of a registry."""


def import_path(path: str) -> Any:
    """Import ``"pkg.module:attr"`` or ``"pkg.module.attr"`` (``attr`` may be dotted after a colon)."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def path_of(obj: object) -> str | None:
    """``"module:QualName"`` of a class or function, ``None`` for other objects."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}:{qualname}"
    return None


def describe(obj: object) -> str:
    """How an entry is named in messages: its path, else ``str(obj)``."""
    if isinstance(obj, str):
        return obj
    return path_of(obj) or str(obj)


def _definition(obj: object) -> object:
    """What makes two registrations "the same definition": the dotted path of a lazy path, class or
    function (so a module imported again, or a path and the object it names, compare equal); the
    fields of a dataclass; else the object itself."""
    if isinstance(obj, str):
        return obj.replace(":", ".")
    path = path_of(obj)
    if path is not None:
        return path.replace(":", ".")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (type(obj), tuple(_definition(getattr(obj, f.name)) for f in dataclasses.fields(obj)))
    return obj


def same_definition(a: object, b: object) -> bool:
    """Whether registering ``b`` where ``a`` is registered is a repeat rather than a collision."""
    if a is b:
        return True
    try:
        return bool(_definition(a) == _definition(b))
    except Exception:  # an object whose __eq__ refuses the comparison
        return False


class RegistryView(Mapping[str, V]):
    """A live, read-only mapping over a registry: reads see later registrations, writes raise
    :class:`ReadOnlyViewError` saying which function registers entries."""

    def __init__(
        self,
        label: str,
        names: Callable[[], Iterable[str]],
        lookup: Callable[[str], V],
        how_to_register: str,
    ) -> None:
        self._label = label
        self._names = names
        self._lookup = lookup
        self._how = how_to_register

    def __getitem__(self, key: str) -> V:
        if key not in self:
            raise KeyError(key)
        return self._lookup(key)

    def __contains__(self, key: object) -> bool:
        return key in set(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names()))

    def __len__(self) -> int:
        return len(list(self._names()))

    def __repr__(self) -> str:
        return f"<read-only view {self._label}: {', '.join(self._names())}>"

    def _refuse(self) -> NoReturn:
        raise ReadOnlyViewError(
            f"{self._label} is a read-only view of a registry; register entries with {self._how}"
        )

    def __setitem__(self, key: str, value: object) -> NoReturn:
        self._refuse()

    def __delitem__(self, key: str) -> NoReturn:
        self._refuse()

    def __ior__(self, other: object) -> NoReturn:
        self._refuse()

    def update(self, *args: object, **kwargs: object) -> NoReturn:
        self._refuse()

    def pop(self, *args: object) -> NoReturn:
        self._refuse()

    def popitem(self) -> NoReturn:
        self._refuse()

    def clear(self) -> NoReturn:
        self._refuse()

    def setdefault(self, *args: object) -> NoReturn:
        self._refuse()


@dataclass(frozen=True)
class RegistryState:
    """A copy of a registry's tables and loader state (see :meth:`Registry.snapshot`)."""

    entries: dict[str, Any]
    aliases: dict[str, str]
    pending: tuple[Callable[[], Any], ...]
    done: tuple[Callable[[], Any], ...]


class Registry(Generic[T]):
    """A thread-safe name -> object registry with aliases, lazy import paths and loaders.

    ``kind`` names the entries in messages ("filter"); ``how_to_register`` is what read-only views
    and collision errors tell the user to call; unknown names raise ``error_type``; ``check`` (if
    given) validates an object imported from a lazy path; ``entry_point_group`` adds a loader that
    registers that group's entry points (``name = "module:attr"``) as lazy paths.
    """

    registration_error: type[RegistrationError] = RegistrationError

    def __init__(
        self,
        kind: str,
        how_to_register: str = "",
        *,
        error_type: Callable[[str], Exception] = RegistryLookupError,
        check: Callable[[str, Any], None] | None = None,
        entry_point_group: str | None = None,
    ) -> None:
        self.kind = kind
        self.how_to_register = how_to_register or f"the registering function for {kind}s"
        self.entry_point_group = entry_point_group
        self._error_type = error_type
        self._check = check
        self._entries: dict[str, T | str] = {}
        self._aliases: dict[str, str] = {}
        self._pending: list[Callable[[], Any]] = []
        self._done: list[Callable[[], Any]] = []
        self._lock = threading.RLock()
        self._loaded_cond = threading.Condition(self._lock)
        self._loading: int | None = None  # the thread running a loader
        if entry_point_group:
            self.add_loader(self.load_entry_points)

    # -- writing -----------------------------------------------------------------------------------

    def register(self, name: str, obj: T | str, overwrite: bool = False, aliases: Iterable[str] = ()) -> None:
        """Register ``obj`` (or a lazy ``"module:attr"`` path) as ``name``, with ``aliases``."""
        if not isinstance(name, str) or not name:
            raise self.registration_error(f"a {self.kind} name must be a non-empty string, got {name!r}")
        aliases = tuple(a for a in dict.fromkeys(aliases) if a != name)
        self.load(wait=False)  # built-ins and plugins first, so that a collision with them is seen
        with self._lock:
            existing = self._entries.get(name)
            if existing is not None and not overwrite and not same_definition(existing, obj):
                raise self.registration_error(
                    f"{self.kind} '{name}' is already registered as {describe(existing)}; cannot also "
                    f"register {describe(obj)} under that name (pass overwrite=True to replace it)"
                )
            self._check_names(name, aliases, overwrite)
            self._put(name, obj, aliases)

    def register_alias(self, alias: str, name: str, overwrite: bool = False) -> None:
        """Make ``alias`` another name of the registered ``name``."""
        self.load(wait=False)
        with self._lock:
            canonical = self._canonical(name)
            self._check_names(canonical, (alias,), overwrite)
            self._put(canonical, self._entries[canonical], (alias,))

    def _check_names(self, name: str, aliases: tuple[str, ...], overwrite: bool) -> None:
        """Raise unless ``name`` and ``aliases`` are free (or ``overwrite``); changes nothing."""
        if overwrite:
            return
        owner = self._aliases.get(name)
        if owner is not None and owner != name:
            raise self.registration_error(
                f"{self.kind} '{name}' is already an alias of {self.kind} '{owner}' "
                "(pass overwrite=True to take the name)"
            )
        for alias in aliases:
            owner = self._aliases.get(alias)
            if owner is not None and owner != name:
                raise self.registration_error(
                    f"alias '{alias}' of {self.kind} '{name}' already points to {self.kind} '{owner}' "
                    "(pass overwrite=True to move it)"
                )
            if alias in self._entries:
                raise self.registration_error(
                    f"alias '{alias}' of {self.kind} '{name}' is already a registered {self.kind} "
                    "(pass overwrite=True to replace it)"
                )

    def _put(self, name: str, obj: T | str, aliases: tuple[str, ...]) -> None:
        """Store ``name`` -> ``obj`` and its aliases, taking the names from any previous owner."""
        self._aliases.pop(name, None)
        for alias in aliases:
            if alias in self._entries:
                logger.warning("%s '%s' is now reached as an alias of '%s'", self.kind, alias, name)
                self._remove(alias)
            if self._aliases.get(alias) != name:
                self._aliases.pop(alias, None)
                self._aliases[alias] = name
        self._entries[name] = obj

    def _remove(self, name: str) -> None:
        self._entries.pop(name, None)
        for alias in [a for a, owner in self._aliases.items() if owner == name]:
            del self._aliases[alias]

    def add_loader(self, loader: Callable[[], Any]) -> None:
        """Run ``loader()`` once, before the next read or registration (modules that register
        built-ins, plugins)."""
        with self._lock:
            self._pending.append(loader)

    @property
    def loaded(self) -> bool:
        """Whether every loader has run."""
        with self._lock:
            return not self._pending

    def load(self, wait: bool = True) -> None:
        """Run the loaders that have not run yet (every read and registration does this first).

        Loaders run outside the lock: they import modules, and a module being imported by another
        thread may be registering into this registry. A reader waits while another thread runs a
        loader; a writer (``wait=False``) does not, so the import it is part of can finish.
        """
        me = threading.get_ident()
        while True:
            with self._loaded_cond:
                while self._loading not in (None, me):
                    if not wait:
                        return
                    self._loaded_cond.wait()
                if not self._pending:
                    return
                loader = self._pending.pop(0)
                self._done.append(loader)
                outer, self._loading = self._loading, me
            try:
                loader()
            except BaseException:
                with self._lock:
                    self._done.remove(loader)
                    self._pending.insert(0, loader)
                raise
            finally:
                with self._loaded_cond:
                    self._loading = outer
                    self._loaded_cond.notify_all()

    def load_entry_points(self, group: str | None = None) -> int:
        """Register the entry points of ``group`` as lazy paths; returns how many were added.

        An entry point whose name is taken is logged and skipped, so one plugin cannot break a run.
        """
        group = group or self.entry_point_group
        if not group:
            return 0
        from importlib import metadata

        added = 0
        for entry_point in metadata.entry_points(group=group):
            try:
                self.register(entry_point.name, entry_point.value)
                added += 1
            except RegistrationError as exc:
                logger.warning("%s plugin '%s' is skipped: %s", self.kind, entry_point.name, exc)
        return added

    # -- reading ---------------------------------------------------------------------------------

    def _canonical(self, name: str) -> str:
        if name in self._entries:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise self._not_found(name)

    def _not_found(self, name: str) -> Exception:
        candidates = [*self._entries, *self._aliases]
        return self._error_type(
            f"unknown {self.kind} '{name}'.{did_you_mean(name, candidates)} "
            f"Available: {', '.join(sorted(self._entries))}"
        )

    def canonical(self, name: str) -> str:
        """The registered name ``name`` (a name or an alias) stands for; unknown names raise."""
        self.load()
        with self._lock:
            return self._canonical(name)

    def get(self, name: str) -> T:
        """The object registered as ``name`` (or an alias), imported now if it was a lazy path."""
        self.load()
        with self._lock:
            canonical = self._canonical(name)
            item = self._entries[canonical]
        if not isinstance(item, str):
            return item
        obj = self._import(canonical, item)  # outside the lock, like the loaders
        with self._lock:
            if self._entries.get(canonical) == item:  # unless it was replaced meanwhile
                self._entries[canonical] = obj
        return obj

    def _import(self, name: str, path: str) -> T:
        try:
            obj = import_path(path)
        except (ImportError, AttributeError) as exc:
            raise self._error_type(
                f"{self.kind} '{name}' is registered as {path}, which cannot be imported: {exc}"
            ) from exc
        if self._check is not None:
            self._check(name, obj)
        return obj

    def entry(self, name: str) -> T | str:
        """What ``name`` is registered as, without importing a lazy path."""
        self.load()
        with self._lock:
            return self._entries[self._canonical(name)]

    def aliases_of(self, name: str) -> tuple[str, ...]:
        """The aliases of the registered ``name``, in the order they were added."""
        self.load()
        with self._lock:
            canonical = self._canonical(name)
            return tuple(a for a, owner in self._aliases.items() if owner == canonical)

    def names(self, aliases: bool = False) -> list[str]:
        """Registered names (with ``aliases``: and their aliases), sorted."""
        self.load()
        with self._lock:
            return sorted({*self._entries, *self._aliases} if aliases else self._entries)

    def __contains__(self, name: object) -> bool:
        self.load()
        with self._lock:
            return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def view(self, label: str = "") -> RegistryView[T]:
        """A live read-only mapping name -> object (lazy paths are imported when an item is read)."""
        return RegistryView(label or f"the {self.kind} registry", self.names, self.get, self.how_to_register)

    # -- state -----------------------------------------------------------------------------------

    def snapshot(self) -> Any:
        """A copy of the tables and loader state, to :meth:`restore` later."""
        with self._lock:
            return RegistryState(
                dict(self._entries), dict(self._aliases), tuple(self._pending), tuple(self._done)
            )

    def restore(self, state: Any) -> None:
        """Put back the state of :meth:`snapshot`, dropping everything registered since."""
        with self._lock:
            self._entries = dict(state.entries)
            self._aliases = dict(state.aliases)
            self._pending = list(state.pending)
            self._done = list(state.done)

    def _rearm_loaders(self) -> None:
        with self._lock:
            self._pending = [*self._done, *self._pending]
            self._done = []

    @contextlib.contextmanager
    def isolated(self, reload: bool = True) -> Iterator[Registry[T]]:
        """Registrations inside the block are undone afterwards; with ``reload`` loaders run again."""
        state = self.snapshot()
        if reload:
            self._rearm_loaders()
        try:
            yield self
        finally:
            self.restore(state)


# ------------------------------------------------------------------------------------------------
# Metrics, aggregations, filters, task classes
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSpec:
    """A registered per-document metric with its default aggregation."""

    name: str
    fn: Callable[..., Any]
    aggregation: str
    higher_is_better: bool | None
    output_types: tuple[str, ...]

    def __str__(self) -> str:
        return describe(self.fn)


def _import_builtin_metrics() -> None:
    importlib.import_module("lmms_eval.api.metrics")  # its decorators register the built-ins


METRIC_REGISTRY: Registry[MetricSpec] = Registry("metric", "lmms_eval.api.registry.register_metric('name')")
AGGREGATION_REGISTRY: Registry[Callable[..., Any]] = Registry(
    "aggregation", "lmms_eval.api.registry.register_aggregation('name')"
)
FILTER_REGISTRY: Registry[Any] = Registry("filter", "lmms_eval.api.registry.register_filter('name')")
TASK_REGISTRY: Registry[Any] = Registry("task class", "lmms_eval.api.registry.register_task('name')")
METRIC_REGISTRY.add_loader(_import_builtin_metrics)
AGGREGATION_REGISTRY.add_loader(_import_builtin_metrics)

DEFAULT_METRIC_REGISTRY: dict[str, list[str]] = {
    "loglikelihood": ["perplexity", "acc"],
    "multiple_choice": ["acc", "acc_norm"],
    "generate_until": ["exact_match"],
    "generate_until_multi_round": ["exact_match"],
    "generate_until_agentic": ["exact_match"],
    "generate_visual_cot": ["exact_match"],
}


def register_metric(
    metric: str,
    aggregation: str = "mean",
    higher_is_better: bool | None = True,
    output_type: str | tuple[str, ...] = ("generate_until",),
    overwrite: bool = False,
) -> Callable[[F], F]:
    """Register a per-document metric function under ``metric``."""

    def decorate(fn: F) -> F:
        types = (output_type,) if isinstance(output_type, str) else tuple(output_type)
        spec = MetricSpec(metric, fn, aggregation, higher_is_better, types)
        METRIC_REGISTRY.register(metric, spec, overwrite=overwrite)
        return fn

    return decorate


def register_aggregation(name: str, overwrite: bool = False) -> Callable[[F], F]:
    """Register an aggregation ``fn(items) -> float`` under ``name``."""

    def decorate(fn: F) -> F:
        AGGREGATION_REGISTRY.register(name, fn, overwrite=overwrite)
        return fn

    return decorate


def register_filter(name: str, overwrite: bool = False) -> Callable[[C], C]:
    """Register a :class:`~lmms_eval.api.filter.Filter` subclass under ``name``."""

    def decorate(cls: C) -> C:
        FILTER_REGISTRY.register(name, cls, overwrite=overwrite)
        return cls

    return decorate


def register_task(name: str, overwrite: bool = False) -> Callable[[C], C]:
    """Register a Python task class, usable from YAML with ``class: name``."""

    def decorate(cls: C) -> C:
        TASK_REGISTRY.register(name, cls, overwrite=overwrite)
        return cls

    return decorate


def get_metric(name: str) -> MetricSpec:
    return METRIC_REGISTRY.get(name)


def get_aggregation(name: str) -> Callable[..., Any]:
    return AGGREGATION_REGISTRY.get(name)


def get_filter(name: str) -> Any:
    return FILTER_REGISTRY.get(name)


def known_metrics() -> list[str]:
    """Names of the registered metrics (built-in and plugin), sorted."""
    return METRIC_REGISTRY.names()


def known_aggregations() -> list[str]:
    """Names of the registered aggregations, sorted."""
    return AGGREGATION_REGISTRY.names()


# ------------------------------------------------------------------------------------------------
# Models: the registry lives in lmms_eval.models, which installs itself here
# ------------------------------------------------------------------------------------------------


class ModelStore(Protocol):
    """What :func:`register_model` needs from the model registry."""

    def register_class_object(
        self, model_id: str, cls: type[Any], aliases: tuple[str, ...] = (), overwrite: bool = False
    ) -> object: ...

    def classes_by_name(self) -> dict[str, type[Any]]: ...


_model_store: ModelStore | None = None
_pending_models: list[tuple[str, type[Any], tuple[str, ...], bool]] = []
_store_lock = threading.RLock()


def set_model_store(store: ModelStore) -> None:
    """Where :func:`register_model` puts classes: the model registry, which :mod:`lmms_eval.models`
    installs on import (``api/`` does not import ``models/``). Classes decorated before that are
    handed over now."""
    global _model_store
    with _store_lock:
        _model_store = store
        pending, _pending_models[:] = list(_pending_models), []
        for name, cls, aliases, overwrite in pending:
            store.register_class_object(name, cls, aliases, overwrite)


def _decorated() -> dict[str, type[Any]]:
    with _store_lock:
        if _model_store is not None:
            return _model_store.classes_by_name()
        return {n: cls for name, cls, aliases, _ in _pending_models for n in (name, *aliases)}


MODEL_REGISTRY: RegistryView[type[Any]] = RegistryView(
    "MODEL_REGISTRY",
    lambda: _decorated().keys(),
    lambda name: _decorated()[name],
    "lmms_eval.api.registry.register_model('name')",
)
"""Read-only: every name registered with a class object (``@register_model``) -> its class."""


def _check_model_class(name: str, cls: object) -> None:
    from lmms_eval.api.model import lmms

    if not (isinstance(cls, type) and issubclass(cls, lmms)):
        raise TypeError(
            f"@register_model({name!r}) decorates {cls!r}, which is not a subclass of lmms_eval.api.model.lmms"
        )


def register_model(*names: str, overwrite: bool = False) -> Callable[[C], C]:
    """Register an ``lmms`` subclass under one or more ids (the first is canonical, others aliases).

    Chat or simple is taken from the class's ``is_simple`` attribute. The class goes into the model
    registry (:data:`lmms_eval.models.MODEL_REGISTRY_V2`), so ``--model <name>`` finds it once the
    module that defines it is imported. An id that already has a different class of the same kind,
    or an alias of another model, is an error unless ``overwrite=True``.
    """
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError("register_model needs at least one non-empty model name")

    def decorate(cls: C) -> C:
        _check_model_class(names[0], cls)
        with _store_lock:
            if _model_store is not None:
                _model_store.register_class_object(names[0], cls, tuple(names[1:]), overwrite)
            else:  # the model registry takes them when lmms_eval.models is imported
                _pending_models.append((names[0], cls, tuple(names[1:]), overwrite))
        return cls

    return decorate
