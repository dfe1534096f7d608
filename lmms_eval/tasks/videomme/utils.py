"""Video-MME: four-option questions on a video, with or without its subtitles.

Prompt (published): a fixed instruction, the question, the options (already lettered "A. ..."),
then a line break and the post prompt. With subtitles, "This video's subtitles are listed below: "
and the subtitles of the sampled frames come first. Scoring: the option letter of the answer
against the gold letter; values are percentages (0 or 100), so the mean is the published
``videomme_perception_score``. Breakdown keys by duration, domain and task type.
``videomme_long`` and ``videomme_long_w_subtitle`` keep the long videos (:func:`process_docs_long`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.scoring.published import published_videomme_letter
from lmms_eval.scoring.video import breakdown_key, choice_letter, find_video, video_folders

logger = logging.getLogger(__name__)

DATASET = "lmms-eval/Video-MME"
CACHE_DIR = "videomme"
INSTRUCTION = (
    "Select the best answer to the following multiple-choice question based on the video and the "
    "subtitles. Respond with only the letter (A, B, C, or D) of the correct option."
)
SUBTITLE_HEADER = "This video's subtitles are listed below: "
NO_SUBTITLES = "No subtitles available"
DURATIONS = ("short", "medium", "long")
_TAG = re.compile(r"<[^>]+>")
_SRT_TIME = re.compile(r"(\d+):(\d+):(\d+)[,.](\d+)\s*-->\s*(\d+):(\d+):(\d+)[,.](\d+)")


def process_docs_long(dataset: Any) -> Any:
    """The questions whose ``duration`` is exactly ``"long"`` (30-60 min videos)."""
    return dataset.filter(lambda doc: doc["duration"] == "long")


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """The question's video: ``data/<videoID>.mp4`` (also ``.MP4`` / ``.mkv``)."""
    folders = video_folders(DATASET, CACHE_DIR)
    return [find_video(f"{doc['videoID']}.mp4", folders, subdirs=("data", ""))]


def _question_block(doc: Mapping[str, Any]) -> str:
    options = "\n".join(str(option) for option in doc["options"])
    return f"{INSTRUCTION}\n{doc['question']}\n{options}\n"


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt') or ''}{_question_block(doc)}{kwargs.get('post_prompt') or ''}"


# -- subtitles ------------------------------------------------------------------------------------


def _seconds(h: str, m: str, s: str, ms: str) -> float:
    return int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 10 ** len(ms)


def parse_srt(text: str) -> list[tuple[float, float, str]]:
    """``(start_s, end_s, text)`` of each cue of a SubRip file, tags removed, lines joined by a space."""
    cues = []
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n").strip()):
        lines = block.strip().split("\n")
        timing = next((i for i, line in enumerate(lines) if _SRT_TIME.search(line)), None)
        if timing is None:
            continue
        match = _SRT_TIME.search(lines[timing])
        assert match is not None
        start, end = _seconds(*match.groups()[:4]), _seconds(*match.groups()[4:])
        words = " ".join(_TAG.sub("", line).strip() for line in lines[timing + 1 :])
        if words.strip():
            cues.append((start, end, " ".join(words.split())))
    return cues


def _frame_times(video: str, frame_num: int) -> list[float] | None:
    """The times (s) of ``frame_num`` frames sampled uniformly from ``video``; None when unreadable."""
    from lmms_eval.media.video import sample_frame_indices

    try:
        import av

        with av.open(video) as container:
            stream = container.streams.video[0]
            rate = float(stream.average_rate or stream.guessed_rate or 0)
            total = stream.frames
            if not total and stream.duration and stream.time_base:
                total = int(float(stream.duration * stream.time_base) * rate)
    except Exception as exc:  # a missing or broken video: every cue is used
        logger.warning("videomme: cannot read %s for subtitle timing (%s); using every subtitle", video, exc)
        return None
    if not rate or not total:
        return None
    return [index / rate for index in sample_frame_indices(total, frame_num)]


def select_subtitles(cues: Sequence[tuple[float, float, str]], times: Sequence[float] | None) -> list[str]:
    """The cues whose ``[start, end)`` holds one of ``times`` (each cue once, in order); all for None."""
    if times is None:
        return [text for _, _, text in cues]
    return [text for start, end, text in cues if any(start <= t < end for t in times)]


def subtitle_text(doc: Mapping[str, Any], frame_num: int) -> str:
    """The subtitle lines of the doc's sampled frames, or ``NO_SUBTITLES`` without a subtitle file."""
    folders = video_folders(DATASET, CACHE_DIR)
    path = find_video(f"{doc['videoID']}.srt", folders, subdirs=("subtitle", ""), suffixes_optional=False)
    if not os.path.isfile(path):
        return NO_SUBTITLES
    with open(path, encoding="utf-8-sig", errors="replace") as handle:
        cues = parse_srt(handle.read())
    times = _frame_times(doc_to_visual(doc)[0], frame_num) if frame_num > 0 else None
    return "\n".join(select_subtitles(cues, times))


def doc_to_text_subtitle(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    subtitles = subtitle_text(doc, int(kwargs.get("frame_num") or 0))
    body = f"{SUBTITLE_HEADER}\n{subtitles}\n{_question_block(doc)}"
    return f"{kwargs.get('pre_prompt') or ''}{body}{kwargs.get('post_prompt') or ''}"


# -- scoring --------------------------------------------------------------------------------------


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """100.0 or 0.0 under ``videomme_perception_score`` and the doc's duration, domain and task type
    (the published letter rule, :func:`published_videomme_letter`), and under
    ``videomme_perception_score_strict`` (ours, :func:`choice_letter`)."""
    gold = str(doc["answer"]).strip().upper()
    value = 100.0 if published_videomme_letter(results[0]) == gold else 0.0
    strict = 100.0 if choice_letter(results[0], 4) == gold else 0.0
    out = {"videomme_perception_score": value, "videomme_perception_score_strict": strict}
    duration = str(doc.get("duration", "")).strip().lower()
    if duration in DURATIONS:
        out[f"videomme_{duration}"] = value
    if doc.get("domain"):
        out[f"videomme_domain_{breakdown_key(doc['domain'])}"] = value
    if doc.get("task_type"):
        out[f"videomme_task_{breakdown_key(doc['task_type'])}"] = value
    return out


# The published package's names for these helpers: task YAMLs written for it reference them.
videomme_doc_to_text = doc_to_text
videomme_doc_to_text_subtitle = doc_to_text_subtitle
videomme_doc_to_visual = doc_to_visual
videomme_process_docs_long = process_docs_long
videomme_process_results = process_results
