"""``gemini``: Google's Gemini models through the official ``google-genai`` SDK (``from google import genai``).

Install with ``pip install 'lmms_eval[gemini]'``; the SDK is imported when the model is built.
Model args (besides those every API backend takes, see :mod:`lmms_eval.models.api.backend`):

* ``model`` (aliases ``model_version``, ``pretrained``): the model name, e.g. ``gemini-2.5-flash``;
* ``api_key`` (default ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY``; required), ``base_url`` (the
  SDK's ``http_options.base_url``; default ``GOOGLE_GEMINI_BASE_URL``, then Google's endpoint);
* ``video_frames`` (false: a video file is sent inline as its bytes, which Gemini decodes itself;
  true: as ``max_frames_num`` sampled frames). Videos given as frames are always sent as frames.

Requests: images, video files and audio (16-bit WAV) are inline parts (bytes with their MIME types);
system messages (and ``system_prompt``) the system instruction; ``max_new_tokens`` ->
``max_output_tokens``, ``temperature`` (0 unless the task samples), ``top_p``, ``seed``,
``presence_penalty``, ``frequency_penalty``, ``until`` -> ``stop_sequences`` (the first 5; every
``until`` string is also applied to the returned text).

Answers carry the usage the API reported (``usage_metadata``: prompt, candidates and thoughts
tokens). A prompt or an answer withheld for safety (``block_reason``, or ``finish_reason`` SAFETY,
PROHIBITED_CONTENT, BLOCKLIST, SPII with no text) is a failure of kind ``filtered``. Retries, rate
pacing, the gate and redaction are those of every API backend (:mod:`lmms_eval.models.api.retry`);
the SDK's own retries are off.
"""

from __future__ import annotations

import os
from typing import Any

from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import GenerationResult, Instance, TokenCounts
from lmms_eval.api.path_types import FileOrText, NotAPath
from lmms_eval.errors import MissingDependencyError, ModelArgsError
from lmms_eval.models._common import apply_stop_strings
from lmms_eval.models.api.backend import DEFAULT_MAX_NEW_TOKENS, ApiChatModel
from lmms_eval.models.api.retry import AttemptError, call_with_retries
from lmms_eval.models.api.sdk import api_key_from, sdk_attempt_error
from lmms_eval.protocol import ChatMessages

KEY_ENVS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
MAX_STOP_SEQUENCES = 5
BLOCKED_FINISH_REASONS = frozenset({"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY"})


