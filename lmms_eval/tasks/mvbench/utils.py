"""MVBench: 20 subtasks of multiple-choice questions on short clips.

Prompt (published): ``"Question:{question}\\nOption:\\n(A) ...\\n(B) ...\\n"`` then the post prompt
"Only give the best option.\\n". The gold letter is the position of ``answer`` among
``candidates``. Values are percentages (0 or 100); their mean is ``mvbench_accuracy``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import choice_letter, find_video, first_standalone_letter, video_folders
from lmms_eval.stats import pure_aggregation

logger = logging.getLogger(__name__)

DATASET = "OpenGVLab/MVBench"
CACHE_DIR = "mvbench_video"
# the folder of each subtask's clips inside the dataset's video tree (published layout)
VIDEO_FOLDERS = {
    "action_sequence": "star/Charades_segment",
    "action_prediction": "star/Charades_segment",
    "object_interaction": "star/Charades_segment",
    "action_localization": "sta/sta_video_segment",
    "moving_count": "clevrer/video_validation",
    "moving_direction": "clevrer/video_validation",
    "moving_attribute": "clevrer/video_validation",
    "counterfactual_inference": "clevrer/video_validation",
    "object_existence": "clevrer/video_validation",
    "fine_grained_pose": "nturgbd_convert",
    "character_order": "perception/videos",
    "object_shuffle": "perception/videos",
    "state_change": "perception/videos",
    "action_count": "perception/videos",
    "egocentric_navigation": "vlnqa",
    "episodic_reasoning": "tvqa/video_fps3_hq_segment",
    "fine_grained_action": "Moments_in_Time_Raw/videos",
    "scene_transition": "scene_qa/video",
    "action_antonym": "ssv2_video_mp4",
    "unexpected_action": "FunQA_test/test",
}


def doc_to_visual(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[str]:
    """The clip: ``<subtask folder>/<video>`` (also under ``video/``, the Hub repo's own tree)."""
    sub_task = str((lmms_eval_specific_kwargs or {}).get("sub_task", ""))
    folder = VIDEO_FOLDERS.get(sub_task)
    if folder is None:
        raise ValueError(f"mvbench: unknown sub_task {sub_task!r}; known: {', '.join(sorted(VIDEO_FOLDERS))}")
    folders = video_folders(DATASET, CACHE_DIR, config=sub_task)
    return [
        find_video(str(doc["video"]), folders, subdirs=(folder, f"video/{folder}"), suffixes_optional=False)
    ]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    options = "".join(f"({UPPERCASE[i]}) {c}\n" for i, c in enumerate(doc["candidates"]))
    question = f"Question:{doc['question']}\nOption:\n{options}"
    return f"{kwargs.get('pre_prompt') or ''}{question}{kwargs.get('post_prompt') or ''}"


def gold_letter(doc: Mapping[str, Any]) -> str | None:
    """The letter of the candidate equal to ``answer`` (None, with a warning, when none is)."""
    candidates = [str(c).strip() for c in doc["candidates"]]
    answer = str(doc["answer"]).strip()
    if answer not in candidates:
        logger.warning("mvbench: answer %r is not among the candidates %s", answer, candidates)
        return None
    return UPPERCASE[candidates.index(answer)]


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    """``mvbench_accuracy`` and ``mvbench_accuracy_strict`` items ``{answered, score}`` (score 100.0
    when the letter read is the gold candidate's, else 0.0).

    Published rule (``mvbench_accuracy``): the first standalone letter A-E in either case
    (:func:`lmms_eval.scoring.video.first_standalone_letter`); an empty answer is left out of the
    denominator (:func:`published_accuracy`). Ours (``_strict``): the letter the answer commits to
    (:func:`choice_letter`: ``"A cat sits"`` and ``"B or C"`` name none, ``"the answer is B, not
    C"`` is B), every answer counted.
    """
    gold = gold_letter(doc)
    answer = results[0] if results else None
    answered = isinstance(answer, str) and bool(answer.strip())
    published = first_standalone_letter(answer)
    strict = choice_letter(answer, len(doc["candidates"]))
    return {
        "mvbench_accuracy": {"answered": answered, "score": 100.0 if gold and published == gold else 0.0},
        "mvbench_accuracy_strict": {"answered": answered, "score": 100.0 if gold and strict == gold else 0.0},
    }


@pure_aggregation
def published_accuracy(items: list[dict[str, Any]]) -> float:
    """The mean score over answered questions (the published denominator leaves empty answers out)."""
    scores = [item["score"] for item in items if item["answered"]]
    return sum(scores) / len(scores) if scores else 0.0


@pure_aggregation
def strict_accuracy(items: list[dict[str, Any]]) -> float:
    """The mean score over every question (an empty answer is a wrong one)."""
    return sum(item["score"] for item in items) / len(items) if items else 0.0


# The published package's names for these helpers: task YAMLs written for it reference them.
mvbench_doc_to_text = doc_to_text
mvbench_doc_to_visual = doc_to_visual
mvbench_process_results = process_results
