"""LLM-as-judge scoring.

::

    from lmms_eval.llm_judge import ServerConfig, get_server

    server = get_server("openai", ServerConfig(model_name="gpt-4o-2024-11-20"))
    result = server.evaluate_binary(question="What colour is the sky?", answer="blue",
                                    prediction="The sky appears blue", output_format="0/1")
    # {"success": True, "result": "1", "raw": "1", "cached": False, "error": None, "judge": {...}}

    results = server.evaluate_binary_batch([{"question": q, "answer": a, "prediction": p}, ...])

Providers: ``openai`` (thread pool), ``async_openai`` (asyncio) - any OpenAI-compatible endpoint -
and ``dummy`` (deterministic, offline). ``get_server()`` without a name reads env ``API_TYPE``;
``ServerConfig().model_name`` defaults to env ``MODEL_VERSION``. Replies are cached by provider,
model, prompt and sampling settings; every result carries the judge's raw reply and call record.
"""

from __future__ import annotations

from lmms_eval.llm_judge.base import JudgeServer, ProviderFailure, ProviderReply
from lmms_eval.llm_judge.cache import JudgeCache, cache_key
from lmms_eval.llm_judge.config import DEFAULT_JUDGE_MODEL, ServerConfig
from lmms_eval.llm_judge.parsing import BINARY_FORMATS, parse_binary, parse_score, parse_score_pair
from lmms_eval.llm_judge.providers import (
    JUDGE_PROVIDERS,
    PROVIDERS,
    get_server,
    provider_class,
    register_provider,
    require_judge,
)
from lmms_eval.llm_judge.providers.dummy import DummyJudge
from lmms_eval.llm_judge.providers.openai import AsyncOpenAIJudge, OpenAIJudge
from lmms_eval.llm_judge.types import JudgeResponse, JudgeResult, Request

__all__ = [
    "BINARY_FORMATS",
    "DEFAULT_JUDGE_MODEL",
    "JUDGE_PROVIDERS",
    "PROVIDERS",
    "AsyncOpenAIJudge",
    "DummyJudge",
    "JudgeCache",
    "JudgeResponse",
    "JudgeResult",
    "JudgeServer",
    "OpenAIJudge",
    "ProviderFailure",
    "ProviderReply",
    "Request",
    "ServerConfig",
    "cache_key",
    "get_server",
    "parse_binary",
    "parse_score",
    "parse_score_pair",
    "provider_class",
    "register_provider",
    "require_judge",
]
