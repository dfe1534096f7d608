"""``ModelManifest`` and ``ModelRegistryV2``: one model id resolves to a chat or a simple class.

Resolution prefers the chat class unless ``force_simple`` is set and a simple class exists. Classes
are imported only when resolved (:meth:`ModelRegistryV2.get_model_class`), and validated to
subclass ``lmms`` with a matching ``is_simple``. Third-party packages contribute manifests through
the ``lmms_eval.models`` entry-point group: the entry point may be a ``ModelManifest``, an iterable
of them, or a callable returning either.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Literal

from lmms_eval.api.registry import import_path
from lmms_eval.errors import LmmsEvalError, ModelNotFoundError, did_you_mean

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "lmms_eval.models"

# "pkg.module.Class" or "pkg.module:Qual.Name" (qualnames of local classes contain "<locals>")
_CLASS_PATH_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[\w.<>]+|\.[A-Za-z_]\w*)$")


class ModelRegistrationError(LmmsEvalError, ValueError):
    """A manifest conflicts with the registry (a path or alias taken) or is malformed."""


class ModelClassError(LmmsEvalError):
    """A registered model class cannot be imported or does not fit its registration."""


@dataclass(frozen=True)
class ModelManifest:
    """Declarative registration of a model id and its chat and/or simple implementation.

    Class paths are ``"package.module.Class"`` or ``"package.module:Class"``; nothing is imported
    until the model is resolved.
    """

    model_id: str
    simple_class_path: str | None = None
    chat_class_path: str | None = None
    aliases: tuple[str, ...] = ()

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
    """A copy of a registry's tables (see :meth:`ModelRegistryV2.snapshot`)."""

    manifests: dict[str, ModelManifest]
    aliases: dict[str, str]
    classes: dict[str, type[Any]]


@dataclass
class ModelRegistryV2:
    """Manifests by canonical id, plus an alias table."""

    _manifests: dict[str, ModelManifest] = field(default_factory=dict)
    _aliases: dict[str, str] = field(default_factory=dict)
    _classes: dict[str, type[Any]] = field(default_factory=dict)

    # -- registration ------------------------------------------------------------------------------

    def register_manifest(self, manifest: ModelManifest, overwrite: bool = False) -> None:
        """Add a manifest, merging it with an existing one for the same id.

        A different class path for a kind the id already has, an alias that already names another
        model, or a model id that is already another model's alias raise
        :class:`ModelRegistrationError` unless ``overwrite`` is set; with ``overwrite`` the new
        manifest wins and the name is taken from its previous owner.
        """
        model_id = manifest.model_id
        alias_owner = self._aliases.get(model_id)
        if alias_owner is not None and alias_owner != model_id:
            if not overwrite:
                raise ModelRegistrationError(
                    f"model id '{model_id}' is already an alias of model '{alias_owner}'"
                )
            self._drop_alias(model_id)
        existing = self._manifests.get(model_id)
        if existing is not None:
            manifest = self._merge(existing, manifest, overwrite)
        for alias in manifest.aliases:
            owner = self._aliases.get(alias)
            if owner is not None and owner != model_id and not overwrite:
                raise ModelRegistrationError(
                    f"alias '{alias}' of model '{model_id}' already points to model '{owner}'"
                )
            if alias in self._manifests and not overwrite:
                raise ModelRegistrationError(f"alias '{alias}' of model '{model_id}' is already a model id")
        for alias in manifest.aliases:
            if self._aliases.get(alias, model_id) != model_id:
                self._drop_alias(alias)
            if alias in self._manifests:
                logger.warning("model '%s' is now reached as an alias of '%s'", alias, model_id)
                del self._manifests[alias]
                for orphan in [k for k, v in self._aliases.items() if v == alias]:
                    del self._aliases[orphan]
            self._aliases[alias] = model_id
        self._manifests[model_id] = manifest

    def _drop_alias(self, alias: str) -> None:
        """Remove ``alias`` from the alias table and from its owner's manifest."""
        owner = self._aliases.pop(alias, None)
        if owner is not None and owner in self._manifests:
            old = self._manifests[owner]
            self._manifests[owner] = ModelManifest(
                old.model_id,
                old.simple_class_path,
                old.chat_class_path,
                tuple(a for a in old.aliases if a != alias),
            )

    @staticmethod
    def _merge(old: ModelManifest, new: ModelManifest, overwrite: bool) -> ModelManifest:
        def pick(a: str | None, b: str | None, what: str) -> str | None:
            if a and b and a != b and not overwrite:
                raise ModelRegistrationError(
                    f"model '{old.model_id}' already has {what} '{a}' (got '{b}'); "
                    "pass overwrite=True to replace it"
                )
            return b or a

        return ModelManifest(
            model_id=old.model_id,
            simple_class_path=pick(old.simple_class_path, new.simple_class_path, "simple class"),
            chat_class_path=pick(old.chat_class_path, new.chat_class_path, "chat class"),
            aliases=tuple(dict.fromkeys(old.aliases + new.aliases)),
        )

    def register_class(self, path: str, cls: type[Any]) -> None:
        """Remember an already-imported class for ``path`` (classes defined in scripts or tests)."""
        self._classes[path] = cls

    # -- lookup -----------------------------------------------------------------------------------

    def canonical_id(self, name: str) -> str:
        """The model id ``name`` (an id or an alias) stands for; unknown names raise with suggestions."""
        if name in self._manifests:
            return name
        if name in self._aliases:
            return self._aliases[name]
        names = self.list_model_names()
        raise ModelNotFoundError(
            f"unknown model '{name}'.{did_you_mean(name, names)} Run 'lmms-eval models' to list the "
            f"{len(self._manifests)} available models."
        )

    def get_manifest(self, name: str) -> ModelManifest:
        return self._manifests[self.canonical_id(name)]

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
            cls = _import_class(resolved)
        _validate_class(resolved, cls)
        return cls

    def list_canonical_model_ids(self) -> list[str]:
        return sorted(self._manifests)

    def list_model_names(self) -> list[str]:
        """Model ids and aliases."""
        return sorted(set(self._manifests) | set(self._aliases))

    def manifests(self) -> list[ModelManifest]:
        return [self._manifests[k] for k in sorted(self._manifests)]

    def __contains__(self, name: object) -> bool:
        return name in self._manifests or name in self._aliases

    # -- state ------------------------------------------------------------------------------------

    def snapshot(self) -> RegistrySnapshot:
        """A copy of the tables, to :meth:`restore` later (tests, temporary registrations)."""
        return RegistrySnapshot(dict(self._manifests), dict(self._aliases), dict(self._classes))

    def restore(self, snapshot: RegistrySnapshot) -> None:
        """Put back the tables of :meth:`snapshot`, dropping everything registered since."""
        self._manifests = dict(snapshot.manifests)
        self._aliases = dict(snapshot.aliases)
        self._classes = dict(snapshot.classes)

    # -- plugins ----------------------------------------------------------------------------------

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> int:
        """Register manifests from installed packages (with ``overwrite``); returns how many were added.

        A plugin that fails to load is logged and skipped, so one broken package does not break
        every run.
        """
        added = 0
        for entry_point in metadata.entry_points(group=group):
            try:
                manifests = list(_manifests_from(entry_point.load()))
                for manifest in manifests:
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


