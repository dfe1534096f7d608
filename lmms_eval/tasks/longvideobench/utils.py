"""LongVideoBench validation: up to five options ``option0``-``option4`` ("N/A" marks an unused
one), the gold index in ``correct_choice``.

Prompt (published): the question, the options as ``A. ...`` lines, then the post prompt on its own
line. Scoring: the option letter by the MMMU parser or the whole answer naming an option's text;
``lvb_acc`` is the share correct, with breakdowns by duration group and question category.

Interleaved input (``longvideobench_val_i``, ``insert_interleave_subtitles``): up to 16 frames as
images, an ``<image>`` line each, with the subtitle lines between them, before the question.
Frames (published rule, found by running the published functions on synthetic docs): one per
whole second of ``duration`` up to 16 s (at 0, 1, 2, ... s), else 16 at ``i * duration / 16``; the
images are video frames ``i * int(duration * fps / count)``. Subtitles (``subtitles/<subtitle_path>``,
JSON cues ``{"start", "end", "line"}`` with ``H:MM:SS.mmm`` clocks, or ``{"timestamp": [start, end],
"text"}``, end None for "until the end"), their times less ``starting_timestamp_for_subtitles``: a
cue comes after the frames at or before its midpoint, and is shown only when a frame lies strictly
inside its span (a span under 1 s counts as the second around its midpoint).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_eval.api.doc_fields import media_part
from lmms_eval.media.video_decode import FrameSelection, decode_video
from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import breakdown_key, find_video, mmmu_style_choice, video_folders

DATASET = "longvideobench/LongVideoBench"
CACHE_DIR = "datasets/longvideobench"
OPTION_FIELDS = ("option0", "option1", "option2", "option3", "option4")
UNUSED_OPTION = "N/A"
MAX_FRAMES = 16
IMAGE_TOKEN = "<image>"
Cue = tuple[float, float, str]


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``videos/<video_path>``."""
    folders = video_folders(DATASET, CACHE_DIR)
    return [find_video(str(doc["video_path"]), folders, subdirs=("videos", ""), suffixes_optional=False)]


# -- interleaved frames and subtitles --------------------------------------------------------------


def frame_times(duration: float) -> list[float]:
    """The times (s) of the frames shown for a video of ``duration`` seconds (module doc)."""
    if duration <= MAX_FRAMES:
        return [float(t) for t in range(int(duration))]
    return [i * duration / MAX_FRAMES for i in range(MAX_FRAMES)]


@dataclass(frozen=True)
class _EvenFrames(FrameSelection):
    """``count`` frames ``i * int(duration * fps / count)`` (the last frame for any past the end)."""

    duration: float = 0.0
    count: int = 0

    def indices(self, timestamps: Sequence[float], video_fps: float | None) -> list[int]:
        step = int(self.duration * (video_fps or 0.0) / self.count) if self.count else 0
        return sorted({min(i * step, len(timestamps) - 1) for i in range(self.count)})


def doc_to_visual_interleaved(doc: Mapping[str, Any]) -> list[Any]:
    """The frames of :func:`frame_times` as RGB PIL images, one per ``<image>`` of the prompt."""
    from PIL import Image

    count = len(frame_times(float(doc["duration"])))
    if count == 0:
        return []
    video = decode_video(doc_to_visual(doc)[0], _EvenFrames(duration=float(doc["duration"]), count=count))
    step = int(float(doc["duration"]) * video.video_fps / count)
    by_index = {index: Image.fromarray(frame) for index, frame in zip(video.indices, video.frames)}
    return [by_index[min(i * step, video.total_frames - 1)] for i in range(count)]


def _clock_seconds(clock: str) -> float:
    """``H:MM:SS.mmm`` as seconds."""
    hours, minutes, seconds = str(clock).split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def _cue(entry: Mapping[str, Any], offset: float, duration: float) -> Cue:
    """``(start, end, text)`` of one subtitle entry, in seconds from ``offset``."""
    if "timestamp" in entry:
        start, end = entry["timestamp"]
        end = duration if end is None else end
        return float(start) - offset, float(end) - offset, str(entry["text"])
    start, end = _clock_seconds(entry["start"]), _clock_seconds(entry["end"])
    return start - offset, end - offset, str(entry["line"])


