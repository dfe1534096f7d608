"""The published module path of the judge's data types: ``ServerConfig``, ``Request``, ``Response``.

``ServerConfig`` also takes the published spellings ``num_retries``, ``retry_delay`` and
``max_concurrent``; ``Request`` takes ``images=`` and ``config=``; ``Response`` is our
:class:`~lmms_eval.llm_judge.types.JudgeResponse` (``success``, ``content``, ``model_used``, ``usage``,
``error_message``).
"""

from __future__ import annotations

from lmms_eval.llm_judge.config import ServerConfig
from lmms_eval.llm_judge.types import JudgeResponse, Request

Response = JudgeResponse
DEFAULT_NUM_RETRIES = 5
DEFAULT_RETRY_DELAY = 10

__all__ = ["DEFAULT_NUM_RETRIES", "DEFAULT_RETRY_DELAY", "Request", "Response", "ServerConfig"]
