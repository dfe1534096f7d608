"""The model registry: built-in models, aliases, plugins and :func:`get_model`.

:data:`MODEL_REGISTRY_V2` is the one store of models. Importing this package fills it from
:data:`BUILTIN_MODELS` (one manifest per model id: its chat and/or simple class, aliases and install
command) without importing any backend module. ``AVAILABLE_SIMPLE_MODELS`` and
``AVAILABLE_CHAT_TEMPLATE_MODELS`` (model id -> class name in ``lmms_eval.models.simple.<id>`` /
``lmms_eval.models.chat.<id>``, or a full class path) and ``MODEL_ALIASES`` (model id -> aliases)
are live read-only views of it; add models with ``@register_model`` or
``MODEL_REGISTRY_V2.register_manifest``, never by writing to the views.

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
from lmms_eval.api.registry import RegistryView, import_path
from lmms_eval.models.registry_v2 import (
    HOW_TO_REGISTER,
    INSTALL_API,
    INSTALL_HF,
    INSTALL_SGLANG,
    INSTALL_VLLM,
    ModelManifest,
    ModelRegistryV2,
    ResolvedModel,
    class_path,
    register_model_class,
)

logger = logging.getLogger(__name__)

PACKAGE = "lmms_eval.models"


def _builtin(
    model_id: str,
    *,
    chat: str | None = None,
    simple: str | None = None,
    aliases: tuple[str, ...] = (),
    install: str | None = None,
) -> ModelManifest:
    """A manifest whose classes are ``chat`` in ``lmms_eval/models/chat/<model_id>.py`` and ``simple``
    in ``lmms_eval/models/simple/<model_id>.py`` (or full class paths)."""
    return ModelManifest(
        model_id,
        simple_class_path=class_path(f"{PACKAGE}.simple", model_id, simple) if simple else None,
        chat_class_path=class_path(f"{PACKAGE}.chat", model_id, chat) if chat else None,
        aliases=aliases,
        install_hint=install,
    )


# The transformers families with a hook in lmms_eval/models/hf/families.py: id -> (chat, simple) class
HF_FAMILIES: dict[str, tuple[str, str]] = {
    "llava_onevision": ("LlavaOneVision", "LlavaOneVisionSimple"),
    "llava_next_video": ("LlavaNextVideo", "LlavaNextVideoSimple"),
    "video_llava": ("VideoLlava", "VideoLlavaSimple"),
    "gemma3": ("Gemma3", "Gemma3Simple"),
    "idefics2": ("Idefics2", "Idefics2Simple"),
    "llama_vision": ("LlamaVision", "LlamaVisionSimple"),
    "instructblip": ("InstructBlip", "InstructBlipSimple"),
    "paligemma": ("PaliGemma", "PaliGemmaSimple"),
    "glm4v": ("Glm4v", "Glm4vSimple"),
    "mistral3_vl": ("Mistral3VL", "Mistral3VLSimple"),
    "qwen3_5": ("Qwen3_5", "Qwen3_5Simple"),
    "phi4_multimodal": ("Phi4Multimodal", "Phi4MultimodalSimple"),
    "minicpm_v": ("MiniCPMV", "MiniCPMVSimple"),
    "fuyu": ("Fuyu", "FuyuSimple"),
    "ovis2": ("Ovis2", "Ovis2Simple"),
    "aria": ("Aria", "AriaSimple"),
}
FAMILY_ALIASES: dict[str, tuple[str, ...]] = {"ovis2": ("ovis",)}
_FAMILIES_MODULE = f"{PACKAGE}.hf.families"
# Remote-code checkpoints driven through their own chat() (lmms_eval/models/hf/remote.py)
REMOTE_CODE_FAMILIES: dict[str, tuple[str, str]] = {
    "internvl2": ("InternVLChat", "InternVLChatSimple"),
    "internvl3": ("InternVL3Chat", "InternVL3ChatSimple"),
    "internvl3_5": ("InternVL3_5Chat", "InternVL3_5ChatSimple"),
    "phi3v": ("Phi3Vision", "Phi3VisionSimple"),
}
_REMOTE_MODULE = f"{PACKAGE}.hf.remote"

BUILTIN_MODELS: tuple[ModelManifest, ...] = (
    _builtin(
        "async_openai",
        chat="AsyncOpenAIChat",
        aliases=("async_openai_compatible_chat", "async_openai_compatible"),
        install=INSTALL_API,
    ),
    _builtin("claude", chat="Claude", install="pip install 'lmms_eval[anthropic]'"),
    _builtin("dummy", chat="DummyChat", simple="DummySimple", aliases=("dummy_video_reader", "mock")),
    _builtin("from_log", simple="FromLog", aliases=("replay",)),
    _builtin("gemini", chat="Gemini", install="pip install 'lmms_eval[gemini]'"),
    _builtin("huggingface", chat="Huggingface", aliases=("hf", "transformers"), install=INSTALL_HF),
    _builtin("idefics3", chat="Idefics3", install=INSTALL_HF),
    _builtin("internvl_hf", chat="InternVLHf", install=INSTALL_HF),
    _builtin("llava_hf", chat="LlavaHf", simple="LlavaHf", aliases=("llava_hf_chat",), install=INSTALL_HF),
    _builtin(
        "openai",
        chat="OpenAICompatible",
        aliases=("openai_compatible", "openai_compatible_chat", "gpt4v"),
        install=INSTALL_API,
    ),
    _builtin("qwen2_vl", chat="Qwen2_VL", simple="Qwen2_VL", aliases=("qwen2_vl_chat",), install=INSTALL_HF),
    _builtin(
        "qwen2_5_vl", chat="Qwen2_5_VL", simple="Qwen2_5_VL", aliases=("qwen2_5_vl_chat",), install=INSTALL_HF
    ),
    _builtin(
        "qwen2_audio",
        chat="lmms_eval.models.hf.qwen2_audio.Qwen2Audio",
        simple="lmms_eval.models.hf.qwen2_audio.Qwen2AudioSimple",
        install="pip install 'lmms_eval[hf,audio]'",
    ),
    _builtin(
        "qwen2_5_omni",
        chat="lmms_eval.models.hf.qwen2_5_omni.Qwen2_5Omni",
        install="pip install 'lmms_eval[hf,audio]'",
    ),
    _builtin("qwen3_vl", chat="Qwen3_VL", simple="Qwen3_VL", aliases=("qwen3_vl_chat",), install=INSTALL_HF),
    _builtin("sglang", chat="SGLang", aliases=("sglang_runtime",), install=INSTALL_SGLANG),
    _builtin("smolvlm", chat="SmolVLM", aliases=("smolvlm2",), install=INSTALL_HF),
    _builtin("vllm", chat="VLLM", aliases=("vllm_chat",), install=INSTALL_VLLM),
    _builtin(
        "whisper", simple="lmms_eval.models.hf.whisper.Whisper", install="pip install 'lmms_eval[hf,audio]'"
    ),
    *(
        _builtin(
            model_id,
            chat=f"{_FAMILIES_MODULE}.{chat}",
            simple=f"{_FAMILIES_MODULE}.{simple}",
            aliases=FAMILY_ALIASES.get(model_id, ()),
            install=INSTALL_HF,
        )
        for model_id, (chat, simple) in HF_FAMILIES.items()
    ),
    *(
        _builtin(
            model_id, chat=f"{_REMOTE_MODULE}.{chat}", simple=f"{_REMOTE_MODULE}.{simple}", install=INSTALL_HF
        )
        for model_id, (chat, simple) in REMOTE_CODE_FAMILIES.items()
    ),
)
"""The models of this package. Add one here (its class in ``chat/<id>.py`` or ``simple/<id>.py``)."""

MODEL_REGISTRY_V2 = ModelRegistryV2()


# -- read-only views -------------------------------------------------------------------------------


def _short_name(kind: str, model_id: str, path: str) -> str:
    """The class name when ``path`` follows the package layout, else the full path."""
    module, _, name = path.replace(":", ".").rpartition(".")
    return name if module == f"{PACKAGE}.{kind}.{model_id}" else path


def _kind_table(kind: str) -> dict[str, str]:
    table = {}
    for manifest in MODEL_REGISTRY_V2.manifests():
        path = manifest.chat_class_path if kind == "chat" else manifest.simple_class_path
        if path:
            table[manifest.model_id] = _short_name(kind, manifest.model_id, path)
    return table


def _alias_table() -> dict[str, tuple[str, ...]]:
    return {m.model_id: m.aliases for m in MODEL_REGISTRY_V2.manifests() if m.aliases}


def _view(label: str, table: Any) -> RegistryView[Any]:
    return RegistryView(label, lambda: table().keys(), lambda name: table()[name], HOW_TO_REGISTER)


AVAILABLE_SIMPLE_MODELS: RegistryView[str] = _view("AVAILABLE_SIMPLE_MODELS", lambda: _kind_table("simple"))
"""Model id -> simple class (name in ``lmms_eval.models.simple.<id>``, or a full path); read-only."""
AVAILABLE_CHAT_TEMPLATE_MODELS: RegistryView[str] = _view(
    "AVAILABLE_CHAT_TEMPLATE_MODELS", lambda: _kind_table("chat")
)
"""Model id -> chat class (name in ``lmms_eval.models.chat.<id>``, or a full path); read-only."""
MODEL_ALIASES: RegistryView[tuple[str, ...]] = _view("MODEL_ALIASES", _alias_table)
"""Model id -> its aliases (ids without aliases are left out); read-only."""


# -- plugins ---------------------------------------------------------------------------------------


def _legacy_plugin_packages() -> list[str]:
    return [p.strip() for p in os.environ.get("LMMS_EVAL_PLUGINS", "").split(",") if p.strip()]


def _register_legacy_entry(package: str, model_id: str, value: Any) -> None:
    # a built-in id is replaced whole (one warning), as the published package does; others overwrite
    overwrite = not MODEL_REGISTRY_V2.is_builtin(model_id)
    if isinstance(value, type):
        register_model_class(model_id, value, registry=MODEL_REGISTRY_V2, overwrite=overwrite)
        return
    path = class_path(f"{package}.models", model_id, value)
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
        overwrite=overwrite,
    )


def _load_legacy_plugins() -> None:
    """``LMMS_EVAL_PLUGINS=pkg1,pkg2``: import ``pkg.models`` and register its ``AVAILABLE_MODELS``."""
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
            _register_legacy_entry(package, model_id, value)


# -- lookup ----------------------------------------------------------------------------------------


def ensure_registry() -> ModelRegistryV2:
    """The global registry with entry-point and legacy plugins loaded (once per process)."""
    MODEL_REGISTRY_V2.load()
    return MODEL_REGISTRY_V2


def resolve_model(name: str, force_simple: bool = False) -> ResolvedModel:
    """Which class ``name`` would load, without importing it."""
    return ensure_registry().resolve(name, force_simple)


def get_model(model_name: str, force_simple: bool = False) -> type:
    """The model class for ``model_name`` (chat preferred over simple unless ``force_simple``)."""
    return ensure_registry().get_model_class(model_name, force_simple)


@contextlib.contextmanager
def isolated_registry(reload_plugins: bool = True) -> Iterator[ModelRegistryV2]:
    """Run a block against the global model registry and put its state back afterwards.

    Snapshots :data:`MODEL_REGISTRY_V2` (manifests, aliases, classes registered as objects, and
    whether plugins were loaded); with ``reload_plugins`` the next lookup inside the block loads
    entry-point and ``LMMS_EVAL_PLUGINS`` plugins again. Meant for tests and for tools that register
    models temporarily.
    """
    with MODEL_REGISTRY_V2.isolated(reload=reload_plugins):
        yield MODEL_REGISTRY_V2


for _manifest in BUILTIN_MODELS:
    MODEL_REGISTRY_V2.register_manifest(_manifest, builtin=True)
MODEL_REGISTRY_V2.add_loader(MODEL_REGISTRY_V2.load_entry_points)
MODEL_REGISTRY_V2.add_loader(_load_legacy_plugins)
api_registry.set_model_store(MODEL_REGISTRY_V2)  # @register_model writes into MODEL_REGISTRY_V2


__all__ = [
    "AVAILABLE_CHAT_TEMPLATE_MODELS",
    "AVAILABLE_SIMPLE_MODELS",
    "BUILTIN_MODELS",
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
