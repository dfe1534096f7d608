"""Judge providers and :func:`get_server`.

``PROVIDERS`` maps a provider name to its class (``"module:Class"`` strings are imported on first
use, so registering a provider costs no import). ``register_provider`` adds one.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from lmms_eval.errors import ConfigError, did_you_mean
from lmms_eval.llm_judge.base import JudgeServer
from lmms_eval.llm_judge.config import ServerConfig

DEFAULT_PROVIDER = "openai"

PROVIDERS: dict[str, str | type[JudgeServer]] = {
    "openai": "lmms_eval.llm_judge.providers.openai:OpenAIJudge",
    "async_openai": "lmms_eval.llm_judge.providers.openai:AsyncOpenAIJudge",
    "dummy": "lmms_eval.llm_judge.providers.dummy:DummyJudge",
}


def register_provider(name: str, provider: str | type[JudgeServer], overwrite: bool = False) -> None:
    """Make ``provider`` (a class or ``"module:Class"``) available to :func:`get_server` as ``name``."""
    if name in PROVIDERS and not overwrite:
        raise ValueError(f"judge provider '{name}' is already registered; pass overwrite=True to replace it")
    PROVIDERS[name] = provider


def provider_class(name: str) -> type[JudgeServer]:
    """The class registered as ``name``; :class:`ConfigError` with suggestions for unknown names."""
    entry = PROVIDERS.get(name)
    if entry is None:
        raise ConfigError(
            f"unknown judge provider '{name}' (API_TYPE / server_name).{did_you_mean(name, PROVIDERS)} "
            f"Available: {', '.join(sorted(PROVIDERS))}"
        )
    if isinstance(entry, str):
        module_name, _, attr = entry.partition(":")
        entry = getattr(importlib.import_module(module_name), attr)
        if not (isinstance(entry, type) and issubclass(entry, JudgeServer)):
            raise ConfigError(f"judge provider '{name}' ({PROVIDERS[name]}) is not a JudgeServer subclass")
        PROVIDERS[name] = entry
    return entry


def get_server(
    server_name: str | None = None, config: ServerConfig | None = None, **kwargs: Any
) -> JudgeServer:
    """A judge: provider ``server_name`` (default env ``API_TYPE``, else ``openai``) with ``config``.

    ``kwargs`` go to the provider's constructor (e.g. ``client=`` for ``openai``, ``mode=`` or
    ``reply=`` for ``dummy``). No connection is made until the first judge call.
    """
    name = (server_name or os.environ.get("API_TYPE") or DEFAULT_PROVIDER).strip()
    if name not in PROVIDERS and name.lower() in PROVIDERS:
        name = name.lower()
    return provider_class(name)(config=config, **kwargs)


__all__ = ["DEFAULT_PROVIDER", "PROVIDERS", "get_server", "provider_class", "register_provider"]
