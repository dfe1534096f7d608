"""The chat content part of a ``doc_to_visual`` item: :func:`content_part`.

Tasks written for the simple layout return visuals (PIL images, paths, URLs, dicts); chat models
get them as ``{"type": "image" | "video" | "audio", "url": ...}`` parts. The rule (the published
package's, with ``.webm`` read as a video):

* a dict with ``video_start`` / ``video_end``: a video clip (its ``url``, ``path`` or ``video``,
  and the two times as ``start_time`` / ``end_time``);
* a dict with ``array`` and ``sampling_rate`` (the ``datasets`` ``Audio`` feature): audio;
* any other dict: its ``type`` (default ``video``), its ``url`` (else ``path``, else the dict);
* a string: an image or audio by its suffix (:data:`~lmms_eval.media.image.IMAGE_SUFFIXES`,
  :data:`~lmms_eval.media.audio.AUDIO_SUFFIXES`; a query string is ignored), else a video;
* anything else (PIL images, arrays, bytes): an image.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.media.audio import AUDIO_SUFFIXES
from lmms_eval.media.image import IMAGE_SUFFIXES


def content_part(visual: Any) -> dict[str, Any]:
    """A ChatMessages content part for one visual (module doc)."""
    if isinstance(visual, dict):
        if "video_start" in visual or "video_end" in visual:
            url = visual.get("url") or visual.get("path") or visual.get("video")
            return {
                "type": "video",
                "url": url,
                "start_time": visual.get("video_start"),
                "end_time": visual.get("video_end"),
            }
        if "array" in visual and "sampling_rate" in visual:
            return {"type": "audio", "url": visual}
        kind = visual.get("type", "video")
        return {"type": kind, "url": visual.get("url", visual.get("path", visual))}
    if isinstance(visual, str):
        lowered = visual.lower().split("?")[0]
        if lowered.endswith(IMAGE_SUFFIXES):
            return {"type": "image", "url": visual}
        if lowered.endswith(AUDIO_SUFFIXES):
            return {"type": "audio", "url": visual}
        return {"type": "video", "url": visual}
    return {"type": "image", "url": visual}


__all__ = ["content_part"]
