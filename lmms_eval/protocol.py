"""``ChatMessages``: the structured multimodal message protocol of chat models.

A task's ``doc_to_messages`` returns a list of ``{"role", "content": [parts]}`` dicts; parts are
``{"type": "text", "text"}``, ``{"type": "image", "url"}``, ``{"type": "video", "url"}`` or
``{"type": "audio", "url"}``. The ``url`` of a medium may be a PIL image, a path, a URL, bytes, or
(for audio) a ``{"array", "sampling_rate"}`` dict.

``to_hf_messages`` gives the form HF processors' ``apply_chat_template`` and qwen-vl-utils expect;
``to_openai_messages`` gives OpenAI chat-completions messages with images as base64 ``data:`` URIs
(format from ``LMMS_IMAGE_ENCODE_FORMAT``: PNG by default, JPEG or WEBP with quality
``LMMS_IMAGE_JPEG_QUALITY``, default 85).
"""

from __future__ import annotations

import base64
import io
import mimetypes
import os
import wave
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

IMAGE_ENCODE_FORMATS = ("PNG", "JPEG", "WEBP")
_PASS_THROUGH_IMAGE_MIMES = ("image/png", "image/jpeg", "image/webp", "image/gif")


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
        becomes an ``audio_url`` (a ``data:audio/wav`` URI for ``{"array", "sampling_rate"}``).
        A system message with only text parts is flattened into one string. An image that
        appears more than once is encoded once.
        """
        fmt = normalise_image_format(image_format or os.environ.get("LMMS_IMAGE_ENCODE_FORMAT") or "PNG")
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
                        parts.append({"type": "video_url", "video_url": {"url": _media_url(part.url)}})
                    else:
                        parts.extend(image_url(frame) for frame in frame_reader(part.url))
                else:
                    parts.append({"type": "audio_url", "audio_url": {"url": _audio_url(part.url)}})
            if message.role == "system" and all(p["type"] == "text" for p in parts):
                out.append({"role": "system", "content": "\n".join(p["text"] for p in parts)})
            else:
                out.append({"role": message.role, "content": parts})
        return out


def _with_kwargs(part: dict[str, Any], kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``part`` plus ``kwargs`` (which cannot replace the part's own keys)."""
    return {**part, **{k: v for k, v in (kwargs or {}).items() if k not in part}}


def normalise_image_format(fmt: str) -> str:
    """``"png"`` -> ``"PNG"``, ``"jpg"`` -> ``"JPEG"``; anything but PNG, JPEG, WEBP is a ValueError."""
    upper = fmt.strip().upper()
    if upper == "JPG":
        upper = "JPEG"
    if upper not in IMAGE_ENCODE_FORMATS:
        raise ValueError(
            f"unsupported image encode format {fmt!r} (LMMS_IMAGE_ENCODE_FORMAT); "
            f"use one of {', '.join(IMAGE_ENCODE_FORMATS)}"
        )
    return upper


def _media_url(url: Any) -> str:
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if isinstance(url, str):
        if "://" in url or url.startswith("data:"):
            return url
        return "file://" + os.path.abspath(url)
    if isinstance(url, bytes):
        return "data:application/octet-stream;base64," + base64.b64encode(url).decode("ascii")
    raise TypeError(f"cannot turn a {type(url).__name__} into a URL")


def _audio_url(url: Any) -> str:
    if isinstance(url, dict) and "array" in url and "sampling_rate" in url:
        return "data:audio/wav;base64," + base64.b64encode(
            encode_wav(url["array"], int(url["sampling_rate"]))
        ).decode("ascii")
    return _media_url(url)


def encode_wav(samples: Any, sampling_rate: int) -> bytes:
    """Mono or ``(frames, channels)`` samples (floats in [-1, 1] or int16) as 16-bit PCM WAV bytes."""
    import numpy as np

    data = np.asarray(samples)
    if data.dtype.kind == "f":
        data = (np.clip(data, -1.0, 1.0) * 32767.0).round()
    data = data.astype("<i2")
    channels = 1 if data.ndim == 1 else int(data.shape[1])
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(2)
        writer.setframerate(sampling_rate)
        writer.writeframes(data.tobytes())
    return buffer.getvalue()


def _sniff_image_mime(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _data_uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def encode_image_data_uri(image: Any, fmt: str = "PNG", quality: int | None = None) -> str:
    """A PIL image, array, path, URL or bytes as a ``data:image/...;base64,`` URI (URLs pass through).

    PNG, JPEG, WEBP and GIF files and bytes are sent as they are; other encoded images and
    in-memory images are encoded in ``fmt``.
    """
    if isinstance(image, os.PathLike):
        image = os.fspath(image)
    if isinstance(image, str):
        if image.startswith(("data:", "http://", "https://")):
            return image
        with open(image, "rb") as handle:
            data = handle.read()
        mime = _sniff_image_mime(data) or mimetypes.guess_type(image)[0]
        if mime in _PASS_THROUGH_IMAGE_MIMES:
            return _data_uri(mime, data)
        image = data
    if isinstance(image, (bytes, bytearray)):
        mime = _sniff_image_mime(bytes(image))
        if mime is not None:
            return _data_uri(mime, bytes(image))
        from PIL import Image

        image = Image.open(io.BytesIO(bytes(image)))
    return _data_uri(f"image/{normalise_image_format(fmt).lower()}", _encode_pil(image, fmt, quality))


def _encode_pil(image: Any, fmt: str, quality: int | None) -> bytes:
    from PIL import Image

    img = image if isinstance(image, Image.Image) else Image.fromarray(_as_array(image))
    fmt = normalise_image_format(fmt)
    buffer = io.BytesIO()
    if fmt == "JPEG":
        if img.mode not in ("RGB", "L"):
            img = img.convert("RGB")
        q = quality or int(os.environ.get("LMMS_IMAGE_JPEG_QUALITY", "85"))
        img.save(buffer, format=fmt, quality=q)
    elif fmt == "WEBP":
        q = quality or int(os.environ.get("LMMS_IMAGE_JPEG_QUALITY", "85"))
        img.save(buffer, format=fmt, quality=q)
    else:
        if img.mode in ("CMYK", "YCbCr", "LAB", "HSV", "F"):
            img = img.convert("RGB")
        img.save(buffer, format=fmt)
    return buffer.getvalue()


def _as_array(image: Any) -> Any:
    if not hasattr(image, "__array__"):
        raise TypeError(
            f"cannot encode a {type(image).__name__} as an image; use a PIL image, an array, a path, "
            "a URL or bytes"
        )
    import numpy as np

    return np.asarray(image)
