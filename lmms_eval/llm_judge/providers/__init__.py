"""Judge providers and :func:`get_server`.

:data:`JUDGE_PROVIDERS` is a :class:`~lmms_eval.api.registry.Registry` of provider classes; the
built-ins are lazy ``"module:Class"`` paths imported on first use, so registering a provider costs
no import. :func:`register_provider` adds one; ``PROVIDERS`` is a read-only view of the registry.
"""

from __future__ import annotations

import os
from typing import Any

from lmms_eval.api.registry import Registry, RegistryView
from lmms_eval.errors import ConfigError
from lmms_eval.llm_judge.base import JudgeServer
from lmms_eval.llm_judge.config import ServerConfig

DEFAULT_PROVIDER = "openai"


def _check_provider(name: str, obj: Any) -> None:
    if not (isinstance(obj, type) and issubclass(obj, JudgeServer)):
        raise ConfigError(f"judge provider '{name}' ({obj!r}) is not a JudgeServer subclass")


JUDGE_PROVIDERS: Registry[type[JudgeServer]] = Registry(
    "judge provider",
    "lmms_eval.llm_judge.register_provider(name, JudgeServerSubclass)",
    error_type=ConfigError,
    check=_check_provider,
)
JUDGE_PROVIDERS.register("openai", "lmms_eval.llm_judge.providers.openai:OpenAIJudge")
JUDGE_PROVIDERS.register("async_openai", "lmms_eval.llm_judge.providers.openai:AsyncOpenAIJudge")
JUDGE_PROVIDERS.register("dummy", "lmms_eval.llm_judge.providers.dummy:DummyJudge")

PROVIDERS: RegistryView[type[JudgeServer]] = JUDGE_PROVIDERS.view("PROVIDERS")
"""Provider name -> class (read-only; classes are imported when an item is read)."""


def register_provider(name: str, provider: str | type[JudgeServer], overwrite: bool = False) -> None:
    """Make ``provider`` (a class or ``"module:Class"``) available to :func:`get_server` as ``name``."""
    if isinstance(provider, type):
        _check_provider(name, provider)
    JUDGE_PROVIDERS.register(name, provider, overwrite=overwrite)


def provider_class(name: str) -> type[JudgeServer]:
    """The class registered as ``name``; :class:`ConfigError` with suggestions for unknown names."""
    return JUDGE_PROVIDERS.get(name)


def get_server(
    server_name: str | None = None, config: ServerConfig | None = None, **kwargs: Any
) -> JudgeServer:
    """A judge: provider ``server_name`` (default env ``API_TYPE``, else ``openai``) with ``config``.

    ``kwargs`` go to the provider's constructor (e.g. ``client=`` for ``openai``, ``mode=`` or
    ``reply=`` for ``dummy``). No connection is made until the first judge call.
    """
    name = (server_name or os.environ.get("API_TYPE") or DEFAULT_PROVIDER).strip()
    if name not in JUDGE_PROVIDERS and name.lower() in JUDGE_PROVIDERS:
        name = name.lower()
    return provider_class(name)(config=config, **kwargs)


def require_judge(task: str, why: str = "it has no offline rule") -> None:
    """Stop with one clear line when task ``task`` needs an LLM judge and none is configured
    (neither ``API_TYPE`` nor ``OPENAI_API_KEY`` is set)."""
    if os.environ.get("API_TYPE") or os.environ.get("OPENAI_API_KEY"):
        return
    raise ConfigError(
        f"{task} needs an LLM judge and none is configured ({why}). Set API_TYPE (openai or "
        "async_openai, with OPENAI_API_KEY and MODEL_VERSION; dummy for a dry run whose scores mean "
        "nothing), or run with --predict_only to keep the answers unscored."
    )


__all__ = [
    "DEFAULT_PROVIDER",
    "JUDGE_PROVIDERS",
    "PROVIDERS",
    "get_server",
    "provider_class",
    "register_provider",
    "require_judge",
]
