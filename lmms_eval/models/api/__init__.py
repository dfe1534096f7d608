"""Building blocks of API-backed models and judges.

* :mod:`lmms_eval.models.api.http`: :class:`ChatCompletionClient`, the shared client of
  OpenAI-compatible chat-completions APIs (sync and asyncio, retries with jittered backoff,
  ``Retry-After`` per request, refusals, an optional gate that stops it), :class:`ChatCompletion`
  and :class:`RequestFailedError`. Needs ``httpx`` (``pip install 'lmms_eval[api]'``).
* :mod:`lmms_eval.models.api.retry`: the one retry loop of every API backend
  (:func:`~lmms_eval.models.api.retry.call_with_retries`), the rule of which statuses are retried,
  ``Retry-After`` and :class:`RetryPolicy`; no HTTP library needed.
* :mod:`lmms_eval.models.api.backend`: :class:`ApiChatModel`, the shared part of the API chat
  backends (``openai``, ``claude``, ``gemini``); :mod:`lmms_eval.models.api.sdk`: the API key and
  SDK exceptions as failed attempts, for backends built on a vendor SDK.
* :mod:`lmms_eval.models.api.concurrency`: :class:`AdaptiveConcurrency`, a fixed cap on attempts
  in flight plus a pacing rate learned from storms of HTTP 429 (see its docstring for the rule).

Importing this package imports neither httpx nor the backends; the client names below are loaded
on first access.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from lmms_eval.models.api.concurrency import AdaptiveConcurrency, ConcurrencyStats

if TYPE_CHECKING:
    from lmms_eval.models.api.http import ChatCompletion, ChatCompletionClient, RequestFailedError

_FROM_HTTP = ("ChatCompletion", "ChatCompletionClient", "RequestFailedError")


def __getattr__(name: str) -> Any:
    if name in _FROM_HTTP:
        return getattr(import_module("lmms_eval.models.api.http"), name)
    raise AttributeError(f"module 'lmms_eval.models.api' has no attribute {name!r}")


__all__ = [
    "AdaptiveConcurrency",
    "ChatCompletion",
    "ChatCompletionClient",
    "ConcurrencyStats",
    "RequestFailedError",
]
