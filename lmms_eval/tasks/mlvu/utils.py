"""MLVU dev, multiple choice: the question text already lists its options as ``(A) ...`` lines.

Prompt (published): the question, then "\\nOnly give the best option.\\nBest option: (". Scoring:
the option letter of the answer against ``answer``; values are percentages (0 or 100), and
``mlvu_percetion_score`` is the mean over task types of each one's accuracy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import macro_mean
from lmms_eval.scoring.published import published_mcq_letter
from lmms_eval.scoring.video import choice_letter, find_video, video_folders

DATASET = "sy1998/MLVU_dev"
CACHE_DIR = "mlvu"
_OPTION_LINE = re.compile(r"^\(([A-Z])\)", re.MULTILINE)


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``<video_name>`` (also under ``video/``)."""
    folders = video_folders(DATASET, CACHE_DIR)
    return [find_video(str(doc["video_name"]), folders, subdirs=("", "video"), suffixes_optional=False)]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}{kwargs.get('post_prompt') or ''}"


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """``{task_type, score}`` (score 100.0 or 0.0) for the headline, the score under ``mlvu_<task_type>``
    (the published letter rule, :func:`published_mcq_letter`), and the headline by ours
    (:func:`choice_letter`) under ``mlvu_percetion_score_strict``."""
    n_options = len(_OPTION_LINE.findall(str(doc["question"]))) or 4
    gold = str(doc["answer"]).strip().upper()
    value = 100.0 if published_mcq_letter(results[0], "ABCDEFGHIJ"[:n_options]) == gold else 0.0
    strict = 100.0 if choice_letter(results[0], n_options) == gold else 0.0
    task_type = str(doc["task_type"])
    return {
        "mlvu_percetion_score": {"task_type": task_type, "score": value},
        "mlvu_percetion_score_strict": {"task_type": task_type, "score": strict},
        f"mlvu_{task_type.lower()}": value,
    }


def aggregate_task_types(items: list[dict[str, Any]]) -> float:
    """The mean over the task types present of each one's accuracy (each type weighs the same)."""
    return macro_mean(items, "task_type")


# The published package's names for these helpers: task YAMLs written for it reference them.
mlvu_doc_to_text = doc_to_text
mlvu_doc_to_visual_dev = doc_to_visual
mlvu_process_results = process_results
