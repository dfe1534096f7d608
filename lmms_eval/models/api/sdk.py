"""What backends built on a vendor SDK (``claude``, ``gemini``) share: the API key, and the SDK's
exceptions read as failed attempts of the shared retry loop (:mod:`lmms_eval.models.api.retry`).

The SDKs' errors are read by their public attributes, not their classes, so this module imports no
SDK: an HTTP error (``status_code`` on Anthropic's, ``code`` on google-genai's) goes through
:func:`~lmms_eval.models.api.retry.status_error`, the rule every API backend retries by; timeouts
and connection errors are retried; a response the SDK could not parse is retried as a malformed
response. Any other exception is a bug and is raised.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from lmms_eval.errors import ModelArgsError
from lmms_eval.models.api.retry import AttemptError, status_error
from lmms_eval.secrets import register_secret


def api_key_from(value: str | None, env_names: Sequence[str], model: str) -> str:
    """``value``, else the first of ``env_names`` that is set; every candidate is registered as a
    secret. Without one, a :class:`ModelArgsError` names the variable to set."""
    candidates = [value, *(os.environ.get(name) for name in env_names)]
    for candidate in candidates:
        register_secret(candidate)
    key = next((c for c in candidates if c), None)
    if key is None:
        raise ModelArgsError(f"model '{model}' needs an API key: set {env_names[0]} or pass api_key=...")
    return key


def _status(exc: BaseException) -> int | None:
    """The HTTP status of an SDK's API error, or ``None`` for other errors."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    code = getattr(exc, "code", None)
    if isinstance(code, int) and type(exc).__module__.startswith("google."):
        return code
    return None


def _body(exc: BaseException, response: Any) -> bytes:
    """The error body: the response's bytes when they were read, else the SDK's parsed copy."""
    try:
        content = getattr(response, "content", None)
    except Exception:  # a streamed response that was not read
        content = None
    if isinstance(content, bytes) and content:
        return content
    parsed = getattr(exc, "body", None) or getattr(exc, "details", None)
    try:
        return json.dumps(parsed).encode("utf-8") if parsed is not None else b""
    except (TypeError, ValueError):
        return str(parsed).encode("utf-8")


def _class_names(exc: BaseException) -> list[str]:
    return [cls.__name__ for cls in type(exc).__mro__]


def sdk_attempt_error(exc: Exception, timeout: float) -> AttemptError:
    """The failed attempt an SDK exception stands for (see the module docstring); re-raises
    exceptions that are not API, network or response errors."""
    status = _status(exc)
    if status is not None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        return status_error(
            status, dict(headers.items()) if headers is not None else {}, _body(exc, response)
        )
    names = _class_names(exc)
    name = names[0]
    detail = str(exc) or "no details"
    if any("Timeout" in n for n in names):
        return AttemptError(f"request timed out after {timeout:g} s ({name})", True)
    if any(n in ("APIConnectionError", "TransportError", "NetworkError", "ConnectError") for n in names):
        return AttemptError(f"connection error ({name}): {detail}", True)
    if any("Validation" in n or n == "UnknownApiResponseError" for n in names):
        return AttemptError(f"malformed response ({name}): {detail}", True)
    raise exc


__all__ = ["api_key_from", "sdk_attempt_error"]
