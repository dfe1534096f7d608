"""Images: one loader (:func:`load_image`) and one encoder (:func:`encode_image_data_uri`).

Both take the image sources tasks produce: PIL images, paths (``str`` or ``PathLike``), bytes,
arrays, ``data:`` URIs, bare base64 text, and the ``{"bytes", "path"}`` dicts of the ``datasets``
``Image`` feature (``decode=False``). PIL and numpy are imported when an image is handled.

Encoding settings (read on every call, so a test or a run can change them):

* ``LMMS_IMAGE_ENCODE_FORMAT``: ``PNG`` (default), ``JPEG`` (``JPG``) or ``WEBP``, the format of
  images encoded from memory (an explicit ``image_format`` wins);
* ``LMMS_IMAGE_JPEG_QUALITY``: the JPEG and WEBP quality, default 85 (an explicit ``quality`` wins).
"""

from __future__ import annotations

import base64
import binascii
import io
import mimetypes
import os
import re
from typing import Any

from lmms_eval.media.errors import MediaError
from lmms_eval.media.urls import data_uri, decode_data_uri, is_remote

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
IMAGE_ENCODE_FORMATS = ("PNG", "JPEG", "WEBP")
ENCODE_FORMAT_ENV = "LMMS_IMAGE_ENCODE_FORMAT"
JPEG_QUALITY_ENV = "LMMS_IMAGE_JPEG_QUALITY"
DEFAULT_ENCODE_FORMAT = "PNG"
DEFAULT_JPEG_QUALITY = 85
# encoded images with these types are sent as they are
PASS_THROUGH_MIMES = ("image/png", "image/jpeg", "image/webp", "image/gif")
# magic numbers of the formats bare base64 text is accepted in (those passed through, BMP, TIFF)
_BASE64_MAGIC = (b"BM", b"II*\x00", b"MM\x00*")
_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_MIN_BASE64_LENGTH = 16


# -- settings ----------------------------------------------------------------------------------------


def normalise_image_format(fmt: str) -> str:
    """``"png"`` -> ``"PNG"``, ``"jpg"`` -> ``"JPEG"``; anything but PNG, JPEG, WEBP is a ValueError."""
    upper = fmt.strip().upper()
    if upper == "JPG":
        upper = "JPEG"
    if upper not in IMAGE_ENCODE_FORMATS:
        raise ValueError(
            f"unsupported image encode format {fmt!r} ({ENCODE_FORMAT_ENV}); "
            f"use one of {', '.join(IMAGE_ENCODE_FORMATS)}"
        )
    return upper


def image_encode_format(image_format: str | None = None) -> str:
    """``image_format``, else ``LMMS_IMAGE_ENCODE_FORMAT``, else PNG; normalised."""
    return normalise_image_format(image_format or os.environ.get(ENCODE_FORMAT_ENV) or DEFAULT_ENCODE_FORMAT)


def image_quality(quality: int | None = None) -> int:
    """``quality`` (when truthy), else ``LMMS_IMAGE_JPEG_QUALITY``, else 85."""
    if quality:
        return quality
    raw = os.environ.get(JPEG_QUALITY_ENV, str(DEFAULT_JPEG_QUALITY))
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{JPEG_QUALITY_ENV}={raw!r} is not an integer (JPEG/WEBP quality, 1-95)") from None


# -- sources -----------------------------------------------------------------------------------------


def _unwrap(source: Any) -> Any:
    """The bytes, else the path, else the url of a ``{"bytes", "path"}`` / ``{"url"}`` dict."""
    if isinstance(source, dict):
        return source.get("bytes") or source.get("path") or source.get("url")
    return source


