"""ChatMessages: validation, media extraction, and the HF and OpenAI message forms."""

from __future__ import annotations

import base64
import io
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from files import gradient
from PIL import Image
from pydantic import ValidationError

from lmms_eval import protocol
from lmms_eval.protocol import (
    ChatAudioContent,
    ChatImageContent,
    ChatMessage,
    ChatMessages,
    ChatTextContent,
    ChatVideoContent,
)


def decode_data_uri(uri: str) -> tuple[str, bytes]:
    assert uri.startswith("data:"), uri[:40]
    header, _, payload = uri.partition(",")
    assert header.endswith(";base64"), header
    return header[len("data:") : -len(";base64")], base64.b64decode(payload)


def decode_image(uri: str) -> tuple[str, Image.Image]:
    mime, data = decode_data_uri(uri)
    image = Image.open(io.BytesIO(data))
    image.load()
    return mime, image


@pytest.fixture
def mixed() -> tuple[ChatMessages, dict[str, Any]]:
    media = {
        "img1": gradient(),
        "img2": gradient((3, 3)),
        "vid1": "clips/a.mp4",
        "vid2": "https://example.org/b.mp4",
        "aud1": "https://example.org/a.wav",
    }
    messages = ChatMessages(
        messages=[
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {
                "role": "user",
                "content": [
                    {"type": "image", "url": media["img1"]},
                    {"type": "video", "url": media["vid1"], "start_time": 1.5, "end_time": 4.0},
                    {"type": "text", "text": "What happens?"},
                    {"type": "audio", "url": media["aud1"]},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "A cat jumps."}]},
            {
                "role": "user",
                "content": [
                    {"type": "video", "url": media["vid2"]},
                    {"type": "image", "url": media["img2"]},
                    {"type": "text", "text": "And here?"},
                ],
            },
        ]
    )
    return messages, media


# -- validation -------------------------------------------------------------------------------


def test_parts_are_parsed_into_typed_content(mixed: tuple[ChatMessages, dict[str, Any]]) -> None:
    messages, media = mixed
    kinds = [type(p) for m in messages.messages for p in m.content]
    assert kinds == [
        ChatTextContent,
        ChatImageContent,
        ChatVideoContent,
        ChatTextContent,
        ChatAudioContent,
        ChatTextContent,
        ChatVideoContent,
        ChatImageContent,
        ChatTextContent,
    ]
    video = messages.messages[1].content[1]
    assert isinstance(video, ChatVideoContent)
    assert (video.start_time, video.end_time) == (1.5, 4.0)
    image = messages.messages[1].content[0]
    assert isinstance(image, ChatImageContent) and image.url is media["img1"]  # not copied


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"role": "tool", "content": [{"type": "text", "text": "x"}]}, "role"),
        ({"role": "user", "content": [{"type": "pdf", "url": "a.pdf"}]}, "pdf"),
        ({"role": "user", "content": [{"type": "text"}]}, "text"),
        ({"role": "user", "content": [{"type": "image"}]}, "url"),
        ({"role": "user", "content": [{"image": "untyped, neither text nor url"}]}, "type"),
        ({"role": "user", "content": [{"type": "text", "text": ["not", "a", "string"]}]}, "text"),
    ],
)
def test_invalid_messages_are_rejected(message: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        ChatMessages(messages=[message])  # type: ignore[list-item]
    assert fragment in str(info.value)


def test_from_raw_accepts_string_content_and_existing_objects() -> None:
    raw = [
        {"role": "system", "content": "sys"},
        ChatMessage(role="user", content=[ChatTextContent(text="hi")]),
    ]
    messages = ChatMessages.from_raw(raw)  # type: ignore[arg-type]
    assert messages.to_hf_messages() == [
        {"role": "system", "content": [{"type": "text", "text": "sys"}]},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ]
    assert ChatMessages.from_raw(messages) is messages
    with pytest.raises(ValidationError):
        ChatMessages.from_raw([{"role": "robot", "content": "x"}])


# -- extract_media and text --------------------------------------------------------------------


def test_extract_media_keeps_message_order(mixed: tuple[ChatMessages, dict[str, Any]]) -> None:
    messages, media = mixed
    images, videos, audios = messages.extract_media()
    assert [id(i) for i in images] == [id(media["img1"]), id(media["img2"])]
    assert videos == [media["vid1"], media["vid2"]]
    assert audios == [media["aud1"]]
    assert messages.text() == "Be brief.\nWhat happens?\nA cat jumps.\nAnd here?"


def test_extract_media_of_text_only_conversation_is_empty() -> None:
    messages = ChatMessages(messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}])
    assert messages.extract_media() == ([], [], [])


