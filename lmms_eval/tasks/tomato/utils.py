"""TOMATO: temporal reasoning questions (counting, direction, rotation, shape and trend, velocity
and frequency, visual cues) on short videos.

Prompt (published): a fixed instruction, the question in ``<question>`` tags and the options as a
letter -> option mapping in ``<options>`` tags. Scoring: ``tomato_score`` is 1 when the option
letter read by the MMMU parser (:func:`lmms_eval.scoring.mmmu.parse_choice`: a bracketed or
standalone letter, then option texts in long answers), or A when it finds none (as published), is
the gold one (``answer`` is the option's index); the mean is a fraction (0-1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.mmmu import parse_choice
from lmms_eval.scoring.video import find_video, video_folders

DATASET = "lmms-eval/TOMATO"
CACHE_DIR = "TOMATO"
INSTRUCTION = (
    "You will be provided with frames uniformly sampled from a video, the frames are provided in "
    "chronological order of the video. Analyze these frames and provide the answer to the question "
    "about the video content. Answer the multiple-choice question about the video content.\n\n"
    "You must use these frames to answer the multiple-choice question; do not rely on any externel "
    "knowledge or commonsense. \n\n"
)
CLOSING = (
    "Even if the information in these separate frames is not enough to answer the question, PLEASE "
    "TRY YOUR BEST TO GUESS AN ANSWER WHICH YOU THINK WOULD BE THE MOST POSSIBLE ONE BASED ON THE "
    "QUESTION. \n\nDO NOT GENERATE ANSWER SUCH AS 'NOT POSSIBLE TO DETERMINE.' \n"
)


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    return [find_video(str(doc["video_path"]), video_folders(DATASET, CACHE_DIR), subdirs=("", "videos"))]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    options = {UPPERCASE[i]: str(option) for i, option in enumerate(doc["options"])}
    return f"{INSTRUCTION}<question> \n{doc['question']} \n</question>\n\n<options> \n{options} \n</options>\n\n{CLOSING}"


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    options = [str(option) for option in doc["options"]]
    gold = UPPERCASE[int(doc["answer"])]
    letter = parse_choice(str(results[0]) if results else "", options) or "A"
    return {"tomato_score": float(letter == gold)}


# The published package's names for these helpers: task YAMLs written for it reference them.
tomato_doc_to_text = doc_to_text
tomato_doc_to_visual = doc_to_visual
tomato_process_results = process_results