def sniff_image_mime(data: bytes) -> str | None:
    """``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp`` from the magic number, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def base64_image_bytes(text: str) -> bytes | None:
    """The bytes of an image given as bare base64 text (PNG, JPEG, GIF, WEBP, BMP or TIFF), or None."""
    compact = "".join(text.split())
    if len(compact) < _MIN_BASE64_LENGTH or len(compact) % 4 or not _BASE64_TEXT.fullmatch(compact):
        return None
    try:
        data = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if sniff_image_mime(data) or data.startswith(_BASE64_MAGIC) else None


def _open_bytes(data: bytes, label: str) -> Any:
    from PIL import Image, UnidentifiedImageError

    try:
        return Image.open(io.BytesIO(data))
    except UnidentifiedImageError:
        raise MediaError(f"{label}: not an image PIL can read", "corrupt") from None


def _open_text(text: str) -> Any:
    """A PIL image from a path, a ``data:`` URI or bare base64 text."""
    if text.startswith("data:"):
        return _open_bytes(decode_data_uri(text)[1], f"data URI {text[:40]!r}...")
    if is_remote(text):
        raise MediaError(
            f"image URLs are not fetched: {text}; download the image and give its path", "unsupported"
        )
    if os.path.isfile(text):
        from PIL import Image, UnidentifiedImageError

        try:
            return Image.open(text)
        except UnidentifiedImageError:
            raise MediaError(f"image file '{text}' is not an image PIL can read", "corrupt") from None
    data = base64_image_bytes(text)
    if data is None:
        raise MediaError(f"image file not found: {text[:200]}", "missing")
    return _open_bytes(data, "base64 image text")


# -- loading -----------------------------------------------------------------------------------------


def load_image(source: Any) -> Any:
    """An RGB PIL image from a PIL image, a path, a ``data:`` URI, base64 text, bytes, an array, or
    a ``{"bytes", "path"}`` / ``{"url"}`` dict. ``http(s)`` URLs are not fetched (an error)."""
    from PIL import Image

    source = _unwrap(source)
    if isinstance(source, Image.Image):
        image = source
    elif isinstance(source, (bytes, bytearray)):
        image = _open_bytes(bytes(source), f"{len(source)} bytes")
    elif isinstance(source, (str, os.PathLike)):
        image = _open_text(os.fsdecode(source))
    elif hasattr(source, "__array__"):
        import numpy as np

        image = Image.fromarray(np.asarray(source))
    else:
        raise MediaError(f"cannot read a {type(source).__name__} as an image", "unsupported")
    return image if image.mode == "RGB" else image.convert("RGB")


# -- encoding ----------------------------------------------------------------------------------------


def encode_image(image: Any, fmt: str = DEFAULT_ENCODE_FORMAT, quality: int | None = None) -> bytes:
    """A PIL image or an array encoded in ``fmt`` (PNG, JPEG or WEBP; JPEG and WEBP at
    :func:`image_quality`). Modes the format cannot store are converted to RGB."""
    from PIL import Image

    img = image if isinstance(image, Image.Image) else Image.fromarray(_as_array(image))
    fmt = normalise_image_format(fmt)
    buffer = io.BytesIO()
    if fmt == "JPEG":
        if img.mode not in ("RGB", "L"):
            img = img.convert("RGB")
        img.save(buffer, format=fmt, quality=image_quality(quality))
    elif fmt == "WEBP":
        img.save(buffer, format=fmt, quality=image_quality(quality))
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


def encode_image_data_uri(image: Any, fmt: str = DEFAULT_ENCODE_FORMAT, quality: int | None = None) -> str:
    """An image as a ``data:image/...;base64,`` URI; ``http(s)`` URLs and ``data:`` URIs pass through.

    Takes what :func:`load_image` takes. PNG, JPEG, WEBP and GIF files, bytes and base64 text are
    sent as they are (their bytes unchanged); other encoded images and in-memory images are
    encoded in ``fmt`` (see :func:`encode_image`). A missing file is a FileNotFoundError.
    """
    image = _unwrap(image)
    if isinstance(image, os.PathLike):
        image = os.fspath(image)
    if isinstance(image, str):
        if image.startswith("data:") or is_remote(image):
            return image
        decoded = None if os.path.isfile(image) else base64_image_bytes(image)
        if decoded is None:
            with open(image, "rb") as handle:
                data = handle.read()
            mime = sniff_image_mime(data) or mimetypes.guess_type(image)[0]
            if mime in PASS_THROUGH_MIMES:
                return data_uri(mime, data)
            decoded = data
        image = decoded
    if isinstance(image, (bytes, bytearray)):
        mime = sniff_image_mime(bytes(image))
        if mime is not None:
            return data_uri(mime, bytes(image))
        from PIL import Image

        image = Image.open(io.BytesIO(bytes(image)))
    return data_uri(f"image/{normalise_image_format(fmt).lower()}", encode_image(image, fmt, quality))


__all__ = [
    "DEFAULT_ENCODE_FORMAT",
    "DEFAULT_JPEG_QUALITY",
    "ENCODE_FORMAT_ENV",
    "IMAGE_ENCODE_FORMATS",
    "IMAGE_SUFFIXES",
    "JPEG_QUALITY_ENV",
    "base64_image_bytes",
    "encode_image",
    "encode_image_data_uri",
    "image_encode_format",
    "image_quality",
    "load_image",
    "normalise_image_format",
    "sniff_image_mime",
]
