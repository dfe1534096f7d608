"""Images as bytes, base64 or ``data:`` URLs, for model files written for the published package.

Thin names over :mod:`lmms_eval.media.image` (the one encoder of this package): an in-memory
image is encoded in ``image_format``; a path, URL, bytes or base64 text is read as
:func:`~lmms_eval.media.image.load_image` reads it.
"""

from __future__ import annotations

import base64
from typing import Any

from lmms_eval.media.image import encode_image, load_image, normalise_image_format

ImageInput = Any  # a PIL image, an array, a path, bytes or base64 text


def _pil(image: ImageInput, convert_rgb: bool, copy_if_pil: bool) -> Any:
    from PIL import Image

    if isinstance(image, Image.Image):
        img = image.copy() if copy_if_pil else image
    elif hasattr(image, "__array__"):
        import numpy as np

        img = Image.fromarray(np.asarray(image))
    else:
        img = load_image(image)
    return img.convert("RGB") if convert_rgb and img.mode != "RGB" else img


def encode_image_to_bytes(
    image: ImageInput,
    *,
    image_format: str = "PNG",
    convert_rgb: bool = False,
    quality: int | None = None,
    copy_if_pil: bool = False,
) -> bytes:
    """``image`` encoded as ``image_format`` (PNG, JPEG or WEBP)."""
    return encode_image(_pil(image, convert_rgb, copy_if_pil), image_format, quality)


def encode_image_to_base64(
    image: ImageInput,
    *,
    image_format: str = "PNG",
    convert_rgb: bool = False,
    quality: int | None = None,
    copy_if_pil: bool = False,
    cache: Any = None,
    use_path_cache: bool = True,
) -> str:
    """Base64 text of :func:`encode_image_to_bytes` (``cache`` and ``use_path_cache`` are accepted
    for compatibility; encoding is not cached here)."""
    del cache, use_path_cache
    data = encode_image_to_bytes(
        image, image_format=image_format, convert_rgb=convert_rgb, quality=quality, copy_if_pil=copy_if_pil
    )
    return base64.b64encode(data).decode("ascii")


def encode_image_to_data_url(
    image: ImageInput,
    *,
    image_format: str = "PNG",
    mime_type: str | None = None,
    convert_rgb: bool = False,
    quality: int | None = None,
    copy_if_pil: bool = False,
    cache: Any = None,
    use_path_cache: bool = True,
) -> str:
    """``data:<mime>;base64,...`` of ``image``; the MIME type follows ``image_format`` unless given."""
    payload = encode_image_to_base64(
        image,
        image_format=image_format,
        convert_rgb=convert_rgb,
        quality=quality,
        copy_if_pil=copy_if_pil,
        cache=cache,
        use_path_cache=use_path_cache,
    )
    mime = mime_type or f"image/{normalise_image_format(image_format).lower()}"
    return f"data:{mime};base64,{payload}"


__all__ = ["ImageInput", "encode_image_to_base64", "encode_image_to_bytes", "encode_image_to_data_url"]
