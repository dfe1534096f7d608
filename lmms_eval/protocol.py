"""``ChatMessages``: the structured multimodal message protocol of chat models.

A task's ``doc_to_messages`` returns a list of ``{"role", "content": [parts]}`` dicts; parts are
``{"type": "text", "text"}``, ``{"type": "image", "url"}``, ``{"type": "video", "url"}`` or
``{"type": "audio", "url"}``. The ``url`` of a medium may be a PIL image, a path, a URL, bytes, or
(for audio) a ``{"array", "sampling_rate"}`` dict. As in the published package, a part without
``"type"`` is typed by its keys: ``{"text"}`` is text, ``{"url", "start_time"/"end_time"}`` a video
clip, any other ``{"url"}`` an image (audio always needs ``"type": "audio"``).

``to_hf_messages`` gives the form HF processors' ``apply_chat_template`` and qwen-vl-utils expect;
``to_openai_messages`` gives OpenAI chat-completions messages with images as base64 ``data:`` URIs
(format from ``LMMS_IMAGE_ENCODE_FORMAT``: PNG by default, JPEG or WEBP with quality
``LMMS_IMAGE_JPEG_QUALITY``, default 85) and audio as ``input_audio`` parts (base64 WAV). The media themselves are read and encoded by
:mod:`lmms_eval.media`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lmms_eval.media import encode_image_data_uri, encode_wav, image_encode_format, load_audio, media_url
from lmms_eval.media.urls import is_remote


class ChatTextContent(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ChatImageContent(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    type: Literal["image"] = "image"
    url: Any


class ChatVideoContent(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    type: Literal["video"] = "video"
    url: Any
    start_time: float | None = None
    end_time: float | None = None


class ChatAudioContent(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    type: Literal["audio"] = "audio"
    url: Any


ChatContent = Annotated[
    ChatTextContent | ChatImageContent | ChatVideoContent | ChatAudioContent,
    Field(discriminator="type"),
]


class ChatMessage(BaseModel):
    role: Literal["user", "system", "assistant"]
    content: list[ChatContent]

    @field_validator("content", mode="before")
    @classmethod
    def _type_untyped_parts(cls, content: Any) -> Any:
        if not isinstance(content, list):
            return content
        return [infer_part_type(part) for part in content]


def infer_part_type(part: Any) -> Any:
    """A content part with its ``"type"`` filled in from its keys when it has none (see the module
    docstring); other parts unchanged."""
    if not isinstance(part, dict) or "type" in part:
        return part
    if "text" in part:
        return {"type": "text", "text": part["text"]}
    if "url" in part:
        timed = part.get("start_time") is not None or part.get("end_time") is not None
        return {**part, "type": "video" if timed else "image"}
    return part


class ChatMessages(BaseModel):
    """A conversation; convert it with :meth:`to_hf_messages` or :meth:`to_openai_messages`."""

    messages: list[ChatMessage]

    @classmethod
    def from_raw(cls, raw: ChatMessages | Iterable[dict[str, Any]]) -> ChatMessages:
        """Accept what ``doc_to_messages`` returns: raw dicts (string content allowed) or ChatMessages."""
        if isinstance(raw, ChatMessages):
            return raw
        normalised: list[Any] = []
        for message in raw:
            if isinstance(message, ChatMessage):
                normalised.append(message)
                continue
            content = message.get("content", [])
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            normalised.append({"role": message.get("role"), "content": content})
        return cls.model_validate({"messages": normalised})

    def extract_media(self) -> tuple[list[Any], list[Any], list[Any]]:
        """``(images, videos, audios)``: the media urls in message order."""
        images: list[Any] = []
        videos: list[Any] = []
        audios: list[Any] = []
        for message in self.messages:
            for part in message.content:
                if isinstance(part, ChatImageContent):
                    images.append(part.url)
                elif isinstance(part, ChatVideoContent):
                    videos.append(part.url)
                elif isinstance(part, ChatAudioContent):
                    audios.append(part.url)
        return images, videos, audios

    def text(self) -> str:
        """All text parts joined by newlines (useful for text-only backends and logging)."""
        return "\n".join(
            part.text
            for message in self.messages
            for part in message.content
            if isinstance(part, ChatTextContent)
        )

    def to_hf_messages(
        self, video_kwargs: dict[str, Any] | None = None, image_kwargs: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """The form ``processor.apply_chat_template`` and qwen-vl-utils expect.

        Images become ``{"type": "image", "image": url, **image_kwargs}``, videos
        ``{"type": "video", "video": url, **video_kwargs}`` plus ``video_start`` / ``video_end``
        when the part has a start or end time, audio ``{"type": "audio", "audio": url}``.
        """
        out: list[dict[str, Any]] = []
        for message in self.messages:
            parts: list[dict[str, Any]] = []
            for part in message.content:
                if isinstance(part, ChatTextContent):
                    parts.append({"type": "text", "text": part.text})
                elif isinstance(part, ChatImageContent):
                    parts.append(_with_kwargs({"type": "image", "image": part.url}, image_kwargs))
                elif isinstance(part, ChatVideoContent):
                    video = _with_kwargs({"type": "video", "video": part.url}, video_kwargs)
                    if part.start_time is not None:
                        video["video_start"] = part.start_time
                    if part.end_time is not None:
                        video["video_end"] = part.end_time
                    parts.append(video)
                else:
                    parts.append({"type": "audio", "audio": part.url})
            out.append({"role": message.role, "content": parts})
        return out

    def to_openai_messages(
        self,
        video_kwargs: dict[str, Any] | None = None,
        pass_video_url: bool = False,
        image_format: str | None = None,
    ) -> list[dict[str, Any]]:
        """OpenAI chat-completions messages; images become base64 ``data:`` URIs.

        The image format is ``image_format``, else ``LMMS_IMAGE_ENCODE_FORMAT``, else PNG. Videos
        are sent as a ``video_url`` (``file://`` for local paths) when ``pass_video_url`` is set or
        no frame reader is given; otherwise ``video_kwargs['frames']`` (a callable taking the video
        url and returning images) expands each video into one ``image_url`` per frame. Audio
        becomes an ``input_audio`` part (see :func:`openai_audio_part`).
        A system message with only text parts is flattened into one string. An image that
        appears more than once is encoded once.
        """
        fmt = image_encode_format(image_format)
        frame_reader: Callable[[Any], Iterable[Any]] | None = (video_kwargs or {}).get("frames")
        cache: dict[int, tuple[Any, str]] = {}

        def image_url(image: Any) -> dict[str, Any]:
            hit = cache.get(id(image))
            if hit is None or hit[0] is not image:
                hit = (image, encode_image_data_uri(image, fmt))
                cache[id(image)] = hit
            return {"type": "image_url", "image_url": {"url": hit[1]}}

        out: list[dict[str, Any]] = []
        for message in self.messages:
            parts: list[dict[str, Any]] = []
            for part in message.content:
                if isinstance(part, ChatTextContent):
                    parts.append({"type": "text", "text": part.text})
                elif isinstance(part, ChatImageContent):
                    parts.append(image_url(part.url))
                elif isinstance(part, ChatVideoContent):
                    if pass_video_url or frame_reader is None:
                        parts.append({"type": "video_url", "video_url": {"url": media_url(part.url)}})
                    else:
                        parts.extend(image_url(frame) for frame in frame_reader(part.url))
                else:
                    parts.append(openai_audio_part(part.url))
            if message.role == "system" and all(p["type"] == "text" for p in parts):
                out.append({"role": "system", "content": "\n".join(p["text"] for p in parts)})
            else:
                out.append({"role": message.role, "content": parts})
        return out


def openai_audio_part(source: Any) -> dict[str, Any]:
    """The OpenAI chat part of an audio source: ``{"type": "input_audio", "input_audio": {"data":
    <base64 WAV>, "format": "wav"}}`` (the audio read by :func:`~lmms_eval.media.load_audio`, its
    rate and channels kept, as 16-bit PCM), or an ``audio_url`` part for an ``http(s)`` URL (not
    fetched here; servers such as vLLM fetch it). Unreadable audio raises
    :class:`~lmms_eval.media.MediaError`."""
    if isinstance(source, str) and is_remote(source):
        return {"type": "audio_url", "audio_url": {"url": source}}
    audio = load_audio(source, mono=False)
    data = base64.b64encode(encode_wav(audio.samples, audio.sampling_rate)).decode("ascii")
    return {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}


def _with_kwargs(part: dict[str, Any], kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``part`` plus ``kwargs`` (which cannot replace the part's own keys)."""
    return {**part, **{k: v for k, v in (kwargs or {}).items() if k not in part}}


__all__ = [
    "ChatAudioContent",
    "ChatContent",
    "ChatImageContent",
    "ChatMessage",
    "ChatMessages",
    "ChatTextContent",
    "ChatVideoContent",
    "openai_audio_part",
]
