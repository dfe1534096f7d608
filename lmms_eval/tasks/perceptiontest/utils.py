"""PerceptionTest validation, multiple choice: three options per question, the gold index in ``answer_id``.

Prompt (published): the question, the options as ``A. ...`` lines, then "Answer with the option's
letter from the given choices directly." on its own line. Scoring: the option letter of the answer
against the gold letter; ``accuracy`` is the share correct, with breakdowns by ``area`` and
``reasoning``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import breakdown_key, choice_letter, find_video, video_folders

DATASET = "lmms-eval/PerceptionTest_Val"
CACHE_DIR = "perceptiontest_val"


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``videos/<video_name>.mp4``."""
    folders = video_folders(DATASET, CACHE_DIR, config="mc_question_val")
    return [find_video(f"{doc['video_name']}.mp4", folders, subdirs=("videos", ""))]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    options = "\n".join(f"{UPPERCASE[i]}. {str(o).strip()}" for i, o in enumerate(doc["options"]))
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}\n{options}{kwargs.get('post_prompt') or ''}"


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """``accuracy`` (1.0 or 0.0), also under the doc's area and reasoning type."""
    letter = choice_letter(results[0], len(doc["options"]))
    value = 1.0 if letter is not None and UPPERCASE.index(letter) == int(doc["answer_id"]) else 0.0
    out = {"accuracy": value}
    for field in ("area", "reasoning"):
        if doc.get(field):
            out[f"accuracy_{field}_{breakdown_key(doc[field])}"] = value
    return out