def interleave(times: Sequence[float], cues: Sequence[Cue]) -> list[str]:
    """``<image>`` for each frame time and the subtitle texts between them (module doc)."""
    items: list[str] = []
    shown = 0
    for start, end, text in cues:
        middle = (start + end) / 2
        while shown < len(times) and times[shown] <= middle:
            items.append(IMAGE_TOKEN)
            shown += 1
        if end - start < 1:
            start, end = middle - 0.5, middle + 0.5
        if any(start < t < end for t in times):
            items.append(text)
    return items + [IMAGE_TOKEN] * (len(times) - shown)


def subtitle_cues(doc: Mapping[str, Any]) -> list[Cue]:
    """The doc's subtitle cues (``subtitles/<subtitle_path>``)."""
    folders = video_folders(DATASET, CACHE_DIR)
    path = find_video(str(doc["subtitle_path"]), folders, subdirs=("subtitles", ""), suffixes_optional=False)
    with open(path, encoding="utf-8") as handle:
        entries = json.load(handle)
    offset, duration = float(doc.get("starting_timestamp_for_subtitles") or 0.0), float(doc["duration"])
    return [_cue(entry, offset, duration) for entry in entries]


def interleaved_items(doc: Mapping[str, Any]) -> list[str]:
    return interleave(frame_times(float(doc["duration"])), subtitle_cues(doc))


# -- prompt and scoring ------------------------------------------------------------------------------


def options_of(doc: Mapping[str, Any]) -> list[str]:
    """The used options in order (``None`` and "N/A" left out)."""
    values = [doc.get(field) for field in OPTION_FIELDS]
    return [str(v) for v in values if v is not None and str(v).strip() != UNUSED_OPTION]


def _question(doc: Mapping[str, Any], kwargs: Mapping[str, Any]) -> str:
    options = "\n".join(f"{UPPERCASE[i]}. {text}" for i, text in enumerate(options_of(doc)))
    return f"{doc['question']}\n{options}\n{kwargs.get('post_prompt') or ''}"


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The question block; with ``insert_interleave_subtitles``, the frames and subtitles first,
    one per line."""
    kwargs = lmms_eval_specific_kwargs or {}
    head = "\n".join(interleaved_items(doc)) + "\n" if kwargs.get("insert_interleave_subtitles") else ""
    return f"{kwargs.get('pre_prompt') or ''}{head}{_question(doc, kwargs)}"


def doc_to_messages_interleaved(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Chat models: the frames as image parts in place of the ``<image>`` lines, each subtitle line
    and then the question as text parts (the pre prompt first)."""
    kwargs = lmms_eval_specific_kwargs or {}
    frames = iter(doc_to_visual_interleaved(doc))
    content: list[dict[str, Any]] = []
    if kwargs.get("pre_prompt"):
        content.append({"type": "text", "text": str(kwargs["pre_prompt"])})
    for item in interleaved_items(doc):
        content.append(media_part(next(frames)) if item == IMAGE_TOKEN else {"type": "text", "text": item})
    content.append({"type": "text", "text": _question(doc, kwargs)})
    return [{"role": "user", "content": content}]


def doc_to_target(doc: Mapping[str, Any]) -> str:
    return UPPERCASE[int(doc["correct_choice"])]


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """``lvb_acc`` (1.0 or 0.0), also under the duration group and the question category."""
    correct = mmmu_style_choice(results[0], options_of(doc)) == doc_to_target(doc)
    value = 1.0 if correct else 0.0
    out = {"lvb_acc": value}
    if doc.get("duration_group") is not None:
        out[f"lvb_acc_duration_{int(doc['duration_group'])}"] = value
    if doc.get("question_category"):
        out[f"lvb_acc_{breakdown_key(doc['question_category'])}"] = value
    return out


# The published package's names for these helpers: task YAMLs written for it reference them.
longvideobench_doc_to_text = doc_to_text
longvideobench_doc_to_visual_i = doc_to_visual_interleaved
longvideobench_doc_to_visual_v = doc_to_visual
longvideobench_process_results = process_results
