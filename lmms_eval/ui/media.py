"""Media of sample documents: the references of :mod:`lmms_eval.results.docs`, served from files.

A document's media are its mappings marked ``"_media"``, numbered in document order. One with a
``path`` is served from that file when it lies inside the logs folder (a relative path is tried
against the run's folder, then the logs folder); every other file is refused. Documents whose images
are drawn by code hold a spec instead of media: for such tasks (``demo_shapes``) the image is drawn
from the spec again (:data:`RENDERERS`).

A file's media type comes from its extension through the allow-list :data:`INLINE_TYPES` (images,
audio, video; never SVG, which can hold script), never from its content; :func:`served_type` gives
every other file as an attachment (text as ``text/plain``, the rest as ``application/octet-stream``).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lmms_eval.results.docs import MEDIA_KEY
from lmms_eval.results.samples import SampleRecord
from lmms_eval.ui.runs import number
from lmms_eval.ui.security import Refused, confine

#: extension -> media type of the files served inline (shown by the browser): images, audio, video
INLINE_TYPES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".avif": "image/avif",
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".flac": "audio/flac",
    ".m4a": "audio/mp4",
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".webm": "video/webm",
    ".ogv": "video/ogg",
    ".mov": "video/quicktime",
}
#: extensions of text files, downloaded as ``text/plain`` (``.html`` and ``.svg`` are not among them)
TEXT_SUFFIXES = frozenset({".json", ".jsonl", ".txt", ".log", ".yaml", ".yml", ".csv", ".tsv", ".md"})
TEXT_CHARS = 400  # strings of a table row are cut to this length (the detail view has them whole)
KINDS = ("image", "video", "audio")


def _render_shapes(doc: Any) -> bytes | None:
    if not isinstance(doc, dict) or not isinstance(doc.get("objects"), list):
        return None
    from lmms_eval.demo.shapes import render

    buffer = io.BytesIO()
    render(doc).save(buffer, format="PNG")
    return buffer.getvalue()


#: task -> a function drawing a document's image from its spec (PNG bytes), or None if it cannot
RENDERERS: dict[str, Callable[[Any], bytes | None]] = {"demo_shapes": _render_shapes}


def media_refs(value: Any) -> Iterator[dict[str, Any]]:
    """The media references in a document, in document order."""
    if isinstance(value, dict):
        if MEDIA_KEY in value:
            yield value
            return
        for item in value.values():
            yield from media_refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from media_refs(item)


def media_list(task: str, doc: Any) -> list[dict[str, Any]]:
    """What the front end shows of a document's media: ``n``, ``kind``, size, and whether it can be served."""
    refs = [r for r in media_refs(doc) if r.get(MEDIA_KEY) in KINDS]
    out = [
        {
            "n": n,
            "kind": ref[MEDIA_KEY],
            "width": ref.get("width"),
            "height": ref.get("height"),
            "servable": isinstance(ref.get("path"), str),
            "name": Path(ref["path"]).name if isinstance(ref.get("path"), str) else None,
        }
        for n, ref in enumerate(refs)
    ]
    if not out and task in RENDERERS and isinstance(doc, dict) and isinstance(doc.get("objects"), list):
        out.append({"n": 0, "kind": "image", "servable": True, "drawn": True, "name": None})
    return out


def served_type(path: Path) -> tuple[str, bool]:
    """The media type a file of the logs folder is served with, by its extension, and whether it is
    shown inline (images, audio, video of :data:`INLINE_TYPES`) rather than downloaded."""
    suffix = path.suffix.lower()
    if suffix in INLINE_TYPES:
        return INLINE_TYPES[suffix], True
    if suffix in TEXT_SUFFIXES:
        return "text/plain; charset=utf-8", False
    return "application/octet-stream", False


def media_file(root: Path, run_folder: Path, ref: dict[str, Any]) -> Path:
    """The file of a reference, confined to ``root`` (a relative path: the run's folder first)."""
    path = ref.get("path")
    if not isinstance(path, str):
        raise Refused(404, "this media has no file (only its hash was recorded)")
    if "\x00" not in path and not Path(path).is_absolute():
        try:
            return confine(root, run_folder / path, "media file")
        except Refused:
            pass
    return confine(root, path, "media file")


def media_content(root: Path, run_folder: Path, task: str, doc: Any, n: int) -> tuple[bytes | Path, str]:
    """The bytes (drawn) or the file (recorded) of a document's ``n``-th medium, with its media type."""
    refs = [r for r in media_refs(doc) if r.get(MEDIA_KEY) in KINDS]
    if not refs and task in RENDERERS:
        drawn = RENDERERS[task](doc) if n == 0 else None
        if drawn is None:
            raise Refused(404, f"no image {n} in this document")
        return drawn, "image/png"
    if not 0 <= n < len(refs):
        raise Refused(404, f"no medium {n} in this document; it has {len(refs)}")
    path = media_file(root, run_folder, refs[n])
    return path, served_type(path)[0]


def shorten(value: Any, limit: int = TEXT_CHARS) -> Any:
    """``value`` with long strings cut (for table rows)."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, dict):
        return {k: shorten(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten(v, limit) for v in value[:50]]
    return value


def sample_row(task: str, line: int, record: SampleRecord, status: str, full: bool = False) -> dict[str, Any]:
    """One sample as the front end shows it (strings cut unless ``full``)."""
    cut: Callable[[Any], Any] = (lambda v: v) if full else shorten
    return {
        "line": line,
        "doc_id": record.doc_id,
        "doc_hash": record.doc_hash,
        "status": status,
        "input": cut(record.input),
        "target": cut(record.target),
        "resps": cut(record.resps),
        "filtered_resps": cut(record.filtered_resps),
        "filter": record.filter,
        "scores": {k: n for k, v in record.scores().items() if (n := number(v)) is not None},
        "metrics": cut(record.metrics) if full else None,
        "failed": bool(record.failed),
        "errors": record.errors,
        "doc": cut(record.doc),
        "media": media_list(task, record.doc),
    }
