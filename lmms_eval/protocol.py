"""``ChatMessages``: the structured multimodal message protocol of chat models.

A task's ``doc_to_messages`` returns a list of ``{"role", "content": [parts]}`` dicts; parts are
``{"type": "text", "text"}``, ``{"type": "image", "url"}``, ``{"type": "video", "url"}`` or
``{"type": "audio", "url"}``. The ``url`` of a medium may be a PIL image, a path, a URL, bytes, or
(for audio) a ``{"array", "sampling_rate"}`` dict.
"""

from __future__ import annotations

import base64
import io
import mimetypes
import os
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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
    def from_raw(cls, raw: ChatMessages | list[dict[str, Any]]) -> ChatMessages:
        """Accept what ``doc_to_messages`` returns: raw dicts (string content allowed) or ChatMessages."""
        if isinstance(raw, ChatMessages):
            return raw
        normalised = []
        for message in raw:
            content = message.get("content", [])
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            normalised.append({"role": message["role"], "content": content})
        return cls(messages=normalised)  # type: ignore[arg-type]

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
        """The form ``processor.apply_chat_template`` and qwen-vl-utils expect."""
        out: list[dict[str, Any]] = []
        for message in self.messages:
            parts: list[dict[str, Any]] = []
            for part in message.content:
                if isinstance(part, ChatTextContent):
                    parts.append({"type": "text", "text": part.text})
                elif isinstance(part, ChatImageContent):
                    parts.append({"type": "image", "image": part.url, **(image_kwargs or {})})
                elif isinstance(part, ChatVideoContent):
                    video: dict[str, Any] = {"type": "video", "video": part.url, **(video_kwargs or {})}
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

        Videos are sent as a ``video_url`` (``file://`` for local paths) when ``pass_video_url`` is
        set; otherwise the caller's ``video_kwargs['frames']`` callable may expand them into frames.
        """
        fmt = (image_format or os.environ.get("LMMS_IMAGE_ENCODE_FORMAT", "PNG")).upper()
        frame_reader = (video_kwargs or {}).get("frames")
        out: list[dict[str, Any]] = []
        for message in self.messages:
            parts: list[dict[str, Any]] = []
            for part in message.content:
                if isinstance(part, ChatTextContent):
                    parts.append({"type": "text", "text": part.text})
                elif isinstance(part, ChatImageContent):
                    parts.append(
                        {"type": "image_url", "image_url": {"url": encode_image_data_uri(part.url, fmt)}}
                    )
                elif isinstance(part, ChatVideoContent):
                    if pass_video_url or frame_reader is None:
                        parts.append({"type": "video_url", "video_url": {"url": _media_url(part.url)}})
                    else:
                        for frame in frame_reader(part.url):
                            parts.append(
                                {"type": "image_url", "image_url": {"url": encode_image_data_uri(frame, fmt)}}
                            )
                else:
                    parts.append({"type": "audio_url", "audio_url": {"url": _media_url(part.url)}})
            if message.role == "system" and all(p["type"] == "text" for p in parts):
                out.append({"role": "system", "content": "\n".join(p["text"] for p in parts)})
            else:
                out.append({"role": message.role, "content": parts})
        return out


def _media_url(url: Any) -> str:
    if isinstance(url, str):
        if "://" in url or url.startswith("data:"):
            return url
        return "file://" + os.path.abspath(url)
    if isinstance(url, bytes):
        return "data:application/octet-stream;base64," + base64.b64encode(url).decode("ascii")
    raise TypeError(f"cannot turn a {type(url).__name__} into a URL")


def encode_image_data_uri(image: Any, fmt: str = "PNG", quality: int | None = None) -> str:
    """A PIL image, path, URL or bytes as a ``data:image/...;base64,`` URI (URLs pass through)."""
    if isinstance(image, str):
        if image.startswith(("data:", "http://", "https://")):
            return image
        mime = mimetypes.guess_type(image)[0] or "image/png"
        with open(image, "rb") as handle:
            return f"data:{mime};base64," + base64.b64encode(handle.read()).decode("ascii")
    if isinstance(image, bytes):
        return "data:image/png;base64," + base64.b64encode(image).decode("ascii")
    buffer = io.BytesIO()
    img = image
    if fmt in ("JPEG", "JPG"):
        fmt = "JPEG"
        if getattr(img, "mode", "RGB") not in ("RGB", "L"):
            img = img.convert("RGB")
        q = quality or int(os.environ.get("LMMS_IMAGE_JPEG_QUALITY", "85"))
        img.save(buffer, format=fmt, quality=q)
    else:
        img.save(buffer, format=fmt)
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