def _import_class(resolved: ResolvedModel) -> Any:
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
        hint = f"pip install {missing}" if missing else "install its dependencies"
        raise ModelClassError(
            f"model '{resolved.model_id}' could not be imported from {path}: {exc}. "
            f"Is a dependency missing ({hint}, or an extra such as pip install 'lmms_eval[hf]')?"
        ) from exc
    except AttributeError as exc:
        raise ModelClassError(f"model '{resolved.model_id}': {path} does not exist ({exc})") from exc


def _validate_class(resolved: ResolvedModel, cls: Any) -> None:
    from lmms_eval.api.model import lmms

    if not isinstance(cls, type) or not issubclass(cls, lmms):
        raise ModelClassError(
            f"model '{resolved.model_id}': {resolved.class_path} is not a subclass of lmms_eval.api.model.lmms"
        )
    if bool(cls.is_simple) != resolved.is_simple:
        fix = (
            "set `is_simple = False` on the class or register it as simple_class_path"
            if cls.is_simple
            else "set `is_simple = True` on the class or register it as chat_class_path"
        )
        raise ModelClassError(
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
    return f"{cls.__module__}:{cls.__qualname__}"


def register_model_class(
    model_id: str,
    cls: type[Any],
    aliases: tuple[str, ...] = (),
    registry: ModelRegistryV2 | None = None,
) -> ModelManifest:
    """Register a class object under ``model_id`` (chat or simple from its ``is_simple``).

    The class itself is remembered, so classes defined in ``__main__``, scripts or tests resolve
    without an import. Replaces an earlier registration of the same kind (``overwrite``).
    """
    if registry is None:
        from lmms_eval.models import MODEL_REGISTRY_V2

        registry = MODEL_REGISTRY_V2
    path = class_path_of(cls)
    registry.register_class(path, cls)
    is_simple = bool(getattr(cls, "is_simple", True))
    manifest = ModelManifest(
        model_id=model_id,
        simple_class_path=path if is_simple else None,
        chat_class_path=None if is_simple else path,
        aliases=aliases,
    )
    registry.register_manifest(manifest, overwrite=True)
    return manifest
