"""The error of a medium that cannot be read: missing, corrupt, truncated, empty or undecodable.

Model backends catch :class:`MediaError` around the media of one request and answer that request
with :func:`media_failure`, a ``RequestFailure(kind="input")`` (recorded, counted, not scored), so
one broken video never ends a run. (:mod:`lmms_eval.api.instance` is imported only there, lazily.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from lmms_eval.errors import LmmsEvalError

if TYPE_CHECKING:
    from lmms_eval.api.instance import RequestFailure

# missing: no such file; corrupt: not a medium the decoder can open; empty: no frames (or no
# video stream); truncated: ends before the frames its header announces; unsupported: a source
# this reader does not take
MediaProblem = Literal["missing", "corrupt", "empty", "truncated", "unsupported"]


class MediaError(LmmsEvalError):
    """An image, video or audio source that cannot be read (see :data:`MediaProblem`)."""

    def __init__(self, message: str, problem: MediaProblem = "corrupt") -> None:
        super().__init__(message)
        self.problem: MediaProblem = problem


def media_failure(error: Exception) -> RequestFailure:
    """The answer of a request whose media could not be read: for a :class:`MediaError`, a
    ``RequestFailure(kind="input")`` (not retried: the same media fail again); any other error is
    raised again."""
    from lmms_eval.api.instance import RequestFailure

    if isinstance(error, MediaError):
        return RequestFailure(error=str(error), retryable=False, kind="input")
    raise error


__all__ = ["MediaError", "MediaProblem", "media_failure"]
