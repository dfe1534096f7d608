"""lmms_eval.media: image loading and encoding, frame sampling, videos given as frames, audio URLs.

Every image, frame folder and sound is built here, in memory or under ``tmp_path``.
"""

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

from lmms_eval import media
from lmms_eval.errors import LmmsEvalError
from lmms_eval.media import (
    audio_url,
    data_uri,
    decode_data_uri,
    encode_image_data_uri,
    image_encode_format,
    image_quality,
    is_frame_video,
    is_video,
    load_image,
    load_video_frames,
    media_url,
    normalise_image_format,
    sample_frame_indices,
    sample_video_frames,
    video_frames,
)


def encoded(image: Image.Image, fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def pixels(image: Any) -> Any:
    return np.asarray(image.convert("RGB") if hasattr(image, "convert") else image)


def decode_image(uri: str) -> tuple[str, Image.Image]:
    mime, data = decode_data_uri(uri)
    image = Image.open(io.BytesIO(data))
    image.load()
    return mime, image


def frame_folder(root: Path, count: int, name: str = "frame_{i}.png") -> Path:
    """``count`` frames whose red channel is ``10 * i`` (the frame number is readable back)."""
    root.mkdir()
    for i in range(count):
        Image.new("RGB", (4, 4), (10 * i, 0, 0)).save(root / name.format(i=i))
    return root


def red_values(frames: list[Any]) -> list[int]:
    return [int(pixels(load_image(f))[0, 0, 0]) for f in frames]


# -- load_image ----------------------------------------------------------------------------------


def test_every_image_source_loads_as_the_same_rgb_pixels(tmp_path: Path) -> None:
    image = gradient()
    png = tmp_path / "x.png"
    image.save(png)
    data = encoded(image)
    sources: dict[str, Any] = {
        "pil": image,
        "path str": str(png),
        "Path": png,
        "bytes": data,
        "bytearray": bytearray(data),
        "array": np.asarray(image),
        "datasets dict with bytes": {"bytes": data, "path": None},
        "datasets dict with a path": {"bytes": None, "path": str(png)},
        "url dict": {"url": str(png)},
        "data URI": "data:image/png;base64," + base64.b64encode(data).decode(),
        "bare base64": base64.b64encode(data).decode(),
        "wrapped base64": "\n".join(base64.encodebytes(data).decode().split()),
    }
    for kind, source in sources.items():
        loaded = load_image(source)
        assert loaded.mode == "RGB", kind
        assert np.array_equal(pixels(loaded), pixels(image)), kind


def test_load_image_converts_other_modes_to_rgb() -> None:
    rgba = Image.new("RGBA", (3, 3), (10, 20, 30, 128))
    assert load_image(rgba).mode == "RGB"
    palette = gradient().convert("P")
    assert load_image(palette).mode == "RGB"
    rgb = gradient()
    assert load_image(rgb) is rgb  # already RGB: returned as it is


def test_load_image_errors_name_the_source(tmp_path: Path) -> None:
    with pytest.raises(LmmsEvalError, match=r"image file not found: .*missing\.png"):
        load_image(str(tmp_path / "missing.png"))
    with pytest.raises(LmmsEvalError, match=r"not fetched: https://example\.org/a\.png"):
        load_image("https://example.org/a.png")
    text = tmp_path / "notes.png"
    text.write_text("not an image", encoding="utf-8")
    with pytest.raises(LmmsEvalError, match=r"notes\.png' is not an image"):
        load_image(text)
    with pytest.raises(LmmsEvalError, match="not an image"):
        load_image(b"\x00\x01 not an image")
    with pytest.raises(LmmsEvalError, match="cannot read a int as an image"):
        load_image(3)
    with pytest.raises(LmmsEvalError, match="not a data URI"):
        decode_data_uri("image/png;base64,AAAA")


# -- data URIs -----------------------------------------------------------------------------------


def test_data_uri_round_trip_is_lossless() -> None:
    image = gradient((9, 4))
    uri = encode_image_data_uri(image)
    assert uri.startswith("data:image/png;base64,")
    assert np.array_equal(pixels(load_image(uri)), pixels(image))
    assert decode_data_uri(data_uri("application/x-test", b"\x00\xffabc")) == (
        "application/x-test",
        b"\x00\xffabc",
    )
    assert decode_data_uri("data:,a%20b") == ("text/plain", b"a b")  # not base64: percent-encoded


def test_encoded_files_bytes_and_base64_are_sent_as_they_are(tmp_path: Path) -> None:
    jpeg = encoded(gradient(), "JPEG")
    path = tmp_path / "x.jpg"
    path.write_bytes(jpeg)
    for source in (str(path), path, jpeg, {"bytes": jpeg, "path": "x.jpg"}, base64.b64encode(jpeg).decode()):
        mime, data = decode_data_uri(encode_image_data_uri(source, "PNG"))
        assert (mime, data) == ("image/jpeg", jpeg)


def test_image_files_are_sent_as_stored_or_reencoded(tmp_path: Path) -> None:
    png = tmp_path / "x.png"
    gradient().save(png)
    mime, data = decode_data_uri(encode_image_data_uri(str(png), "JPEG"))
    assert mime == "image/png" and data == png.read_bytes()  # passed through, not re-encoded

    bmp = tmp_path / "x.bmp"
    gradient().save(bmp)
    mime, decoded = decode_image(encode_image_data_uri(bmp))  # a Path works too
    assert mime == "image/png"
    assert np.array_equal(pixels(decoded), pixels(gradient()))
    assert decode_image(encode_image_data_uri({"bytes": None, "path": str(bmp)}))[0] == "image/png"


def test_urls_pass_through_and_arrays_are_encoded(tmp_path: Path) -> None:
    assert encode_image_data_uri("https://example.org/a.png") == "https://example.org/a.png"
    assert encode_image_data_uri("data:image/png;base64,AAAA") == "data:image/png;base64,AAAA"
    arr = np.asarray(gradient())
    _, decoded = decode_image(encode_image_data_uri(arr))
    assert np.array_equal(np.asarray(decoded), arr)
    with pytest.raises(TypeError, match="cannot encode a object"):
        encode_image_data_uri(object())
    with pytest.raises(FileNotFoundError):
        encode_image_data_uri(str(tmp_path / "missing.png"))


def test_encoding_is_deterministic_and_matches_pil(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LMMS_IMAGE_JPEG_QUALITY", raising=False)
    image = gradient((16, 16))
    for fmt, quality in (("PNG", None), ("JPEG", 85), ("WEBP", 85)):
        buffer = io.BytesIO()
        image.save(buffer, format=fmt, **({} if quality is None else {"quality": quality}))
        mime, data = decode_data_uri(encode_image_data_uri(image, fmt))
        assert mime == f"image/{fmt.lower()}" and data == buffer.getvalue()


def test_jpeg_quality_setting_changes_the_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    image = gradient((64, 64))
    monkeypatch.setenv("LMMS_IMAGE_JPEG_QUALITY", "10")
    low = decode_data_uri(encode_image_data_uri(image, "JPEG"))[1]
    monkeypatch.setenv("LMMS_IMAGE_JPEG_QUALITY", "95")
    high = decode_data_uri(encode_image_data_uri(image, "jpg"))[1]
    assert len(low) < len(high)
    assert decode_data_uri(encode_image_data_uri(image, "JPEG", quality=10))[1] == low  # explicit wins
    monkeypatch.setenv("LMMS_IMAGE_JPEG_QUALITY", "high")
    with pytest.raises(ValueError, match="LMMS_IMAGE_JPEG_QUALITY='high'"):
        image_quality()


def test_encode_format_comes_from_argument_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LMMS_IMAGE_ENCODE_FORMAT", raising=False)
    monkeypatch.delenv("LMMS_IMAGE_JPEG_QUALITY", raising=False)
    assert (image_encode_format(), image_quality()) == ("PNG", 85)
    monkeypatch.setenv("LMMS_IMAGE_ENCODE_FORMAT", "jpg")
    assert image_encode_format() == "JPEG" and image_encode_format("webp") == "WEBP"
    assert normalise_image_format(" Png ") == "PNG"
    with pytest.raises(ValueError, match=r"TIFF.*PNG, JPEG, WEBP"):
        image_encode_format("TIFF")


# -- frame sampling ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "count", "sampling", "expected"),
    [
        (6, 3, "uniform", [0, 2, 5]),
        (10, 4, "uniform", [0, 3, 6, 9]),
        (20, 4, "centered", [2, 7, 12, 17]),
        (10, 3, "centered", [1, 5, 8]),
        (2, 3, "uniform", [0, 1]),  # fewer frames than asked: all of them
        (3, 3, "centered", [0, 1, 2]),
        (5, None, "uniform", [0, 1, 2, 3, 4]),  # no limit
        (4, 0, "centered", [0, 1, 2, 3]),
        (4, -1, "uniform", [0, 1, 2, 3]),
        (7, 1, "uniform", [0]),  # one frame: the first one (numpy.linspace, the published rule)
        (100, 8, "uniform", [0, 14, 28, 42, 56, 70, 84, 99]),  # truncated, not rounded: 56.57 -> 56
        (7, 1, "centered", [3]),  # one frame: the middle one
        (0, 4, "uniform", []),
        (0, None, "centered", []),
    ],
)
def test_sample_frame_indices(total: int, count: int | None, sampling: Any, expected: list[int]) -> None:
    assert sample_frame_indices(total, count, sampling) == expected


def test_sampled_indices_are_increasing_in_range_and_of_the_asked_count() -> None:
    for sampling in media.FRAME_SAMPLINGS:
        for total in range(1, 40):
            for count in range(1, total + 1):
                picked = sample_frame_indices(total, count, sampling)
                assert len(picked) == count and picked == sorted(set(picked)), (total, count, sampling)
                assert picked[0] >= 0 and picked[-1] < total
                if sampling == "uniform" and count > 1:
                    assert (picked[0], picked[-1]) == (0, total - 1)


def test_sample_frame_indices_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown frame sampling 'random'"):
        sample_frame_indices(10, 2, "random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="-1 frames"):
        sample_frame_indices(-1, 2)


# -- videos given as frames ----------------------------------------------------------------------


def test_frame_folders_are_read_in_natural_order(tmp_path: Path) -> None:
    folder = frame_folder(tmp_path / "clip", 12)
    (folder / "notes.txt").write_text("not a frame", encoding="utf-8")
    Image.new("RGB", (4, 4), (250, 0, 0)).save(folder / "frame_12.tif")
    frames = video_frames(folder)
    assert [Path(f).name for f in frames[:3]] == ["frame_0.png", "frame_1.png", "frame_2.png"]
    assert Path(frames[-1]).name == "frame_12.tif" and len(frames) == 13
    assert video_frames({"path": str(folder)}) == frames == video_frames({"frames": frames})


def test_sampled_frames_are_the_ones_the_indices_name(tmp_path: Path) -> None:
    folder = frame_folder(tmp_path / "clip", 20)
    centred = sample_video_frames(str(folder), 4, sampling="centered")
    assert all(isinstance(f, str) for f in centred)  # paths stay paths
    assert red_values(centred) == [20, 70, 120, 170]
    loaded = load_video_frames(folder, 4)
    assert all(isinstance(f, Image.Image) and f.mode == "RGB" for f in loaded)
    assert red_values(loaded) == [0, 60, 120, 190]  # int(i * 19 / 3): 0, 6, 12, 19
    images = [Image.new("L", (2, 2), i) for i in range(6)]
    assert [f.getpixel((0, 0)) for f in load_video_frames(images, 3)] == [(0, 0, 0), (2, 2, 2), (5, 5, 5)]
    assert load_video_frames(tuple(images), None)[5].getpixel((0, 0)) == (5, 5, 5)


def test_videos_without_frames_are_errors_that_name_them(tmp_path: Path) -> None:
    empty = tmp_path / "empty_clip"
    empty.mkdir()
    (empty / "readme.md").write_text("no frames here", encoding="utf-8")
    with pytest.raises(LmmsEvalError, match=r"video folder '.*empty_clip' holds no frame images"):
        load_video_frames(empty, 4)
    with pytest.raises(LmmsEvalError, match="frame list is empty"):
        load_video_frames([], 4)
    with pytest.raises(LmmsEvalError, match="frame list is empty"):
        sample_video_frames({"frames": []}, 4)
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    with pytest.raises(LmmsEvalError, match=r"video '.*clip\.mp4' \(a file\).*frames"):
        load_video_frames(str(clip), 4)
    with pytest.raises(LmmsEvalError, match=r"video '.*gone\.mp4' \(no such file or folder\)"):
        load_video_frames(tmp_path / "gone.mp4", 4)
    with pytest.raises(LmmsEvalError, match="cannot read a int as a video"):
        video_frames(7)


def test_is_video_and_is_frame_video(tmp_path: Path) -> None:
    folder = frame_folder(tmp_path / "frames", 2)
    videos = [
        [gradient()],
        (gradient(),),
        {"frames": []},
        {"path": "clip.mp4"},
        folder,
        str(folder),
        "clip.mp4",
        "CLIP.MOV",
        Path("a/b.webm"),
        "https://x.test/v.mp4?sig=1",
        "archive.tar.gz",
        "data:video/mp4;base64,AAAA",
    ]
    images = [
        gradient(),
        np.zeros((2, 2, 3), dtype=np.uint8),
        b"\x89PNG",
        {"bytes": b"\x89PNG", "path": "clip.mp4"},
        {"bytes": None, "path": "cat.jpg"},
        "cat.JPG",
        "x.tiff",
        "https://x.test/a.png?size=2",
        "no_suffix",
        "data:image/png;base64,AAAA",
    ]
    assert [v for v in videos if not is_video(v)] == []
    assert [i for i in images if is_video(i)] == []
    assert is_frame_video([1]) and is_frame_video(folder) and is_frame_video({"path": str(folder)})
    assert (
        not is_frame_video("clip.mp4")
        and not is_frame_video(str(tmp_path / "gone"))
        and not is_frame_video(3)
    )


# -- urls and audio ------------------------------------------------------------------------------


def test_media_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert media_url("clips/a.mp4") == f"file://{tmp_path / 'clips' / 'a.mp4'}"
    assert media_url(Path("b.mp4")) == f"file://{tmp_path / 'b.mp4'}"
    assert media_url("https://x.test/c.mp4") == "https://x.test/c.mp4"
    assert decode_data_uri(media_url(b"\x01\x02")) == ("application/octet-stream", b"\x01\x02")
    with pytest.raises(TypeError, match="cannot turn a int into a URL"):
        media_url(3)


def test_audio_arrays_become_wav_and_stereo_keeps_its_channels() -> None:
    stereo = np.array([[0.0, 1.0], [-1.0, 0.5]], dtype=np.float32)
    mime, data = decode_data_uri(audio_url({"array": stereo, "sampling_rate": 16000}))
    assert mime == "audio/wav"
    with wave.open(io.BytesIO(data)) as reader:
        assert (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) == (16000, 2, 2)
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
    assert pcm.tolist() == [0, 32767, -32767, 16384]
    assert audio_url("https://x.test/a.wav") == "https://x.test/a.wav"


def test_importing_media_loads_no_media_library() -> None:
    import subprocess
    import sys

    code = "import sys, lmms_eval.media; print(sorted(m for m in ('PIL', 'numpy', 'av') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
