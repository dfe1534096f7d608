"""``ModelManifest`` and ``ModelRegistryV2``: one model id resolves to a chat or a simple class.

:class:`ModelRegistryV2` is the generic :class:`~lmms_eval.api.registry.Registry` with manifests as
entries: model ids are the names, aliases live in the registry's alias table. Resolution prefers
the chat class unless ``force_simple`` is set and a simple class exists. Classes are imported only
when resolved (:meth:`ModelRegistryV2.get_model_class`), and validated to subclass ``lmms`` with a
matching ``is_simple``; a class that fails to import names its manifest's install command.
Third-party packages contribute manifests through the ``lmms_eval.models`` entry-point group: the
entry point may be a ``ModelManifest``, an iterable of them, or a callable returning either.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from importlib import metadata
from typing import Any, Literal

from lmms_eval.api.registry import (
    RegistrationError,
    Registry,
    RegistryState,
    import_path,
    path_of,
    same_definition,
)
from lmms_eval.errors import LmmsEvalError, ModelNotFoundError, did_you_mean

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "lmms_eval.models"

# What a model's optional dependencies take to install; the one definition, used by the built-in
# manifests (lmms_eval.models) and by the backends' own import errors.
INSTALL_HF = "pip install 'lmms_eval[hf]'"
INSTALL_API = "pip install 'lmms_eval[api]'"
INSTALL_VLLM = "pip install vllm"
INSTALL_SGLANG = 'pip install "sglang[all]"'

HOW_TO_REGISTER = (
    "@lmms_eval.api.registry.register_model('name') or "
    "lmms_eval.models.MODEL_REGISTRY_V2.register_manifest(ModelManifest(...))"
)

# "pkg.module.Class" or "pkg.module:Qual.Name" (qualnames of local classes contain "<locals>")
_CLASS_PATH_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[\w.<>]+|\.[A-Za-z_]\w*)$")


class ModelRegistrationError(RegistrationError):
    """A manifest conflicts with the registry (a path or alias taken) or is malformed."""


class ModelClassError(LmmsEvalError):
    """A registered model class cannot be imported or does not fit its registration."""


class ModelClassTypeError(ModelClassError, TypeError):
    """A model class is not an ``lmms`` subclass or its ``is_simple`` contradicts its registration
    (a ``TypeError`` too, as the published ``validate_model_class`` raises)."""


@dataclass(frozen=True)
class ModelManifest:
    """Declarative registration of a model id and its chat and/or simple implementation.

    Class paths are ``"package.module.Class"`` or ``"package.module:Class"``; nothing is imported
    until the model is resolved. ``install_hint`` is the command that installs what the classes
    need (``pip install 'lmms_eval[hf]'``), shown when they fail to import.
    """

    model_id: str
    simple_class_path: str | None = None
    chat_class_path: str | None = None
    aliases: tuple[str, ...] = ()
    install_hint: str | None = None

    def __post_init__(self) -> None:
        if not self.model_id or not isinstance(self.model_id, str):
            raise ModelRegistrationError("ModelManifest.model_id must be a non-empty string")
        if not self.simple_class_path and not self.chat_class_path:
            raise ModelRegistrationError(
                f"ModelManifest '{self.model_id}' needs a simple_class_path or a chat_class_path"
            )
        for what, path in (
            ("simple_class_path", self.simple_class_path),
            ("chat_class_path", self.chat_class_path),
        ):
            if path is not None and not _CLASS_PATH_RE.match(path):
                raise ModelRegistrationError(
                    f"ModelManifest '{self.model_id}': {what} {path!r} is not 'package.module.Class' "
                    "or 'package.module:Class'"
                )
        aliases: Any = self.aliases
        aliases = (aliases,) if isinstance(aliases, str) else tuple(aliases)
        if not all(isinstance(a, str) and a for a in aliases):
            raise ModelRegistrationError(
                f"ModelManifest '{self.model_id}': aliases must be non-empty strings"
            )
        object.__setattr__(self, "aliases", tuple(a for a in dict.fromkeys(aliases) if a != self.model_id))


def class_path(package: str, model_id: str, value: str) -> str:
    """``value`` if it is a full class path, else ``"<package>.<model_id>.<value>"`` (a class name in
    the module named after the model id, the layout of ``lmms_eval/models/chat`` and ``simple``)."""
    return value if "." in value or ":" in value else f"{package}.{model_id}.{value}"


@dataclass(frozen=True)
class ResolvedModel:
    """The outcome of resolving a requested name."""

    requested_name: str
    model_id: str
    model_type: Literal["chat", "simple"]
    class_path: str

    @property
    def is_simple(self) -> bool:
        return self.model_type == "simple"


@dataclass(frozen=True)
class RegistrySnapshot:
    """A copy of a model registry's state (see :meth:`ModelRegistryV2.snapshot`)."""

    state: RegistryState
    classes: dict[str, type[Any]]
    builtin_ids: frozenset[str] = frozenset()