# -- to_hf_messages -----------------------------------------------------------------------------


def test_to_hf_messages_shapes_and_kwargs(mixed: tuple[ChatMessages, dict[str, Any]]) -> None:
    messages, media = mixed
    hf = messages.to_hf_messages(
        video_kwargs={"fps": 2.0, "max_pixels": 1000},
        image_kwargs={"max_pixels": 500, "image": "must not replace the image"},
    )
    assert hf == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {
            "role": "user",
            "content": [
                {"type": "image", "image": media["img1"], "max_pixels": 500},
                {
                    "type": "video",
                    "video": "clips/a.mp4",
                    "fps": 2.0,
                    "max_pixels": 1000,
                    "video_start": 1.5,
                    "video_end": 4.0,
                },
                {"type": "text", "text": "What happens?"},
                {"type": "audio", "audio": "https://example.org/a.wav"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "A cat jumps."}]},
        {
            "role": "user",
            "content": [
                {"type": "video", "video": "https://example.org/b.mp4", "fps": 2.0, "max_pixels": 1000},
                {"type": "image", "image": media["img2"], "max_pixels": 500},
                {"type": "text", "text": "And here?"},
            ],
        },
    ]
    assert hf[1]["content"][0]["image"] is media["img1"]


def test_to_hf_messages_without_kwargs_has_only_the_standard_keys(
    mixed: tuple[ChatMessages, dict[str, Any]],
) -> None:
    messages, _ = mixed
    hf = messages.to_hf_messages()
    assert [sorted(p) for p in hf[3]["content"]] == [["type", "video"], ["image", "type"], ["text", "type"]]


# -- to_openai_messages -------------------------------------------------------------------------


def test_openai_images_are_png_data_uris_by_default(
    mixed: tuple[ChatMessages, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LMMS_IMAGE_ENCODE_FORMAT", raising=False)
    messages, media = mixed
    out = messages.to_openai_messages(pass_video_url=True)
    assert out[0] == {"role": "system", "content": "Be brief."}
    user = out[1]["content"]
    assert [p["type"] for p in user] == ["image_url", "video_url", "text", "audio_url"]
    mime, decoded = decode_image(user[0]["image_url"]["url"])
    assert mime == "image/png" and decoded.format == "PNG"
    assert decoded.size == media["img1"].size
    assert np.array_equal(np.asarray(decoded.convert("RGB")), np.asarray(media["img1"]))
    _, second = decode_image(out[3]["content"][1]["image_url"]["url"])
    assert np.array_equal(np.asarray(second.convert("RGB")), np.asarray(media["img2"]))
    assert out[2] == {"role": "assistant", "content": [{"type": "text", "text": "A cat jumps."}]}


def test_openai_jpeg_format_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMMS_IMAGE_ENCODE_FORMAT", "JPEG")
    flat = Image.new("RGBA", (16, 16), (10, 120, 230, 255))  # RGBA must be converted for JPEG
    messages = ChatMessages(messages=[{"role": "user", "content": [{"type": "image", "url": flat}]}])
    uri = messages.to_openai_messages()[0]["content"][0]["image_url"]["url"]
    mime, decoded = decode_image(uri)
    assert mime == "image/jpeg" and decoded.format == "JPEG"
    diff = np.abs(np.asarray(decoded.convert("RGB"), dtype=int) - np.array([10, 120, 230]))
    assert diff.max() <= 3  # lossy, but a flat colour survives almost exactly


def test_explicit_image_format_wins_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMMS_IMAGE_ENCODE_FORMAT", "JPEG")
    messages = ChatMessages(messages=[{"role": "user", "content": [{"type": "image", "url": gradient()}]}])
    uri = messages.to_openai_messages(image_format="webp")[0]["content"][0]["image_url"]["url"]
    mime, decoded = decode_image(uri)
    assert mime == "image/webp" and decoded.format == "WEBP"


def test_unsupported_encode_format_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMMS_IMAGE_ENCODE_FORMAT", "TIFF")
    messages = ChatMessages(messages=[{"role": "user", "content": [{"type": "image", "url": gradient()}]}])
    with pytest.raises(ValueError, match=r"TIFF.*PNG, JPEG, WEBP"):
        messages.to_openai_messages()


def test_system_message_is_flattened_only_when_text_only() -> None:
    image = gradient()
    messages = ChatMessages(
        messages=[
            {
                "role": "system",
                "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}],
            },
            {
                "role": "system",
                "content": [{"type": "text", "text": "look:"}, {"type": "image", "url": image}],
            },
            {"role": "user", "content": [{"type": "text", "text": "only text"}]},
        ]
    )
    out = messages.to_openai_messages()
    assert out[0] == {"role": "system", "content": "line one\nline two"}
    assert isinstance(out[1]["content"], list)
    assert [p["type"] for p in out[1]["content"]] == ["text", "image_url"]
    assert out[2] == {"role": "user", "content": [{"type": "text", "text": "only text"}]}


def test_video_url_for_local_and_remote_videos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    messages = ChatMessages(
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "video", "url": "clips/a.mp4"},
                    {"type": "video", "url": Path("clips") / "b.mp4"},
                    {"type": "video", "url": "https://example.org/c.mp4"},
                ],
            }
        ]
    )
    parts = messages.to_openai_messages(pass_video_url=True)[0]["content"]
    assert parts == [
        {"type": "video_url", "video_url": {"url": f"file://{tmp_path / 'clips' / 'a.mp4'}"}},
        {"type": "video_url", "video_url": {"url": f"file://{tmp_path / 'clips' / 'b.mp4'}"}},
        {"type": "video_url", "video_url": {"url": "https://example.org/c.mp4"}},
    ]


