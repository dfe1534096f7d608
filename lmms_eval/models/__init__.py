"""Model registry: built-in ids, aliases, plugins and :func:`get_model`.

``AVAILABLE_SIMPLE_MODELS`` and ``AVAILABLE_CHAT_TEMPLATE_MODELS`` map a model id to a class name in
``lmms_eval.models.simple.<id>`` / ``lmms_eval.models.chat.<id>`` (a value containing a dot or a
colon is a full class path). Entries added to these dicts, or to ``MODEL_ALIASES``, at run time are
picked up by the next :func:`get_model`.

Plugins are loaded once per process, on the first lookup: manifests from the ``lmms_eval.models``
entry-point group, then the packages named in the deprecated ``LMMS_EVAL_PLUGINS`` variable
(``pkg.models.AVAILABLE_MODELS`` maps a model id to a class name in ``pkg.models.<id>``, a full
class path, or a class). :func:`isolated_registry` snapshots and restores all of this state.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from lmms_eval.api import registry as api_registry
from lmms_eval.models.registry_v2 import (
    ModelManifest,
    ModelRegistryV2,
    ResolvedModel,
    register_model_class,
)

logger = logging.getLogger(__name__)

AVAILABLE_SIMPLE_MODELS: dict[str, str] = {
    "dummy": "DummySimple",
    "from_log": "FromLog",
    "llava_hf": "LlavaHf",
    "qwen2_vl": "Qwen2_VL",
    "qwen2_5_vl": "Qwen2_5_VL",
    "qwen3_vl": "Qwen3_VL",
}

AVAILABLE_CHAT_TEMPLATE_MODELS: dict[str, str] = {
    "async_openai": "AsyncOpenAIChat",
    "dummy": "DummyChat",
    "huggingface": "Huggingface",
    "idefics3": "Idefics3",
    "internvl_hf": "InternVLHf",
    "llava_hf": "LlavaHf",
    "openai": "OpenAICompatible",
    "qwen2_vl": "Qwen2_VL",
    "qwen2_5_vl": "Qwen2_5_VL",
    "qwen3_vl": "Qwen3_VL",
    "sglang": "SGLang",
    "smolvlm": "SmolVLM",
    "vllm": "VLLM",
}

MODEL_ALIASES: dict[str, tuple[str, ...]] = {
    "async_openai": ("async_openai_compatible_chat", "async_openai_compatible"),
    "dummy": ("dummy_video_reader", "mock"),
    "from_log": ("replay",),
    "huggingface": ("hf", "transformers"),
    "llava_hf": ("llava_hf_chat",),
    "openai": ("openai_compatible", "openai_compatible_chat"),
    "qwen2_vl": ("qwen2_vl_chat",),
    "qwen2_5_vl": ("qwen2_5_vl_chat",),
    "qwen3_vl": ("qwen3_vl_chat",),
    "sglang": ("sglang_runtime",),
    "smolvlm": ("smolvlm2",),
    "vllm": ("vllm_chat",),
}

MODEL_REGISTRY_V2 = ModelRegistryV2()

# (kind, model id, class name or path) entries of the tables above already folded into the registry
_synced: set[tuple[str, str, str]] = set()
# whether entry-point and LMMS_EVAL_PLUGINS plugins were loaded (once per process)
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


def _legacy_plugin_packages() -> list[str]:
    return [p.strip() for p in os.environ.get("LMMS_EVAL_PLUGINS", "").split(",") if p.strip()]


def _load_legacy_plugins() -> None:
    """``LMMS_EVAL_PLUGINS=pkg1,pkg2``: import ``pkg.models`` and register its ``AVAILABLE_MODELS``."""
    from lmms_eval.api.registry import import_path

    for package in _legacy_plugin_packages():
        try:
            module = importlib.import_module(f"{package}.models")
        except ImportError as exc:
            logger.warning("LMMS_EVAL_PLUGINS: could not import %s.models: %s", package, exc)
            continue
        logger.warning(
            "LMMS_EVAL_PLUGINS is deprecated; expose the models of '%s' through the "
            "'lmms_eval.models' entry-point group instead",
            package,
        )
        table: Any = getattr(module, "AVAILABLE_MODELS", None) or {}
        for model_id, value in table.items():
            if isinstance(value, type):
                register_model_class(model_id, value, registry=MODEL_REGISTRY_V2)
                continue
            path = value if "." in value or ":" in value else f"{package}.models.{model_id}.{value}"
            is_simple = True
            try:  # the kind comes from the class; an import error is reported when it is resolved
                is_simple = bool(getattr(import_path(path), "is_simple", True))
            except Exception as exc:
                logger.debug("LMMS_EVAL_PLUGINS: %s does not import yet: %s", path, exc)
            MODEL_REGISTRY_V2.register_manifest(
                ModelManifest(
                    model_id,
                    simple_class_path=path if is_simple else None,
                    chat_class_path=None if is_simple else path,
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
    """Which class ``name`` would load, without importing it."""
    return ensure_registry().resolve(name, force_simple)


def get_model(model_name: str, force_simple: bool = False) -> type:
    """The model class for ``model_name`` (chat preferred over simple unless ``force_simple``)."""
    return ensure_registry().get_model_class(model_name, force_simple)


@contextlib.contextmanager
def isolated_registry(reload_plugins: bool = True) -> Iterator[ModelRegistryV2]:
    """Run a block against the global model registry and put every piece of its state back afterwards.

    Snapshots :data:`MODEL_REGISTRY_V2`, the three tables, the ``@register_model`` table
    (``lmms_eval.api.registry.MODEL_REGISTRY``) and the plugin flag; with
    ``reload_plugins`` the next lookup inside the block loads entry-point and ``LMMS_EVAL_PLUGINS``
    plugins again. Meant for tests and for tools that register models temporarily.
    """
    global _plugins_loaded
    from lmms_eval.api.registry import MODEL_REGISTRY

    snapshot = MODEL_REGISTRY_V2.snapshot()
    decorated = dict(MODEL_REGISTRY)
    tables = (dict(AVAILABLE_SIMPLE_MODELS), dict(AVAILABLE_CHAT_TEMPLATE_MODELS), dict(MODEL_ALIASES))
    synced, loaded = set(_synced), _plugins_loaded
    if reload_plugins:
        _plugins_loaded = False
    try:
        yield MODEL_REGISTRY_V2
    finally:
        MODEL_REGISTRY_V2.restore(snapshot)
        for live, saved in zip(
            (AVAILABLE_SIMPLE_MODELS, AVAILABLE_CHAT_TEMPLATE_MODELS, MODEL_ALIASES), tables
        ):
            live.clear()
            live.update(saved)  # type: ignore[arg-type]
        MODEL_REGISTRY.clear()
        MODEL_REGISTRY.update(decorated)
        _synced.clear()
        _synced.update(synced)
        _plugins_loaded = loaded


def _take_decorated(name: str, cls: type[Any], aliases: tuple[str, ...]) -> None:
    register_model_class(name, cls, aliases=aliases)


api_registry.set_model_sink(_take_decorated)  # @register_model writes into MODEL_REGISTRY_V2


__all__ = [
    "AVAILABLE_CHAT_TEMPLATE_MODELS",
    "AVAILABLE_SIMPLE_MODELS",
    "MODEL_ALIASES",
    "MODEL_REGISTRY_V2",
    "ModelManifest",
    "ModelRegistryV2",
    "ResolvedModel",
    "ensure_registry",
    "get_model",
    "isolated_registry",
    "resolve_model",
]