class ModelRegistryV2(Registry[ModelManifest]):
    """Manifests by canonical model id; aliases in the registry's alias table."""

    registration_error = ModelRegistrationError

    def __init__(self) -> None:
        super().__init__("model", HOW_TO_REGISTER)
        self._classes: dict[str, type[Any]] = {}  # class path -> class registered as an object
        self._builtin_ids: set[str] = set()  # models of this package (a plugin may replace them)

    # -- registration ------------------------------------------------------------------------------

    def register_manifest(
        self, manifest: ModelManifest, overwrite: bool = False, builtin: bool = False
    ) -> None:
        """Add a manifest, merging it with an existing one for the same id.

        A different class path for a kind the id already has, an alias that already names another
        model, or a model id that is already another model's alias raise
        :class:`ModelRegistrationError` unless ``overwrite`` is set; with ``overwrite`` the new
        manifest wins and the name is taken from its previous owner. Nothing is changed on error.
        ``builtin`` marks a model of this package: a later manifest (without ``overwrite``) with
        other classes for its id or one of its aliases replaces it whole, with one warning, as a
        plugin's does in the published package; with ``overwrite`` it is merged as above.
        """
        model_id = manifest.model_id
        self.load(wait=False)  # plugins first, so that a collision with them is seen
        with self._lock:
            existing = self._entries.get(model_id)
            if builtin:
                self._builtin_ids.add(model_id)
            elif not overwrite and self._replaces_builtin(manifest, existing):
                existing, overwrite = None, True
            merged = (
                self._merge(existing, manifest, overwrite)
                if isinstance(existing, ModelManifest)
                else manifest
            )
            self._check_names(model_id, manifest.aliases, overwrite)
            self._put(model_id, replace(merged, aliases=()), manifest.aliases)

    def register(
        self, name: str, obj: ModelManifest | str, overwrite: bool = False, aliases: Iterable[str] = ()
    ) -> None:
        """The generic entry point: ``obj`` must be a manifest for ``name``."""
        if not isinstance(obj, ModelManifest) or obj.model_id != name:
            raise ModelRegistrationError(f"model '{name}' must be registered with a ModelManifest for it")
        self.register_manifest(replace(obj, aliases=(*obj.aliases, *aliases)), overwrite)

    def is_builtin(self, model_id: str) -> bool:
        """Whether ``model_id`` is still this package's own model (not replaced by a plugin)."""
        return model_id in self._builtin_ids

    def _replaces_builtin(self, manifest: ModelManifest, existing: Any) -> bool:
        """Whether ``manifest`` takes a built-in id or alias with other classes (logs one warning)."""
        model_id = manifest.model_id
        owner = self._aliases.get(model_id)
        if owner in self._builtin_ids and owner != model_id:
            logger.warning(
                "model '%s' (%s) replaces the alias '%s' of the built-in model '%s'",
                model_id,
                manifest.chat_class_path or manifest.simple_class_path,
                model_id,
                owner,
            )
            return True
        if model_id not in self._builtin_ids or not isinstance(existing, ModelManifest):
            return False
        pairs = (
            (existing.simple_class_path, manifest.simple_class_path),
            (existing.chat_class_path, manifest.chat_class_path),
        )
        if all(new is None or old is None or same_definition(old, new) for old, new in pairs):
            return False
        logger.warning(
            "model '%s' is replaced by %s (the built-in model is no longer used in this process)",
            model_id,
            manifest.chat_class_path or manifest.simple_class_path,
        )
        self._builtin_ids.discard(model_id)
        return True

    @staticmethod
    def _merge(old: ModelManifest, new: ModelManifest, overwrite: bool) -> ModelManifest:
        def pick(a: str | None, b: str | None, what: str) -> str | None:
            if a and b and not overwrite and not same_definition(a, b):
                raise ModelRegistrationError(
                    f"model '{old.model_id}' already has {what} '{a}' (got '{b}'); "
                    "pass overwrite=True to replace it"
                )
            return b or a

        return ModelManifest(
            model_id=old.model_id,
            simple_class_path=pick(old.simple_class_path, new.simple_class_path, "simple class"),
            chat_class_path=pick(old.chat_class_path, new.chat_class_path, "chat class"),
            install_hint=new.install_hint or old.install_hint,
        )

    def register_class(self, path: str, cls: type[Any]) -> None:
        """Remember an already-imported class for ``path`` (classes defined in scripts or tests)."""
        with self._lock:
            self._classes[path] = cls

    def register_class_object(
        self, model_id: str, cls: type[Any], aliases: tuple[str, ...] = (), overwrite: bool = False
    ) -> ModelManifest:
        """:func:`register_model_class` into this registry (what ``@register_model`` calls)."""
        return register_model_class(model_id, cls, aliases, registry=self, overwrite=overwrite)

    # -- lookup -----------------------------------------------------------------------------------

    def _not_found(self, name: str) -> Exception:
        names = [*self._entries, *self._aliases]
        return ModelNotFoundError(
            f"unknown model '{name}'.{did_you_mean(name, names)} Run 'lmms-eval models' to list the "
            f"{len(self._entries)} available models."
        )

    def get(self, name: str) -> ModelManifest:
        """The manifest of ``name`` (an id or an alias), with the model's current aliases."""
        self.load()
        with self._lock:
            model_id = self._canonical(name)
            manifest = self._entries[model_id]
            assert isinstance(manifest, ModelManifest)
            aliases = tuple(a for a, owner in self._aliases.items() if owner == model_id)
            return replace(manifest, aliases=aliases)

    def canonical_id(self, name: str) -> str:
        """The model id ``name`` (an id or an alias) stands for; unknown names raise with suggestions."""
        return self.canonical(name)

    def get_manifest(self, name: str) -> ModelManifest:
        return self.get(name)

    def resolve(self, name: str, force_simple: bool = False) -> ResolvedModel:
        """Chat class if there is one (unless ``force_simple`` and a simple class exists); imports nothing."""
        manifest = self.get_manifest(name)
        if force_simple and manifest.simple_class_path:
            return ResolvedModel(name, manifest.model_id, "simple", manifest.simple_class_path)
        if manifest.chat_class_path:
            if force_simple:
                logger.info("model '%s' has no simple variant; using the chat class", manifest.model_id)
            return ResolvedModel(name, manifest.model_id, "chat", manifest.chat_class_path)
        assert manifest.simple_class_path is not None
        return ResolvedModel(name, manifest.model_id, "simple", manifest.simple_class_path)

    def get_model_class(self, name: str, force_simple: bool = False) -> type[Any]:
        """Import and validate the class ``name`` resolves to."""
        resolved = self.resolve(name, force_simple)
        cls = self._classes.get(resolved.class_path)
        if cls is None:
            cls = _import_class(resolved, self.get_manifest(name).install_hint)
        _validate_class(resolved, cls)
        return cls

    @staticmethod
    def _validate_model_class(cls: Any, resolved: ResolvedModel) -> None:
        """The published spelling of :func:`validate_model_class`."""
        _validate_class(resolved, cls)

    def list_canonical_model_ids(self) -> list[str]:
        return self.names()

    def list_model_names(self) -> list[str]:
        """Model ids and aliases."""
        return self.names(aliases=True)

    def manifests(self) -> list[ModelManifest]:
        return [self.get(model_id) for model_id in self.names()]

    def classes_by_name(self) -> dict[str, type[Any]]:
        """Every id and alias whose (chat-preferred) class was registered as a class object."""
        out: dict[str, type[Any]] = {}
        for manifest in self.manifests():
            path = manifest.chat_class_path or manifest.simple_class_path
            cls = self._classes.get(path or "")
            if cls is not None:
                out.update(dict.fromkeys((manifest.model_id, *manifest.aliases), cls))
        return out

    # -- state ------------------------------------------------------------------------------------

    def snapshot(self) -> RegistrySnapshot:
        """A copy of the tables, to :meth:`restore` later (tests, temporary registrations)."""
        with self._lock:
            return RegistrySnapshot(super().snapshot(), dict(self._classes), frozenset(self._builtin_ids))

    def restore(self, state: Any) -> None:
        """Put back the tables of :meth:`snapshot`, dropping everything registered since."""
        with self._lock:
            super().restore(state.state)
            self._classes = dict(state.classes)
            self._builtin_ids = set(state.builtin_ids)

    # -- plugins ----------------------------------------------------------------------------------

    def load_entry_points(self, group: str | None = None) -> int:
        """Register manifests from installed packages (with ``overwrite``); returns how many were added.

        A plugin that fails to load is logged and skipped, so one broken package does not break
        every run.
        """
        added = 0
        for entry_point in metadata.entry_points(group=group or ENTRY_POINT_GROUP):
            try:
                for manifest in _manifests_from(entry_point.load()):
                    self.register_manifest(manifest, overwrite=True)
                    added += 1
            except Exception as exc:
                logger.warning(
                    "model plugin entry point '%s' (%s) failed to load: %s",
                    entry_point.name,
                    entry_point.value,
                    exc,
                )
        return added


