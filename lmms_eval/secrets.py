"""Secrets never leave the process: the one redaction function, and the secrets it knows.

:func:`redact` is applied to everything the framework writes or prints: results and samples files,
the response cache's metadata, log records (through :class:`RedactingFilter`, also on uvicorn's
loggers and server tracebacks), failure summaries and the error line of the command line. It
replaces with ``[REDACTED]``

* values of secret-named keys (:func:`is_secret_name`) in mappings and in ``k=v,k=v`` argument
  strings, whatever the value's length;
* passwords in URLs (``https://user:pw@host`` -> ``https://user:[REDACTED]@host``);
* token-shaped strings (``sk-...``, ``hf_...``, ``ghp_...``, ``AKIA...``, ``Bearer ...``);
* every value registered with :func:`register_secret`, wherever it appears in a string: the API key
  of a client, a password of a ``--config`` ``env:`` block, secret environment variables. This is
  what catches a server error body that echoes the key back. Values of ``MIN_SECRET_LENGTH``
  characters or more are found anywhere; shorter ones (3 to 5 characters) only as a whole word;
  one or two characters cannot be searched for in free text at all (they would hit every word), so
  no error message of the package quotes a value it was given next to a secret-named key.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

REDACTED = "[REDACTED]"
# registered values shorter than this are replaced in text only as whole words (they would hit
# common words), and values shorter than SHORT_SECRET_LENGTH not at all
MIN_SECRET_LENGTH = 6
SHORT_SECRET_LENGTH = 3
# values that mean "no secret" (``api_key=EMPTY`` for local OpenAI-compatible servers)
_PLACEHOLDERS = frozenset({"none", "null", "empty", "true", "false", "dummy", "redacted", REDACTED.lower()})

# A name is split into words (``OPENAI_API_KEY``, ``apiKey``, ``x-hf-token``): it is secret when
# one word contains one of _SECRET_PARTS, or its last word is one of _SECRET_LAST or ends with
# "apikey"/"token" words run together (``APIKEY``, ``hftoken``), unless its first word says the
# key or token is data (``cluster_key``, ``pad_token``; ``max_tokens`` has last word "tokens"), or
# it is the bare word "key" (``key=value`` is how messages spell any argument).
_SECRET_PARTS = ("secret", "password", "passwd", "passphrase", "credential")
_SECRET_LAST = frozenset({"key", "keys", "token", "apikey", "pwd"})
_SECRET_ENDINGS = ("apikey", "accesskey", "privatekey", "authkey", "token")
_DATA_FIRST = frozenset(
    {
        *("cluster", "sort", "group", "doc", "answer", "primary", "foreign", "cache", "index", "dedup"),
        *("pad", "eos", "bos", "unk", "sep", "cls", "mask", "image", "video", "audio", "special"),
        *("start", "end", "stop", "placeholder", "vision", "think"),
    }
)
_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_TOKEN_RE = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}"
    r"|xox[abpr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35})\b"
    r"|(?<=Bearer )[A-Za-z0-9._\-~+/=]{8,}"
)
# ``name=value`` / ``"name": value``: the value is replaced when is_secret_name(name)
_ARG_RE = re.compile(
    r"((?:^|[,\s{(])[\"']?([A-Za-z_][\w.\-]*)[\"']?\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^,\s}\)]*)"
)
_URL_PASSWORD_RE = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)([^\s@/]+)(@)")
_MARKERS = ("=", ":", "hf_", "sk-", "Bearer ", "gh", "xox", "AKIA", "AIza")

_lock = threading.Lock()
_secrets: tuple[str, ...] = ()
_short: re.Pattern[str] | None = None  # the registered values under MIN_SECRET_LENGTH, as whole words


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a key or variable name holds a secret, whatever the length of its value.

    Secret: names like ``*key``, ``*token``, ``*secret*``, ``*password*`` (any case, any separator,
    camelCase): ``api_key``, ``apikey``, ``OPENAI_API_KEY``, ``access_token``, ``hf_token``,
    ``client_secret``, ``db_password``, ``credentials``, ``token``. Not secret: data keys and
    vocabulary tokens (``cluster_key``, ``pad_token``, ``image_token``), counts and tools
    (``max_tokens``, ``tokenizer``) and the bare word ``key``.
    """
    words = [w.lower() for w in _WORD_RE.findall(name) if not w.isdigit()]  # api_key_2: api, key
    if not words:
        return False
    if any(part in word for word in words for part in _SECRET_PARTS):
        return True
    last = words[-1]
    if len(words) > 1 and words[0] in _DATA_FIRST and last in ("key", "keys", "token", "tokens"):
        return False
    if last in ("key", "keys") and len(words) == 1:
        return False  # a bare "key" is how messages and docs spell any name ("key=value")
    return last in _SECRET_LAST or last.endswith(_SECRET_ENDINGS)


def register_secret(value: Any) -> None:
    """Remember ``value`` so :func:`redact` hides it wherever it appears (also URL-encoded)."""
    global _secrets, _short
    if not isinstance(value, str):
        return
    text = value.strip()
    if len(text) < SHORT_SECRET_LENGTH or text.lower() in _PLACEHOLDERS:
        return
    forms = {text, quote(text, safe=""), quote(text)}
    with _lock:
        known = set(_secrets) | forms
        _secrets = tuple(sorted(known, key=len, reverse=True))  # longest first
        short = [re.escape(s) for s in _secrets if len(s) < MIN_SECRET_LENGTH]
        _short = re.compile(r"(?<![\w\-])(?:" + "|".join(short) + r")(?![\w\-])") if short else None


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
    global _secrets, _short
    with _lock:
        _secrets, _short = (), None


def redact_text(text: str) -> str:
    """``text`` with every secret it contains replaced by ``[REDACTED]``."""
    for secret in _secrets:
        if len(secret) >= MIN_SECRET_LENGTH and secret in text:
            text = text.replace(secret, REDACTED)
    if _short is not None:
        text = _short.sub(REDACTED, text)
    if not any(marker in text for marker in _MARKERS):
        return text
    text = _TOKEN_RE.sub(REDACTED, text)
    text = _URL_PASSWORD_RE.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    return _ARG_RE.sub(_redact_arg, text)


def _redact_arg(match: re.Match[str]) -> str:
    value = match.group(3)
    if not is_secret_name(match.group(2)) or value.strip("\"'") in ("", REDACTED, "None", "null"):
        return match.group(0)
    return match.group(1) + REDACTED


_KEY_LIKE_RE = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")


def looks_like_secret(text: str) -> bool:
    """Whether ``text`` holds a secret: a registered one, a token-shaped one (``sk-...``), or a run
    of 32+ key characters mixing upper case, lower case and digits (what generated API keys look
    like; commit hashes and model names do not). For names that outputs are filed under."""
    if redact_text(text) != text:
        return True
    return any(
        any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)
        for run in _KEY_LIKE_RE.findall(text)
    )


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


def redact_loggers(*names: str) -> None:
    """Put a :class:`RedactingFilter` on the loggers ``names`` themselves (once each), so that what
    a library logs on them (uvicorn's errors and access lines) is redacted whatever handlers a later
    logging configuration gives them."""
    for name in names:
        target = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in target.filters):
            target.addFilter(RedactingFilter())


__all__ = [
    "REDACTED",
    "RedactingFilter",
    "forget_secrets",
    "is_secret_name",
    "looks_like_secret",
    "redact",
    "redact_loggers",
    "redact_text",
    "register_environment_secrets",
    "register_secret",
    "register_secrets_from",
    "registered_secrets",
]
