"""Documents in sample records: JSON-safe copies with every media object replaced by a reference.

:func:`doc_for_record` copies a dataset document for the ``doc`` field of a samples line. Text,
numbers and nested lists and mappings stay as they are (long texts too); media become small
mappings marked ``"_media"``:

===========================================  ====================================================
in the document                              in the record
===========================================  ====================================================
a PIL image                                  ``{"_media": "image", "sha256", "bytes", "width",
                                             "height", "format", "path"?}``
raw bytes, or ``{"bytes": ..., "path": ...}``  ``{"_media": kind, "sha256", "bytes", "path"?}``
(the ``datasets`` Image / Audio / Video      (kind from the bytes' signature: ``image``, ``audio``,
storage layout)                              ``video``, else ``bytes``; images add width, height
                                             and format)
``{"array": ..., "sampling_rate": ...}``     ``{"_media": "audio", "sha256", "seconds",
(decoded audio)                              "sampling_rate", "path"?}``
a numpy array                                ``{"_media": "array", "shape", "dtype", "sha256"}``
a string naming an existing media file       ``{"_media": "image"|"video"|"audio", "path",
(by extension, see ``MEDIA_EXTENSIONS``)     "bytes", "sha256" or "sha256_head"}``
===========================================  ====================================================

Hashes:

* ``bytes`` and ``sha256`` describe the bytes the ``format`` names. A PIL image read from a file
  (PIL's ``filename``) is the file; an image made in memory is hashed as its PNG encoding
  (compress level 1; the same pixels give the same hash with the same Pillow and zlib). Documents
  of a ``datasets`` dataset are read through :class:`DocRecorder`, which takes the stored bytes of
  Image / Audio / Video columns without decoding them: their hash is the hash of the original file.
* Files up to ``FULL_HASH_LIMIT`` (32 MiB) are hashed whole (``sha256``); larger files (videos)
  get ``sha256_head``, the hash of their first MiB, which with ``bytes`` (the size) tells files
  apart cheaply. File hashes are remembered by path, size and modification time, so a video shared
  by many documents is read once.

:func:`doc_hash` is the ``doc_hash`` of every samples line: the SHA-256 of the document's canonical
JSON (the document the task scores, media columns left out unless the task scores with them),
computed as in every earlier version so hashes match older files.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import os
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from lmms_eval.utils import canonical_json, hash_string

MEDIA_KEY = "_media"
FULL_HASH_LIMIT = 32 * 1024 * 1024
HEAD_BYTES = 1024 * 1024
IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff"})
VIDEO_EXTENSIONS = frozenset({".mp4", ".webm", ".mkv", ".avi", ".mov"})
AUDIO_EXTENSIONS = frozenset({".wav", ".mp3", ".flac", ".ogg", ".m4a"})
MEDIA_EXTENSIONS = IMAGE_EXTENSIONS | VIDEO_EXTENSIONS | AUDIO_EXTENSIONS
_MAX_PATH = 4096

# (signature test, kind) for raw bytes
_SIGNATURES: tuple[tuple[Callable[[bytes], bool], str], ...] = (
    (lambda b: b.startswith(b"\x89PNG\r\n\x1a\n"), "image"),
    (lambda b: b.startswith(b"\xff\xd8\xff"), "image"),
    (lambda b: b.startswith((b"GIF87a", b"GIF89a")), "image"),
    (lambda b: b.startswith(b"RIFF") and b[8:12] == b"WEBP", "image"),
    (lambda b: b.startswith(b"BM"), "image"),
    (lambda b: b.startswith((b"II*\x00", b"MM\x00*")), "image"),
    (lambda b: b.startswith(b"RIFF") and b[8:12] == b"WAVE", "audio"),
    (lambda b: b.startswith((b"ID3", b"fLaC", b"OggS", b"\xff\xfb", b"\xff\xf3")), "audio"),
    (lambda b: b[4:8] == b"ftyp", "video"),
    (lambda b: b.startswith(b"\x1aE\xdf\xa3"), "video"),
    (lambda b: b.startswith(b"RIFF") and b[8:12] == b"AVI ", "video"),
)


def doc_hash(doc: Any) -> str:
    """SHA-256 of the document's canonical JSON (the ``doc_hash`` of samples lines)."""
    return hash_string(canonical_json(doc))