def test_video_frames_are_expanded_by_the_frame_reader_unless_pass_video_url() -> None:
    frames = [gradient((2, 2)), gradient((3, 2))]
    seen: list[Any] = []

    def read_frames(url: Any) -> list[Image.Image]:
        seen.append(url)
        return frames

    messages = ChatMessages(messages=[{"role": "user", "content": [{"type": "video", "url": "v.mp4"}]}])
    parts = messages.to_openai_messages(video_kwargs={"frames": read_frames})[0]["content"]
    assert seen == ["v.mp4"]
    assert [p["type"] for p in parts] == ["image_url", "image_url"]
    sizes = [decode_image(p["image_url"]["url"])[1].size for p in parts]
    assert sizes == [(2, 2), (3, 2)]
    direct = messages.to_openai_messages(video_kwargs={"frames": read_frames}, pass_video_url=True)
    assert direct[0]["content"][0]["type"] == "video_url" and seen == ["v.mp4"]


def test_audio_arrays_become_input_audio_wav() -> None:
    samples = np.array([0.0, 0.5, -0.5, 1.0, -1.0], dtype=np.float32)
    messages = ChatMessages(
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "audio", "url": {"array": samples, "sampling_rate": 8000}},
                    {"type": "audio", "url": "https://example.org/a.wav"},
                ],
            }
        ]
    )
    parts = messages.to_openai_messages()[0]["content"]
    assert parts[0]["type"] == "input_audio" and parts[0]["input_audio"]["format"] == "wav"
    data = base64.b64decode(parts[0]["input_audio"]["data"])
    with wave.open(io.BytesIO(data)) as reader:
        assert (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) == (8000, 1, 2)
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
    assert pcm.tolist() == [0, 16384, -16384, 32767, -32767]
    assert parts[1] == {"type": "audio_url", "audio_url": {"url": "https://example.org/a.wav"}}


def test_an_image_used_twice_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = protocol.encode_image_data_uri

    def counting(image: Any, fmt: str = "PNG", quality: int | None = None) -> str:
        calls.append(image)
        return real(image, fmt, quality)

    monkeypatch.setattr(protocol, "encode_image_data_uri", counting)
    image, other = gradient(), gradient((2, 2))
    messages = ChatMessages(
        messages=[
            {"role": "user", "content": [{"type": "image", "url": image}, {"type": "image", "url": other}]},
            {"role": "user", "content": [{"type": "image", "url": image}]},
        ]
    )
    out = messages.to_openai_messages()
    assert len(calls) == 2
    assert out[0]["content"][0] == out[1]["content"][0]
    assert out[0]["content"][0] != out[0]["content"][1]