def _import_class(resolved: ResolvedModel, install_hint: str | None = None) -> Any:
    path = resolved.class_path
    module_name = path.partition(":")[0] if ":" in path else path.rpartition(".")[0]
    try:
        return import_path(path)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        if (
            isinstance(exc, ModuleNotFoundError)
            and missing
            and (module_name == missing or module_name.startswith(missing + "."))
        ):
            raise ModelClassError(
                f"model '{resolved.model_id}': module '{missing}' of {path} does not exist"
            ) from exc
        if install_hint:
            hint = f"Install what it needs with: {install_hint}"
        else:
            pip = f"pip install {missing}" if missing else "install its dependencies"
            hint = f"Is a dependency missing ({pip}, or an extra such as {INSTALL_HF})?"
        raise ModelClassError(
            f"model '{resolved.model_id}' could not be imported from {path}: {exc}. {hint}"
        ) from exc
    except AttributeError as exc:
        raise ModelClassError(f"model '{resolved.model_id}': {path} does not exist ({exc})") from exc


def validate_model_class(cls: Any, resolved: ResolvedModel) -> None:
    """Raise :class:`ModelClassTypeError` unless ``cls`` subclasses ``lmms`` with the ``is_simple``
    of ``resolved`` (the published name and argument order)."""
    _validate_class(resolved, cls)


