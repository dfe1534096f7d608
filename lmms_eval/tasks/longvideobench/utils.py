"""LongVideoBench validation with video input: up to five options ``option0``-``option4`` ("N/A"
marks an unused one), the gold index in ``correct_choice``.

Prompt (published): the question, the options as ``A. ...`` lines, then the post prompt on its own
line. Scoring: the option letter by the MMMU parser or the whole answer naming an option's text;
``lvb_acc`` is the share correct, with breakdowns by duration group and question category.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import breakdown_key, find_video, mmmu_style_choice, video_folders

DATASET = "longvideobench/LongVideoBench"
CACHE_DIR = "datasets/longvideobench"
OPTION_FIELDS = ("option0", "option1", "option2", "option3", "option4")
UNUSED_OPTION = "N/A"


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``videos/<video_path>``."""
    folders = video_folders(DATASET, CACHE_DIR)
    return [find_video(str(doc["video_path"]), folders, subdirs=("videos", ""), suffixes_optional=False)]


def options_of(doc: Mapping[str, Any]) -> list[str]:
    """The used options in order (``None`` and "N/A" left out)."""
    values = [doc.get(field) for field in OPTION_FIELDS]
    return [str(v) for v in values if v is not None and str(v).strip() != UNUSED_OPTION]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    options = "\n".join(f"{UPPERCASE[i]}. {text}" for i, text in enumerate(options_of(doc)))
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}\n{options}\n{kwargs.get('post_prompt') or ''}"


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
