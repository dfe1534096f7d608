"""Plain data passed to and returned by judge providers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Request:
    """One judge call: OpenAI-style chat ``messages`` plus optional per-call overrides.

    ``temperature`` / ``max_tokens`` left ``None`` come from the server's :class:`ServerConfig`.
    ``metadata`` is never sent to the judge and is not part of the cache key; the ``dummy``
    provider reads it (``kind``, ``question``, ``answer``, ``prediction``, ...) to answer without a
    model.
    """

    messages: list[dict[str, Any]]
    temperature: float | None = None
    max_tokens: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # published form: images appended to the last user message, sampling settings from ``config``
    images: list[Any] | None = None
    config: Any = None

    def __post_init__(self) -> None:
        if self.images:
            object.__setattr__(self, "messages", _with_images(self.messages, self.images))
            object.__setattr__(self, "images", None)
        if self.config is not None:
            for name in ("temperature", "max_tokens"):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, getattr(self.config, name, None))
            object.__setattr__(self, "config", None)

    @classmethod
    def from_prompt(
        cls,
        prompt: str,
        system_prompt: str | None = None,
        images: Iterable[Any] = (),
        **kwargs: Any,
    ) -> Request:
        """A user message with ``prompt`` (and images as ``data:`` URIs), after an optional system message."""
        from lmms_eval.media import encode_image_data_uri

        messages: list[dict[str, Any]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        image_parts = [
            {"type": "image_url", "image_url": {"url": encode_image_data_uri(image)}} for image in images
        ]
        if image_parts:
            messages.append({"role": "user", "content": [*image_parts, {"type": "text", "text": prompt}]})
        else:
            messages.append({"role": "user", "content": prompt})
        return cls(messages=messages, **kwargs)

    def prompt_text(self) -> str:
        """The text of the last user message (for logs and the ``dummy`` provider)."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
        return ""


def _with_images(messages: list[dict[str, Any]], images: list[Any]) -> list[dict[str, Any]]:
    """``messages`` with ``images`` (paths, bytes, PIL images or URLs) before the last user message's text."""
    from lmms_eval.media import encode_image_data_uri

    parts = [{"type": "image_url", "image_url": {"url": encode_image_data_uri(image)}} for image in images]
    out = [dict(m) for m in messages]
    for message in reversed(out):
        if message.get("role") == "user":
            content = message.get("content")
            text = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
            message["content"] = [*parts, *text]
            return out
    return [*out, {"role": "user", "content": parts}]


@dataclass(frozen=True)
class JudgeResponse:
    """What a provider returned for one :class:`Request`.

    ``content`` is the judge's reply text (``None`` when the call failed, with ``error`` set).
    ``cached`` is true when the reply came from the cache (or from an identical request earlier
    in the same batch) rather than from a call made for this request.
    """

    content: str | None
    provider: str
    model: str
    cache_key: str
    cached: bool = False
    error: str | None = None
    latency_s: float = 0.0
    attempts: int = 0
    usage: dict[str, int] | None = None

    @property
    def success(self) -> bool:
        return self.error is None and self.content is not None

    @property
    def model_used(self) -> str:  # the published Response's name
        return self.model

    @property
    def error_message(self) -> str | None:  # the published Response's name
        return self.error

    def record(self) -> dict[str, Any]:
        """The judge call's record (for the sample log): provider, model, key, timing, usage."""
        out: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "cache_key": self.cache_key,
            "cached": self.cached,
            "latency_s": round(self.latency_s, 6),
            "attempts": self.attempts,
        }
        if self.usage:
            out["usage"] = dict(self.usage)
        return out


@dataclass(frozen=True)
class JudgeResult:
    """A parsed verdict: ``result`` is the label, score or score pair; ``None`` when unsuccessful.

    :meth:`to_dict` gives the dict the ``evaluate_*`` methods return:
    ``{"success", "result", "raw", "cached", "error", "judge"}`` (plus ``"score"`` / ``"scores"`` /
    ``"winner"`` for the scored methods), where ``raw`` is the judge's reply text and ``judge`` the
    call record of :meth:`JudgeResponse.record`.
    """

    success: bool
    result: Any
    response: JudgeResponse
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "result": self.result,
            "raw": self.response.content,
            "cached": self.response.cached,
            "error": self.error,
            "judge": self.response.record(),
            **self.extra,
        }


__all__ = ["JudgeResponse", "JudgeResult", "Request"]