def doc_for_record(doc: Any) -> Any:
    """A JSON-safe copy of ``doc`` with media replaced by references (see the module docstring)."""
    return _safe(doc)


def _safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return file_ref(value) or value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes_ref(bytes(value))
    if isinstance(value, Mapping):
        return _mapping(value)
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_safe(v) for v in value), key=repr)
    if _is_image(value):
        return image_ref(value)
    return _other(value)


def _mapping(value: Mapping[Any, Any]) -> Any:
    if "bytes" in value and set(value) <= {"bytes", "path"}:
        data, path = value.get("bytes"), value.get("path")
        if isinstance(data, (bytes, bytearray)):
            return bytes_ref(bytes(data), path if isinstance(path, str) else None)
        if data is None and isinstance(path, str):
            return file_ref(path) or {MEDIA_KEY: _kind_of_path(path) or "file", "path": path}
    if "array" in value and "sampling_rate" in value:
        return audio_ref(value)
    return {str(k): _safe(v) for k, v in value.items()}


def _other(value: Any) -> Any:
    """Numpy arrays and scalars, tensors, dates; anything else as its text."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        return _safe(value.item())
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "tobytes"):
        return array_ref(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def _is_image(value: Any) -> bool:
    return hasattr(value, "size") and hasattr(value, "mode") and hasattr(value, "save")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _kind_of_path(path: str) -> str | None:
    dot = path.rfind(".", max(0, len(path) - 6))  # the longest extension has 5 characters with its dot
    if dot < 0:
        return None
    ext = path[dot:].lower()
    if ext in IMAGE_EXTENSIONS:
        return "image"
    if ext in VIDEO_EXTENSIONS:
        return "video"
    if ext in AUDIO_EXTENSIONS:
        return "audio"
    return None


def _sniff(data: bytes) -> str | None:
    head = data[:16]
    return next((kind for test, kind in _SIGNATURES if test(head)), None)


def _image_header(source: Any) -> dict[str, Any]:
    """Width, height and format from an image's header (the pixels are not decoded)."""
    try:
        from PIL import Image

        with Image.open(source) as image:
            return {"width": image.width, "height": image.height, "format": image.format}
    except Exception:  # not an image PIL can read (or no PIL): the hash and size still identify it
        return {}


def bytes_ref(data: bytes, path: str | None = None) -> dict[str, Any]:
    """The reference of media held as bytes (``path``: where the bytes came from, if known)."""
    kind = _sniff(data) or (_kind_of_path(path) if path else None) or "bytes"
    ref: dict[str, Any] = {MEDIA_KEY: kind, "sha256": _sha256(data), "bytes": len(data)}
    if kind == "image":
        ref.update(_image_header(io.BytesIO(data)))
    if path:
        ref["path"] = path
    return ref


def image_ref(image: Any) -> dict[str, Any]:
    """The reference of a PIL image: its file when it was read from one, else its PNG encoding."""
    path = getattr(image, "filename", "") or ""
    if isinstance(path, str) and path and os.path.isfile(path):
        ref = file_ref(path, check_extension=False)
        if ref is not None:
            ref.update({MEDIA_KEY: "image", "width": image.width, "height": image.height})
            ref.setdefault("format", image.format)
            return ref
    buffer = io.BytesIO()
    try:
        image.save(buffer, format="PNG", compress_level=1)
    except (OSError, ValueError):  # a mode PNG cannot store (e.g. CMYK)
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG", compress_level=1)
    data = buffer.getvalue()
    return {
        MEDIA_KEY: "image",
        "sha256": _sha256(data),
        "bytes": len(data),
        "width": image.width,
        "height": image.height,
        "format": "PNG",
    }


def audio_ref(audio: Mapping[str, Any]) -> dict[str, Any]:
    """The reference of decoded audio (``{"array", "sampling_rate", "path"?}``)."""
    array, rate = audio["array"], audio["sampling_rate"]
    if hasattr(array, "tobytes"):
        import numpy as np

        array = np.ascontiguousarray(array)
        data, frames = array.tobytes(), (array.shape[-1] if array.ndim else 1)
    else:
        data, frames = canonical_json(array).encode("utf-8"), len(array)
    ref: dict[str, Any] = {MEDIA_KEY: "audio", "sha256": _sha256(data)}
    ref["seconds"] = round(frames / rate, 6) if isinstance(rate, (int, float)) and rate > 0 else None
    ref["sampling_rate"] = rate
    path = audio.get("path")
    if isinstance(path, str) and path:
        ref["path"] = path
    return ref


