"""EgoSchema: five-option questions on three-minute egocentric clips, one question per video.

Prompt (published): the question, the options (already lettered "A. ..."), then the post prompt
after a line break. The answer is the option index (``"0"``-``"4"``); the option letter is read by
the MMMU parser, or the whole answer naming one option's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import find_video, mmmu_style_choice, video_folders

DATASET = "lmms-eval/egoschema"
CACHE_DIR = "egoschema"
SUBMISSION_FILE = "inference_results_egoschema_MC.json"
_LETTERED = ("A.", "B.", "C.", "D.", "E.")


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``videos/<video_idx>.mp4``."""
    folders = video_folders(DATASET, CACHE_DIR)
    return [find_video(f"{doc['video_idx']}.mp4", folders, subdirs=("videos", ""))]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    options = "\n".join(str(option).strip() for option in doc["option"])
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}\n{options}\n{kwargs.get('post_prompt') or ''}"


def doc_to_target(doc: Mapping[str, Any]) -> str:
    return str(doc["answer"])


def option_texts(doc: Mapping[str, Any]) -> list[str]:
    """The options without their ``"A. "`` prefixes."""
    return [str(o).strip()[2:].strip() if str(o).strip()[:2] in _LETTERED else str(o) for o in doc["option"]]


def predicted_index(doc: Mapping[str, Any], response: Any) -> int:
    """The 0-based index of the option the response picks; -1 when it picks none."""
    letter = mmmu_style_choice(response, option_texts(doc))
    return UPPERCASE.index(letter) if letter is not None else -1


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """``score``: 1.0 when the picked option is the gold one, else 0.0."""
    return {"score": 1.0 if str(predicted_index(doc, results[0])) == str(doc["answer"]).strip() else 0.0}


def process_submission(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """The submission entry ``{video_idx: option index}`` (answers are hidden)."""
    return {"submission": {str(doc["video_idx"]): predicted_index(doc, results[0])}}


def write_submission(items: list[dict[str, int]], context: AggregationContext) -> None:
    """Write the evaluation server's file ``{video_idx: option index}``; no score."""
    merged: dict[str, int] = {}
    for item in items:
        merged.update(item)
    context.write_json(SUBMISSION_FILE, merged)
    return None
