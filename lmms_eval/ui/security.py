"""Who may use the UI and which files it may serve.

* On loopback the UI needs no token; bound beyond loopback it requires one (:func:`ui_token`, at
  least 16 characters): a browser presents it once as ``/?token=...`` and gets an HttpOnly,
  SameSite=Strict cookie, scripts send ``Authorization: Bearer ...``. The check runs in
  :class:`lmms_eval.http_guard.HttpGuard`, before routing, with the Host and cross-site rules.
* Every file the UI serves lies inside the logs folder (:func:`confine`).
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

from lmms_eval.http_guard import check_token
from lmms_eval.secrets import register_secret
from lmms_eval.utils import is_loopback_host, path_within

UI_TOKEN_ENV = "LMMS_EVAL_UI_TOKEN"
COOKIE = "lmms_eval_ui_token"


class Refused(Exception):
    """A request the UI answers with an HTTP error: ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def ui_token(host: str, given: str | None) -> tuple[str | None, bool]:
    """The UI's own token and whether it was generated here (to be shown once by the entry point).

    ``given`` or ``$LMMS_EVAL_UI_TOKEN``; none on loopback; a new random one beyond loopback. A given
    token that is blank or shorter than 16 characters is a :class:`~lmms_eval.errors.ConfigError`.
    """
    if given is not None:
        token: str | None = check_token(given, "--ui_token")
    elif UI_TOKEN_ENV in os.environ:
        token = check_token(os.environ[UI_TOKEN_ENV], f"${UI_TOKEN_ENV}")
    else:
        token = None
    generated = False
    if token is None and not is_loopback_host(host):
        token, generated = secrets.token_urlsafe(32), True
    if token:
        register_secret(token)
    return token, generated


def token_matches(expected: str, authorization: str | None, cookie: str | None) -> bool:
    """Whether a bearer header or the UI cookie carries ``expected`` (compared in constant time)."""
    header = authorization or ""
    given = header[7:] if header.lower().startswith("bearer ") else (cookie or "")
    return hmac.compare_digest(given.encode(), expected.encode())


def confine(root: Path, candidate: str | os.PathLike[str], what: str = "file") -> Path:
    """``candidate`` (relative to ``root`` unless absolute) resolved, refused unless it is a regular
    file inside ``root``: 422 for a path that is not one (a NUL byte, too long, a link loop), 403
    outside, 404 when missing or not a regular file (a folder, FIFO, device or socket)."""
    if "\x00" in os.fspath(candidate):
        raise Refused(422, f"{what} path contains a NUL byte; it is not a valid path")
    try:
        resolved = path_within(root, candidate)
    except (ValueError, OSError, RuntimeError) as exc:
        raise Refused(422, f"{what} path is not a valid path ({str(exc)[:120]})") from None
    if resolved is None:
        raise Refused(
            403, f"{what} '{candidate}' is outside the logs folder {root}; only files under it are served"
        )
    try:
        regular = stat.S_ISREG(resolved.stat().st_mode)
    except (OSError, ValueError):
        regular = False
    if not regular:
        raise Refused(
            404, f"{what} '{candidate}' not found under the logs folder {root} (regular files only)"
        )
    return resolved
