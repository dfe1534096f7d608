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
``LMMS_IMAGE_JPEG_QUALITY``, default 85) and audio as ``input_audio`` parts (base64 WAV);
``to_anthropic_messages`` gives the Anthropic Messages API's ``system`` and ``messages`` (images as
base64 image blocks); ``to_gemini_contents`` gives the Gemini API's system instruction and
``contents`` (images, videos and audio as inline bytes with their MIME types). The media themselves
are read and encoded by :mod:`lmms_eval.media`.
"""

from __future__ import annotations

import base64
import mimetypes
import os
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lmms_eval.media import (
    MediaError,
    decode_data_uri,
    encode_image_data_uri,
    encode_wav,
    image_encode_format,
    is_frame_video,
    load_audio,
    media_url,
)
from lmms_eval.media.urls import is_remote

FrameReader = Callable[[Any], Iterable[Any]]
PartConverter = Callable[["ChatContent"], list[dict[str, Any]]]


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
        encode = _ImageEncoder(image_format)
        frame_reader: FrameReader | None = (video_kwargs or {}).get("frames")

        def image_url(image: Any) -> dict[str, Any]:
            return {"type": "image_url", "image_url": {"url": encode(image)}}

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

    def convert(self, part_converter: PartConverter) -> list[tuple[str, list[dict[str, Any]]]]:
        """Each message's role and its parts, each part converted by ``part_converter`` (which may
        turn one part into several, e.g. a video into frames): the one walk of the provider forms
        below."""
        return [
            (message.role, [out for part in message.content for out in part_converter(part)])
            for message in self.messages
        ]

    def to_anthropic_messages(
        self, video_kwargs: dict[str, Any] | None = None, image_format: str | None = None
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """``(system, messages)`` of the Anthropic Messages API.

        System messages (text only) become the top-level ``system`` text (``None`` without one);
        images become ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}``
        blocks (``http(s)`` URLs a ``"url"`` source); a video becomes one image block per frame of
        ``video_kwargs['frames']`` (a callable taking the video and returning images). The API
        takes no audio, and no video without a frame reader: those raise
        :class:`~lmms_eval.media.MediaError` (the request fails as an input failure).
        """
        encode = _ImageEncoder(image_format)
        frame_reader: FrameReader | None = (video_kwargs or {}).get("frames")

        def image_block(image: Any) -> dict[str, Any]:
            url = encode(image)
            if is_remote(url):
                return {"type": "image", "source": {"type": "url", "url": url}}
            mime, data = _base64_of_data_uri(url)
            return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}

        def block(part: ChatContent) -> list[dict[str, Any]]:
            if isinstance(part, ChatTextContent):
                return [{"type": "text", "text": part.text}]
            if isinstance(part, ChatImageContent):
                return [image_block(part.url)]
            if isinstance(part, ChatVideoContent):
                if frame_reader is None:
                    raise MediaError("the Anthropic API takes videos only as frames", "unsupported")
                return [image_block(frame) for frame in frame_reader(part.url)]
            raise MediaError("the Anthropic Messages API takes no audio input", "unsupported")

        system, messages = _split_system(self.convert(block), "text")
        return system, [{"role": role, "content": content} for role, content in messages]

    def to_gemini_contents(
        self,
        video_kwargs: dict[str, Any] | None = None,
        image_format: str | None = None,
        inline_video_files: bool = True,
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """``(system instruction, contents)`` of the Gemini API (google-genai's snake_case form).

        Roles are ``user`` and ``model`` (for ``assistant``); system messages (text only) become the
        system instruction. Parts: ``{"text"}``; an image ``{"inline_data": {"mime_type", "data":
        <bytes>}}``; audio the same with ``audio/wav`` (read by :func:`~lmms_eval.media.load_audio`,
        encoded as 16-bit WAV); a video file the file's bytes with its MIME type when
        ``inline_video_files``, else (and for videos given as frames) one image per frame of
        ``video_kwargs['frames']``. ``http(s)`` URLs become ``{"file_data": {"file_uri",
        "mime_type"}}`` (fetched by the API, not here).
        """
        encode = _ImageEncoder(image_format)
        frame_reader: FrameReader | None = (video_kwargs or {}).get("frames")

        def image_part(image: Any) -> dict[str, Any]:
            url = encode(image)
            if is_remote(url):
                return _gemini_file_part(url, "image/jpeg")
            mime, data = decode_data_uri(url)
            return {"inline_data": {"mime_type": mime, "data": data}}

        def video_parts(source: Any) -> list[dict[str, Any]]:
            if isinstance(source, str) and is_remote(source):
                return [_gemini_file_part(source, "video/mp4")]
            if (inline_video_files or frame_reader is None) and not is_frame_video(source):
                return [_gemini_video_bytes(source)]
            if frame_reader is None:
                raise MediaError("a video given as frames needs a frame reader", "unsupported")
            return [image_part(frame) for frame in frame_reader(source)]

        def part(content: ChatContent) -> list[dict[str, Any]]:
            if isinstance(content, ChatTextContent):
                return [{"text": content.text}]
            if isinstance(content, ChatImageContent):
                return [image_part(content.url)]
            if isinstance(content, ChatVideoContent):
                return video_parts(content.url)
            if isinstance(content.url, str) and is_remote(content.url):
                return [_gemini_file_part(content.url, "audio/wav")]
            audio = load_audio(content.url, mono=False)
            wav = encode_wav(audio.samples, audio.sampling_rate)
            return [{"inline_data": {"mime_type": "audio/wav", "data": wav}}]

        system, messages = _split_system(self.convert(part), "text")
        roles = {"assistant": "model"}
        return system, [{"role": roles.get(role, role), "parts": parts} for role, parts in messages]


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


class _ImageEncoder:
    """Images as ``data:`` URIs (``http(s)`` URLs as they are) in one format; an image that appears
    more than once is encoded once."""

    def __init__(self, image_format: str | None) -> None:
        self.fmt = image_encode_format(image_format)
        self._cache: dict[int, tuple[Any, str]] = {}

    def __call__(self, image: Any) -> str:
        hit = self._cache.get(id(image))
        if hit is None or hit[0] is not image:
            hit = (image, encode_image_data_uri(image, self.fmt))
            self._cache[id(image)] = hit
        return hit[1]


def _base64_of_data_uri(uri: str) -> tuple[str, str]:
    """``(mime, base64 text)`` of a ``data:`` URI, without decoding a base64 payload."""
    header, _, payload = uri.partition(",")
    params = header[len("data:") :].split(";")
    if "base64" in params[1:]:
        return params[0], payload
    mime, data = decode_data_uri(uri)
    return mime, base64.b64encode(data).decode("ascii")


def _split_system(
    messages: list[tuple[str, list[dict[str, Any]]]], text_key: str
) -> tuple[str | None, list[tuple[str, list[dict[str, Any]]]]]:
    """The text of the system messages (joined by newlines; ``None`` without one), and the other
    messages. A system message with anything but text raises :class:`MediaError`."""
    texts: list[str] = []
    rest: list[tuple[str, list[dict[str, Any]]]] = []
    for role, parts in messages:
        if role != "system":
            rest.append((role, parts))
            continue
        if any(text_key not in p for p in parts):
            raise MediaError("a system message may hold only text for this API", "unsupported")
        texts.extend(str(p[text_key]) for p in parts)
    return ("\n".join(texts) if texts else None), rest


def _gemini_file_part(url: str, default_mime: str) -> dict[str, Any]:
    mime = mimetypes.guess_type(url.split("?")[0])[0] or default_mime
    return {"file_data": {"file_uri": url, "mime_type": mime}}


def _gemini_video_bytes(source: Any) -> dict[str, Any]:
    """A video file (a path, ``file://`` URL, ``{"path"}``/``{"bytes"}`` dict or bytes) as an inline
    part with the MIME type of its suffix (``video/mp4`` when unknown)."""
    if isinstance(source, dict):
        source = source.get("bytes") or source.get("path")
    if isinstance(source, (bytes, bytearray)):
        return {"inline_data": {"mime_type": "video/mp4", "data": bytes(source)}}
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise MediaError(f"cannot send a {type(source).__name__} as a video file", "unsupported")
    path = source[len("file://") :] if source.startswith("file://") else source
    if not os.path.isfile(path):
        raise MediaError(f"video file not found: {path}", "missing")
    with open(path, "rb") as handle:
        data = handle.read()
    return {"inline_data": {"mime_type": mimetypes.guess_type(path)[0] or "video/mp4", "data": data}}


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