def array_ref(array: Any) -> dict[str, Any]:
    """The reference of a numpy array: shape, dtype and the hash of its (C-order) bytes."""
    import numpy as np

    contiguous = np.ascontiguousarray(array)
    return {
        MEDIA_KEY: "array",
        "shape": list(contiguous.shape),
        "dtype": str(contiguous.dtype),
        "sha256": _sha256(contiguous.tobytes()),
    }


def file_ref(path: str, check_extension: bool = True) -> dict[str, Any] | None:
    """The reference of a media file, or ``None`` when ``path`` names no such file.

    Only strings ending in a media extension (``MEDIA_EXTENSIONS``) are looked up on disk, so text
    fields cost one string test.
    """
    if len(path) > _MAX_PATH or "\n" in path:
        return None
    kind = _kind_of_path(path)
    if check_extension and kind is None:
        return None
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return None
    if not os.path.isfile(path):
        return None
    ref = {MEDIA_KEY: kind or "file", "path": path, **_file_digest(path, stat.st_size, stat.st_mtime_ns)}
    if kind == "image":
        ref.update(_image_header(path))
    return ref


@lru_cache(maxsize=4096)
def _file_digest(path: str, size: int, mtime_ns: int) -> dict[str, Any]:
    """``bytes`` and ``sha256`` (whole file) or ``sha256_head`` (first MiB of a large file)."""
    digest = hashlib.sha256()
    limit = size if size <= FULL_HASH_LIMIT else HEAD_BYTES
    try:
        with open(path, "rb") as handle:
            while limit > 0:
                chunk = handle.read(min(limit, 1024 * 1024))
                if not chunk:
                    break
                digest.update(chunk)
                limit -= len(chunk)
    except OSError:
        return {"bytes": size}
    key = "sha256" if size <= FULL_HASH_LIMIT else "sha256_head"
    return {"bytes": size, key: digest.hexdigest()}


class DocRecorder:
    """``doc_hash`` and record copy of the docs of one split, each computed once.

    ``docs`` is the split the model sees (a ``datasets`` dataset or a list). For a dataset with
    Image / Audio / Video columns the stored bytes of those columns are read without decoding (the
    reference hashes the original file bytes). A document is written once per filter chain:
    ``uses`` is how many times each doc is asked for, and its entry is dropped after the last, so
    the cache only holds documents still to be written.
    """

    def __init__(self, docs: Any, uses: int = 1) -> None:
        self.docs = docs
        self.uses = max(1, uses)
        self._stored = _stored_media(docs)
        self._cache: dict[int, tuple[str, Any, int]] = {}

    def get(self, doc_id: int, doc: Any, uses: int | None = None) -> tuple[str, Any]:
        """``(doc_hash(doc), record copy of the doc)``; ``doc`` is the document as the task scores it."""
        cached = self._cache.pop(doc_id, None)
        if cached is None:
            cached = (doc_hash(doc), doc_for_record(self._full(doc_id, doc)), uses or self.uses)
        left = cached[2] - 1
        if left > 0:
            self._cache[doc_id] = (cached[0], cached[1], left)
        return cached[0], cached[1]

    def _full(self, doc_id: int, doc: Any) -> Any:
        """``doc`` with the stored bytes of the media columns put back, in column order."""
        if self._stored is None or not isinstance(doc, Mapping):
            return doc
        view, columns = self._stored
        try:
            stored = view[doc_id].to_pylist()[0]
        except (IndexError, KeyError, AttributeError):
            return doc
        merged = {name: stored[name] if name in stored else doc.get(name) for name in columns}
        merged.update({k: v for k, v in doc.items() if k not in merged})
        return merged


def _stored_media(docs: Any) -> tuple[Any, list[str]] | None:
    """An undecoding (Arrow) view of the media columns of a ``datasets`` dataset, and its columns."""
    if not (hasattr(docs, "features") and hasattr(docs, "select_columns") and hasattr(docs, "with_format")):
        return None
    from lmms_eval.data.load import media_columns

    media = media_columns(docs)
    if not media:
        return None
    return docs.select_columns(media).with_format("arrow"), list(docs.column_names)