def _validate_class(resolved: ResolvedModel, cls: Any) -> None:
    from lmms_eval.api.model import lmms

    if not isinstance(cls, type) or not issubclass(cls, lmms):
        raise ModelClassTypeError(
            f"model '{resolved.model_id}': {resolved.class_path} is not a subclass of lmms_eval.api.model.lmms"
        )
    if bool(cls.is_simple) != resolved.is_simple:
        fix = (
            "set `is_simple = False` on the class or register it as simple_class_path"
            if cls.is_simple
            else "set `is_simple = True` on the class or register it as chat_class_path"
        )
        raise ModelClassTypeError(
            f"model '{resolved.model_id}': {resolved.class_path} is registered as a {resolved.model_type} "
            f"model but has is_simple={cls.is_simple}; {fix}"
        )


def _manifests_from(payload: Any) -> list[ModelManifest]:
    if isinstance(payload, ModelManifest):
        return [payload]
    if callable(payload) and not isinstance(payload, type):
        return _manifests_from(payload())
    if isinstance(payload, Iterable) and not isinstance(payload, (str, bytes, dict)):
        items = list(payload)
        if all(isinstance(m, ModelManifest) for m in items):
            return items
    raise TypeError(
        f"expected a ModelManifest, an iterable of them or a callable returning either, got {payload!r}"
    )


def class_path_of(cls: type[Any]) -> str:
    """``"module:QualName"`` of a class (importable unless the class is local to a function)."""
    path = path_of(cls)
    assert path is not None
    return path


def register_model_class(
    model_id: str,
    cls: type[Any],
    aliases: tuple[str, ...] = (),
    registry: ModelRegistryV2 | None = None,
    overwrite: bool = False,
) -> ModelManifest:
    """Register a class object under ``model_id`` (chat or simple from its ``is_simple``).

    The class itself is remembered, so classes defined in ``__main__``, scripts or tests resolve
    without an import. A different class of the same kind under ``model_id`` is an error unless
    ``overwrite``; the same class (or its module imported again) is not.
    """
    if registry is None:
        from lmms_eval.models import MODEL_REGISTRY_V2

        registry = MODEL_REGISTRY_V2
    path = class_path_of(cls)
    is_simple = bool(getattr(cls, "is_simple", True))
    manifest = ModelManifest(
        model_id=model_id,
        simple_class_path=path if is_simple else None,
        chat_class_path=None if is_simple else path,
        aliases=aliases,
    )
    registry.register_class(path, cls)  # first, so that the manifest never names an unknown local class
    registry.register_manifest(manifest, overwrite=overwrite)
    return manifest
