"""The last line of defence of an HTTP app: no exception reaches the client or the log unredacted.

:class:`CatchAll` wraps the routes (inside the request guard). An input error that escaped a route
(:class:`~lmms_eval.errors.ConfigError` and the other user-input errors) is a 422 with its one
line, redacted. Anything else is a bug: its traceback is logged once, redacted (whatever handlers
the logging configuration has), and the client gets a 500 with one generic line, never the
exception's text. The exception is not raised further, so the ASGI server does not log it again.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from fastapi.responses import JSONResponse

from lmms_eval.errors import ConfigError, ModelArgsError, ModelNotFoundError, TaskNotFoundError
from lmms_eval.secrets import redact_text

logger = logging.getLogger(__name__)

INPUT_ERRORS = (ConfigError, ModelArgsError, ModelNotFoundError, TaskNotFoundError)
INTERNAL_ERROR = "internal server error; the server log has the details"


def answer_for(exc: BaseException, where: str) -> tuple[int, str]:
    """The status and the one-line ``detail`` for an exception a route raised (bugs are logged)."""
    if isinstance(exc, INPUT_ERRORS):
        return 422, redact_text(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    text = redact_text("".join(traceback.format_exception(exc)).rstrip())
    logger.error("%s failed:\n%s", where, text)
    return 500, INTERNAL_ERROR


class CatchAll:
    """ASGI middleware: exceptions of the app become a redacted 422 or a generic 500."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracked(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_tracked)
        except Exception as exc:
            status, detail = answer_for(exc, f"{scope.get('method', '')} {scope.get('path', '')}")
            if not started:  # once a response has begun it can only be cut short
                await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)


__all__ = ["INTERNAL_ERROR", "CatchAll", "answer_for"]
