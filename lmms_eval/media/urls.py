"""``data:`` URIs and the URLs of media parts.

:func:`data_uri` and :func:`decode_data_uri` build and read RFC 2397 ``data:`` URIs;
:func:`media_url` turns a path, a URL or bytes into a URL an API accepts (``file://`` for local
paths).
"""

from __future__ import annotations

import base64
import binascii
import os
import urllib.parse
from typing import Any

from lmms_eval.errors import LmmsEvalError

REMOTE_SCHEMES = ("http://", "https://")


def data_uri(mime: str, data: bytes) -> str:
    """``data:<mime>;base64,<data>``."""
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def decode_data_uri(uri: str) -> tuple[str, bytes]:
    """The MIME type (``text/plain`` when not given) and the bytes of a ``data:`` URI."""
    header, comma, payload = uri.partition(",")
    if not header.startswith("data:") or not comma:
        raise LmmsEvalError(f"not a data URI: {uri[:60]!r}")
    params = header[len("data:") :].split(";")
    mime = params[0] or "text/plain"
    if "base64" not in params[1:]:
        return mime, urllib.parse.unquote_to_bytes(payload)
    try:
        return mime, base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise LmmsEvalError(f"data URI {uri[:60]!r}...: the base64 payload does not decode ({exc})") from None


def is_remote(url: str) -> bool:
    """Whether ``url`` is an ``http(s)://`` URL."""
    return url.startswith(REMOTE_SCHEMES)


def media_url(source: Any) -> str:
    """A URL for a medium: URLs and ``data:`` URIs as they are, local paths as absolute ``file://``
    URLs, bytes as an ``application/octet-stream`` data URI; anything else is a TypeError."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, str):
        if "://" in source or source.startswith("data:"):
            return source
        return "file://" + os.path.abspath(source)
    if isinstance(source, bytes):
        return data_uri("application/octet-stream", source)
    raise TypeError(f"cannot turn a {type(source).__name__} into a URL")


__all__ = ["data_uri", "decode_data_uri", "is_remote", "media_url"]
