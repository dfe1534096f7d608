"""Model registry: built-in ids, aliases, plugins and :func:`get_model`.

``AVAILABLE_SIMPLE_MODELS`` and ``AVAILABLE_CHAT_TEMPLATE_MODELS`` map a model id to a class name in
``lmms_eval.models.simple.<id>`` / ``lmms_eval.models.chat.<id>`` (a value containing a dot is a full
class path). Entries added to these dicts at run time are picked up by :func:`get_model`.
"""

from __future__ import annotations

import importlib
import logging
import os

from lmms_eval.models.registry_v2 import ModelManifest, ModelRegistryV2, ResolvedModel

logger = logging.getLogger(__name__)

AVAILABLE_SIMPLE_MODELS: dict[str, str] = {
    "dummy": "DummySimple",
    "from_log": "FromLog",
}

AVAILABLE_CHAT_TEMPLATE_MODELS: dict[str, str] = {
    "dummy": "DummyChat",
}

MODEL_ALIASES: dict[str, tuple[str, ...]] = {
    "dummy": ("dummy_video_reader", "mock"),
    "from_log": ("replay",),
}

MODEL_REGISTRY_V2 = ModelRegistryV2()

_synced: set[tuple[str, str, str]] = set()
_plugins_loaded = False


def _class_path(kind: str, model_id: str, value: str) -> str:
    return value if "." in value or ":" in value else f"lmms_eval.models.{kind}.{model_id}.{value}"


def _sync_builtin_tables() -> None:
    """Fold the legacy dicts (which users may extend at run time) into the registry."""
    for kind, table in (("simple", AVAILABLE_SIMPLE_MODELS), ("chat", AVAILABLE_CHAT_TEMPLATE_MODELS)):
        for model_id, value in table.items():
            key = (kind, model_id, value)
            if key in _synced:
                continue
            path = _class_path(kind, model_id, value)
            manifest = ModelManifest(
                model_id=model_id,
                simple_class_path=path if kind == "simple" else None,
                chat_class_path=path if kind == "chat" else None,
                aliases=MODEL_ALIASES.get(model_id, ()),
            )
            MODEL_REGISTRY_V2.register_manifest(manifest, overwrite=True)
            _synced.add(key)
    for model_id, aliases in MODEL_ALIASES.items():
        if model_id in MODEL_REGISTRY_V2.list_canonical_model_ids():
            manifest = MODEL_REGISTRY_V2.get_manifest(model_id)
            missing = tuple(a for a in aliases if a not in manifest.aliases)
            if missing:
                MODEL_REGISTRY_V2.register_manifest(
                    ModelManifest(model_id, manifest.simple_class_path, manifest.chat_class_path, missing),
                    overwrite=True,
                )


def _load_legacy_plugins() -> None:
    """``LMMS_EVAL_PLUGINS=pkg1,pkg2``: import ``pkg.models`` and register its ``AVAILABLE_MODELS``."""
    for package in filter(None, (p.strip() for p in os.environ.get("LMMS_EVAL_PLUGINS", "").split(","))):
        try:
            module = importlib.import_module(f"{package}.models")
        except ImportError as exc:
            logger.warning("LMMS_EVAL_PLUGINS: could not import %s.models: %s", package, exc)
            continue
        logger.info(
            "LMMS_EVAL_PLUGINS is deprecated; expose models through the 'lmms_eval.models' entry point"
        )
        table = getattr(module, "AVAILABLE_MODELS", {}) or {}
        for model_id, value in table.items():
            if isinstance(value, type):
                from lmms_eval.models.registry_v2 import register_model_class

                register_model_class(model_id, value)
                continue
            path = value if "." in value or ":" in value else f"{package}.models.{model_id}.{value}"
            cls_simple = True
            try:
                from lmms_eval.api.registry import import_path

                cls_simple = bool(getattr(import_path(path), "is_simple", True))
            except Exception:  # resolution reports the import error later, with context
                pass
            MODEL_REGISTRY_V2.register_manifest(
                ModelManifest(
                    model_id,
                    simple_class_path=path if cls_simple else None,
                    chat_class_path=None if cls_simple else path,
                ),
                overwrite=True,
            )


def ensure_registry() -> ModelRegistryV2:
    """The global registry with built-ins, entry-point plugins and legacy plugins loaded."""
    global _plugins_loaded
    _sync_builtin_tables()
    if not _plugins_loaded:
        _plugins_loaded = True
        MODEL_REGISTRY_V2.load_entry_points()
        _load_legacy_plugins()
    return MODEL_REGISTRY_V2


def resolve_model(name: str, force_simple: bool = False) -> ResolvedModel:
    return ensure_registry().resolve(name, force_simple)


def get_model(model_name: str, force_simple: bool = False) -> type:
    """The model class for ``model_name`` (chat preferred over simple unless ``force_simple``)."""
    return ensure_registry().get_model_class(model_name, force_simple)


__all__ = [
    "AVAILABLE_CHAT_TEMPLATE_MODELS",
    "AVAILABLE_SIMPLE_MODELS",
    "MODEL_ALIASES",
    "MODEL_REGISTRY_V2",
    "ModelManifest",
    "ModelRegistryV2",
    "ensure_registry",
    "get_model",
    "resolve_model",
]
