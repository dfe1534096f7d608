"""Charades-STA temporal grounding: find when a described event happens in a video.

Prompt (published): the instruction, which asks for "The event happens in the start time - end
time" in seconds with a worked example, the event's caption and a full stop, then the request for
the start and end time. The model gets the video file; backends that hand a video natively pass its
frame rate and the sampled frame indices (``video_metadata``), from which the model's processor
derives each frame's time in seconds, the convention the published prompt relies on.

Scoring: the answer is read as an interval by :func:`lmms_eval.scoring.temporal.parse_interval`
(one parser for every answer) and compared with the gold ``timestamp`` by temporal IoU. Per
document, ``charades_sta_IOU@3/5/7`` are 100 when the IoU is at least 0.3 / 0.5 / 0.7 (else 0)
and ``charades_sta_mIOU`` is 100 x IoU, so their means are the published recall percentages and
mean IoU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.temporal import parse_interval, temporal_iou
from lmms_eval.scoring.video import find_video, video_folders

DATASET = "lmms-eval/charades_sta"
CACHE_DIR = "charades_sta"
VIDEO_FOLDER = "Charades_v1_480"
THRESHOLDS = {"charades_sta_IOU@3": 0.3, "charades_sta_IOU@5": 0.5, "charades_sta_IOU@7": 0.7}


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """The video: ``Charades_v1_480/<video>`` under the local copy or ``$HF_HOME/charades_sta``."""
    return [find_video(str(doc["video"]), video_folders(DATASET, CACHE_DIR), subdirs=(VIDEO_FOLDER, ""))]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt') or ''}{doc['caption']}. {kwargs.get('post_prompt') or ''}"


def doc_to_target(doc: Mapping[str, Any]) -> list[float]:
    return [float(t) for t in doc["timestamp"]]


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    start, end = doc_to_target(doc)[:2]
    iou = temporal_iou(parse_interval(results[0] if results else ""), (start, end))
    out = {key: 100.0 if iou >= threshold else 0.0 for key, threshold in THRESHOLDS.items()}
    out["charades_sta_mIOU"] = 100.0 * iou
    return out


# The published package's names for these helpers: task YAMLs written for it reference them.
temporal_grounding_doc_to_answer = doc_to_target
temporal_grounding_doc_to_text = doc_to_text
temporal_grounding_doc_to_visual = doc_to_visual
temporal_grounding_process_results_generation = process_results