class Gemini(ApiChatModel):
    """Gemini API backend (thread pool); see the module docstring for its arguments."""

    is_simple = False
    sent_gen_kwargs = frozenset({"seed", "presence_penalty", "frequency_penalty"})

    def __init__(
        self,
        model: NotAPath | None = None,
        model_version: NotAPath | None = None,
        pretrained: NotAPath | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        retry_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        num_concurrent: int = 8,
        adaptive_concurrency: bool = True,
        max_frames_num: int = 10,
        video_frames: bool = False,
        video_max_pixels: int | None = 448 * 448,
        system_prompt: FileOrText | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        batch_size: int | str | None = 1,
        device: str | None = None,
    ) -> None:
        super().__init__(
            model=model,
            model_version=model_version,
            pretrained=pretrained,
            timeout=timeout,
            max_retries=max_retries,
            retry_backoff_s=retry_backoff_s,
            max_backoff_s=max_backoff_s,
            num_concurrent=num_concurrent,
            adaptive_concurrency=adaptive_concurrency,
            max_frames_num=max_frames_num,
            video_max_pixels=video_max_pixels,
            system_prompt=system_prompt,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            device=device,
        )
        try:
            from google import genai
            from google.genai import types
        except ImportError:
            raise MissingDependencyError("google-genai", "gemini", "The 'gemini' model") from None
        self.video_frames = bool(video_frames)
        key = api_key_from(api_key, KEY_ENVS, "gemini")
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        # the SDK's timeout is in milliseconds; one attempt per call (the shared loop retries)
        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=round(self.timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._make_client = lambda: genai.Client(api_key=key, http_options=options)
        self._client: Any = None
        try:
            self._client = self._make_client()
        except Exception as exc:  # the SDK's own checks of its arguments
            raise ModelArgsError(f"model 'gemini': {type(exc).__name__}: {exc}") from None

    # -- building requests -------------------------------------------------------------------------------

    def build_request(self, request: Instance) -> tuple[dict[str, Any], list[str]]:
        """The ``models.generate_content`` arguments of a ``generate_until`` request, and its stop
        strings."""
        settings = self.generation_settings(request.args[1] or {})
        system, contents = ChatMessages.from_raw(self.doc_messages(request)).to_gemini_contents(
            video_kwargs={"frames": self._frames}, inline_video_files=not self.video_frames
        )
        config: dict[str, Any] = {"max_output_tokens": settings.max_new_tokens}
        system = system if system is not None else self.system_prompt
        if system:
            config["system_instruction"] = system
        if settings.temperature is not None:
            config["temperature"] = settings.temperature
        if settings.top_p is not None:
            config["top_p"] = settings.top_p
        if settings.until:
            config["stop_sequences"] = settings.until[:MAX_STOP_SEQUENCES]
        if "seed" in settings.extra:
            config["seed"] = int(settings.extra["seed"])
        for key in ("presence_penalty", "frequency_penalty"):
            if key in settings.extra:
                config[key] = float(settings.extra[key])
        return {"model": self.model_version, "contents": contents, "config": config}, settings.until

    # -- answering --------------------------------------------------------------------------------------

    def request_answer(self, request: Instance, gate: RequestGate) -> GenerationResult:
        params, until = self.build_request(request)

        def attempt() -> Any:
            try:
                response = self.client.models.generate_content(**params)
            except Exception as exc:
                return sdk_attempt_error(exc, self.timeout)
            return _declined(response) or response

        done = call_with_retries(attempt, self.retry, self.concurrency, gate)
        return GenerationResult(
            text=apply_stop_strings(_text(done.value), until),
            token_counts=_usage(done.value),
            latency_s=done.latency_s,
        )

    @property
    def client(self) -> Any:
        """The SDK client (built again after :meth:`clean` closed it)."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    def clean(self) -> None:
        """Close the SDK's connection pool (it reopens if the model is used again)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
        super().clean()


def _text(response: Any) -> str:
    """The text parts of the first candidate (thoughts left out)."""
    candidates = getattr(response, "candidates", None) or []
    content = getattr(candidates[0], "content", None) if candidates else None
    parts = getattr(content, "parts", None) or []
    return "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False))


def _usage(response: Any) -> TokenCounts | None:
    usage = getattr(response, "usage_metadata", None)
    if usage is None:
        return None
    thoughts = getattr(usage, "thoughts_token_count", None)
    output = getattr(usage, "candidates_token_count", None)
    return TokenCounts(
        input_tokens=getattr(usage, "prompt_token_count", None),
        output_tokens=None if output is None and thoughts is None else (output or 0) + (thoughts or 0),
        reasoning_tokens=thoughts,
    )


def _enum_name(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "name", value))


def _declined(response: Any) -> AttemptError | None:
    """A prompt or answer withheld for safety: a failure of kind ``filtered``, not retried."""
    feedback = getattr(response, "prompt_feedback", None)
    blocked = _enum_name(getattr(feedback, "block_reason", None))
    if blocked:
        return AttemptError(f"prompt blocked: {blocked}", False, 200, kind="filtered", usage=_usage(response))
    candidates = getattr(response, "candidates", None) or []
    finish = _enum_name(getattr(candidates[0], "finish_reason", None)) if candidates else None
    if finish in BLOCKED_FINISH_REASONS and not _text(response):
        return AttemptError(f"finish_reason: {finish}", False, 200, kind="filtered", usage=_usage(response))
    return None


__all__ = ["Gemini"]
