"""LVBench: multiple-choice questions on hour-long videos.

Prompt (published): the pre prompt, the question (whose options are written into it, "(A) ..."),
the options when the dataset gives them as a list, then the post prompt. Scoring: ``lvbench_score``
reads the letter as published, the first capital A-D not followed by a letter ("B", "(B) b", "The
answer is B", "xB" are B; "b" and "Definitely" name none), against the gold letter.
``lvbench_score_strict`` (ours, beside it) reads it with the shared ``extract_mcq_answer``.
Both are fractions (0-1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import choice_letter, find_video, video_folders

DATASET = "lmms-eval/LVBench"
CACHE_DIR = "lvbench"
_PUBLISHED_LETTER = re.compile(r"[A-D](?![A-Za-z])")


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    return [find_video(str(doc["video_path"]), video_folders(DATASET, CACHE_DIR), subdirs=("", "videos"))]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    options = doc.get("options") or []
    listed = "".join(f"\n({UPPERCASE[i]}) {option}" for i, option in enumerate(options))
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}{listed}{kwargs.get('post_prompt') or ''}"


def published_letter(answer: Any) -> str | None:
    """The first capital A-D not followed by a letter (the published reading)."""
    found = _PUBLISHED_LETTER.search(str(answer or ""))
    return found.group() if found else None


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    answer = str(results[0]) if results else ""
    gold = str(doc["answer"]).strip().upper()
    return {
        "lvbench_score": float(published_letter(answer) == gold),
        "lvbench_score_strict": float(choice_letter(answer, 4) == gold),
    }


# The published package's names for these helpers: task YAMLs written for it reference them.
lvbench_doc_to_text = doc_to_text
lvbench_doc_to_visual = doc_to_visual
lvbench_process_results = process_results
