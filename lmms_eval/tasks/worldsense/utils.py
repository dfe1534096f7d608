"""WorldSense: four-option questions on videos whose sound matters (speech, music, events).

Prompt (published): a fixed instruction, the question and the options (``candidates``, already
lettered "A. ..."), one per line. The video goes to every model; its audio track goes as a second
input (``doc_to_audio``: the track decoded to 16 kHz mono) to the models whose entry in
``lmms_eval_specific_kwargs`` sets ``audio: true`` (the audio-visual backends). For the others the
track is dropped, with one notice per run.

Scoring: ``worldsense_score`` is 100 when the option letter read by the MMMU parser
(:func:`lmms_eval.scoring.mmmu.parse_choice`), or A when it finds none (as published), is the gold
one, else 0; the mean is the published percentage.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.mmmu import parse_choice
from lmms_eval.scoring.video import find_video, video_folders

logger = logging.getLogger(__name__)

DATASET = "lmms-lab/worldsense"
CACHE_DIR = "WorldSense"
AUDIO_RATE = 16000
INSTRUCTION = (
    "Carefully watch this video and pay attention to every detail. Based on your observations, select "
    "the best option that accurately addresses the question.\n"
    "These are the frames of a video and the corresponding audio. Select the best answer to the "
    "following multiple-choice question based on the video. Respond with only the letter (A, B, C, "
    "or D) of the correct option.\n"
)
_noticed: set[str] = set()  # one notice per run that the audio track is dropped


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    return [find_video(str(doc["video_path"]), video_folders(DATASET, CACHE_DIR), subdirs=("", "videos"))]


def doc_to_audio(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[Any]:
    """The video's audio track (``{"array", "sampling_rate"}``) for audio-capable models, else none."""
    if not (lmms_eval_specific_kwargs or {}).get("audio"):
        if "dropped" not in _noticed:
            _noticed.add("dropped")
            logger.warning(
                "worldsense: this model takes no audio, so the videos' audio tracks are left out "
                "(audio-capable models set audio: true in the task's lmms_eval_specific_kwargs)"
            )
        return []
    from lmms_eval.media import load_audio

    return [load_audio(doc_to_visual(doc)[0], sampling_rate=AUDIO_RATE).as_dict()]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    options = "\n".join(str(option) for option in doc["candidates"])
    return f"{INSTRUCTION}{doc['question']}\n{options}\n"


def option_texts(candidates: list[Any]) -> list[str]:
    """The option texts without their "A. " prefixes."""
    return [str(c)[3:] if str(c)[1:3] == ". " else str(c) for c in candidates]


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    letter = parse_choice(str(results[0]) if results else "", option_texts(list(doc["candidates"]))) or "A"
    return {"worldsense_score": 100.0 if letter == str(doc["answer"]).strip().upper() else 0.0}


# The published package's names for these helpers: task YAMLs written for it reference them.
worldsense_doc_to_text = doc_to_text
worldsense_doc_to_visual = doc_to_visual
worldsense_process_results = process_results
