"""``ModelManifest`` and ``ModelRegistryV2``: one model id resolves to a chat or a simple class.

Resolution prefers the chat class unless ``force_simple`` is set and a simple class exists. Classes
are imported only when resolved, and validated to subclass ``lmms`` with a matching ``is_simple``.
Third-party packages contribute manifests through the ``lmms_eval.models`` entry-point group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Literal

from lmms_eval.api.registry import import_path
from lmms_eval.errors import LmmsEvalError, ModelNotFoundError, did_you_mean

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "lmms_eval.models"


@dataclass(frozen=True)
class ModelManifest:
    """Declarative registration of a model id and its chat and/or simple implementation."""

    model_id: str
    simple_class_path: str | None = None
    chat_class_path: str | None = None
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.model_id:
            raise ValueError("ModelManifest.model_id must not be empty")
        if not self.simple_class_path and not self.chat_class_path:
            raise ValueError(
                f"ModelManifest '{self.model_id}' needs a simple_class_path or a chat_class_path"
            )
        object.__setattr__(self, "aliases", tuple(self.aliases))


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


@dataclass
class ModelRegistryV2:
    """Manifests by canonical id, plus an alias table."""

    _manifests: dict[str, ModelManifest] = field(default_factory=dict)
    _aliases: dict[str, str] = field(default_factory=dict)
    _classes: dict[str, type[Any]] = field(default_factory=dict)

    # -- registration ------------------------------------------------------------------------------

    def register_manifest(self, manifest: ModelManifest, overwrite: bool = False) -> None:
        """Add a manifest, merging with an existing one for the same id.

        Conflicting class paths or aliases raise ``ValueError`` unless ``overwrite`` is set.
        """
        existing = self._manifests.get(manifest.model_id)
        if existing is not None:
            manifest = self._merge(existing, manifest, overwrite)
        for alias in manifest.aliases:
            owner = self._aliases.get(alias)
            if owner is not None and owner != manifest.model_id and not overwrite:
                raise ValueError(f"alias '{alias}' already points to model '{owner}'")
            if alias in self._manifests and alias != manifest.model_id and not overwrite:
                raise ValueError(f"alias '{alias}' is already a model id")
        self._manifests[manifest.model_id] = manifest
        for alias in manifest.aliases:
            self._aliases[alias] = manifest.model_id

    @staticmethod
    def _merge(old: ModelManifest, new: ModelManifest, overwrite: bool) -> ModelManifest:
        def pick(a: str | None, b: str | None, what: str) -> str | None:
            if a and b and a != b and not overwrite:
                raise ValueError(f"model '{old.model_id}' already has {what} '{a}' (got '{b}')")
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
        manifest = self.get_manifest(name)
        if force_simple and manifest.simple_class_path:
            return ResolvedModel(name, manifest.model_id, "simple", manifest.simple_class_path)
        if manifest.chat_class_path:
            return ResolvedModel(name, manifest.model_id, "chat", manifest.chat_class_path)
        assert manifest.simple_class_path is not None
        return ResolvedModel(name, manifest.model_id, "simple", manifest.simple_class_path)

    def get_model_class(self, name: str, force_simple: bool = False) -> type[Any]:
        """Import and validate the class ``name`` resolves to."""
        from lmms_eval.api.model import lmms

        resolved = self.resolve(name, force_simple)
        cls = self._classes.get(resolved.class_path)
        if cls is None:
            try:
                cls = import_path(resolved.class_path)
            except ImportError as exc:
                raise LmmsEvalError(
                    f"model '{resolved.model_id}' could not be imported from {resolved.class_path}: {exc}. "
                    "Is the extra it needs installed (e.g. pip install 'lmms_eval[hf]')?"
                ) from exc
            except AttributeError as exc:
                raise LmmsEvalError(
                    f"model '{resolved.model_id}': {resolved.class_path} does not exist ({exc})"
                ) from exc
        if not isinstance(cls, type) or not issubclass(cls, lmms):
            raise LmmsEvalError(
                f"model '{resolved.model_id}': {resolved.class_path} is not a subclass of lmms"
            )
        if bool(cls.is_simple) != resolved.is_simple:
            raise LmmsEvalError(
                f"model '{resolved.model_id}': {resolved.class_path} is registered as a {resolved.model_type} "
                f"model but has is_simple={cls.is_simple}"
            )
        return cls

    def list_canonical_model_ids(self) -> list[str]:
        return sorted(self._manifests)

    def list_model_names(self) -> list[str]:
        return sorted(set(self._manifests) | set(self._aliases))

    def manifests(self) -> list[ModelManifest]:
        return [self._manifests[k] for k in sorted(self._manifests)]

    # -- plugins ----------------------------------------------------------------------------------

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> int:
        """Register manifests from installed packages; returns how many were added."""
        added = 0
        for entry_point in metadata.entry_points(group=group):
            try:
                payload = entry_point.load()
                for manifest in _manifests_from(payload):
                    self.register_manifest(manifest, overwrite=True)
                    added += 1
            except Exception as exc:  # a broken plugin must not break the framework
                logger.warning("model plugin entry point '%s' failed to load: %s", entry_point.name, exc)
        return added


def _manifests_from(payload: Any) -> Iterable[ModelManifest]:
    if isinstance(payload, ModelManifest):
        return [payload]
    if callable(payload) and not isinstance(payload, type):
        return _manifests_from(payload())
    if isinstance(payload, Iterable) and not isinstance(payload, (str, bytes)):
        items = list(payload)
        if all(isinstance(m, ModelManifest) for m in items):
            return items
    raise TypeError(
        f"expected a ModelManifest, an iterable of them or a callable returning either, got {payload!r}"
    )


def class_path_of(cls: type[Any]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


_register_hooks: list[Callable[[str, type[Any], tuple[str, ...]], None]] = []


def register_model_class(model_id: str, cls: type[Any], aliases: tuple[str, ...] = ()) -> None:
    """Register a class object (used by ``@register_model``) in the global registry."""
    from lmms_eval.models import MODEL_REGISTRY_V2

    path = class_path_of(cls)
    MODEL_REGISTRY_V2.register_class(path, cls)
    is_simple = bool(getattr(cls, "is_simple", True))
    manifest = ModelManifest(
        model_id=model_id,
        simple_class_path=path if is_simple else None,
        chat_class_path=None if is_simple else path,
        aliases=aliases,
    )
    MODEL_REGISTRY_V2.register_manifest(manifest, overwrite=True)
