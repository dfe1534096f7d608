"""Secrets never leave the process: the one redaction function, and the secrets it knows.

:func:`redact` is applied to everything the framework writes or prints: results and samples files,
the response cache's metadata, log records (through :class:`RedactingFilter`), failure summaries
and the error line of the command line. It replaces with ``[REDACTED]``

* values of secret-looking keys in mappings (``api_key``, ``token``, ``password``, ``*_secret``, ...)
  and in ``k=v,k=v`` argument strings;
* passwords in URLs (``https://user:pw@host`` -> ``https://user:[REDACTED]@host``);
* token-shaped strings (``sk-...``, ``hf_...``, ``Bearer ...``);
* every value registered with :func:`register_secret`, wherever it appears in a string: the API key
  of a client, a password of a ``--config`` ``env:`` block, secret environment variables. This is
  what catches a server error body that echoes the key back.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

REDACTED = "[REDACTED]"
# registered values shorter than this are not replaced inside text (they would hit common words)
MIN_SECRET_LENGTH = 6

_SECRET_NAME_RE = re.compile(
    r"^(?:.*[_\-.])?(api_?key|access_?key|secret_?key|private_?key|auth_?token|token|secret|"
    r"password|passwd|credentials?)$",
    re.IGNORECASE,
)
_TOKEN_RE = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_\-]{16,})\b|(?<=Bearer )[A-Za-z0-9._\-~+/=]{8,}"
)
_ARG_RE = re.compile(
    r"((?:^|[,\s{(])[\"']?[\w.\-]*(?:api_?key|access_?key|token|secret|password|passwd)[\"']?\s*[=:]\s*)"
    r"(\"[^\"]*\"|'[^']*'|[^,\s}\)]*)",
    re.IGNORECASE,
)
_URL_PASSWORD_RE = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)([^\s@/]+)(@)")
_MARKERS = ("=", ":", "hf_", "sk-", "Bearer ")

_lock = threading.Lock()
_secrets: tuple[str, ...] = ()


def is_secret_name(name: str) -> bool:
    """Whether a key or variable name holds a secret (``OPENAI_API_KEY``, ``api_key``, ``hf_token``)."""
    return bool(_SECRET_NAME_RE.search(name))


def register_secret(value: Any) -> None:
    """Remember ``value`` so :func:`redact` hides it wherever it appears (also URL-encoded)."""
    global _secrets
    if not isinstance(value, str):
        return
    text = value.strip()
    if len(text) < MIN_SECRET_LENGTH:
        return
    forms = {text, quote(text, safe=""), quote(text)}
    with _lock:
        known = set(_secrets) | forms
        _secrets = tuple(sorted(known, key=len, reverse=True))  # longest first


def register_secrets_from(mapping: Mapping[str, Any]) -> None:
    """Register the values of the secret-looking keys of ``mapping`` (model args, env blocks)."""
    for key, value in mapping.items():
        if isinstance(key, str) and is_secret_name(key):
            register_secret(value)


def register_environment_secrets(environ: Mapping[str, str] | None = None) -> None:
    """Register the values of secret-looking environment variables (``OPENAI_API_KEY``, ``HF_TOKEN``)."""
    register_secrets_from(os.environ if environ is None else environ)


def registered_secrets() -> tuple[str, ...]:
    return _secrets


def forget_secrets() -> None:
    """Forget every registered secret (tests)."""
    global _secrets
    with _lock:
        _secrets = ()


def redact_text(text: str) -> str:
    """``text`` with every secret it contains replaced by ``[REDACTED]``."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if not any(marker in text for marker in _MARKERS):
        return text
    text = _TOKEN_RE.sub(REDACTED, text)
    text = _URL_PASSWORD_RE.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    return _ARG_RE.sub(_redact_arg, text)


def _redact_arg(match: re.Match[str]) -> str:
    value = match.group(2)
    if not value or value.strip("\"'") in ("", REDACTED, "None", "null"):
        return match.group(0)
    return match.group(1) + REDACTED


def redact(obj: Any) -> Any:
    """A copy of ``obj`` (mappings, lists, strings, nested) with every secret replaced."""
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            if isinstance(key, str) and is_secret_name(key) and value not in (None, "", False, True):
                out[key] = REDACTED
            else:
                out[key] = redact(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    return obj


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the formatted message (and exception text) of every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_text(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


__all__ = [
    "REDACTED",
    "RedactingFilter",
    "forget_secrets",
    "is_secret_name",
    "redact",
    "redact_text",
    "register_environment_secrets",
    "register_secret",
    "register_secrets_from",
    "registered_secrets",
]
