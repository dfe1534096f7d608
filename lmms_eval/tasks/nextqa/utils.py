"""NExT-QA multiple choice: five options ``a0``-``a4`` on a video, the gold option's index in ``answer``.

Prompt (published): the question, then the options as ``A. ...`` lines (no post prompt by
default). Scoring: the option letter by the MMMU parser, or the option whose text is the whole
answer, against the gold letter; ``exact_match`` is the share correct, with breakdowns by the
question type's group (``C``ausal, ``T``emporal, ``D``escriptive).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import find_video, mmmu_style_choice, video_folders

DATASET = "lmms-eval/NExTQA"
CACHE_DIR = "nextqa"
OPTION_FIELDS = ("a0", "a1", "a2", "a3", "a4")
QUESTION_GROUPS = {"C": "causal", "T": "temporal", "D": "descriptive"}


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``NExTVideo/<video>.mp4`` (also ``.MP4``)."""
    folders = video_folders(DATASET, CACHE_DIR, config="MC")
    return [find_video(f"{doc['video']}.mp4", folders, subdirs=("NExTVideo", ""))]


def options_of(doc: Mapping[str, Any]) -> list[str]:
    return [str(doc[field]).strip() for field in OPTION_FIELDS]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    options = "\n".join(f"{UPPERCASE[i]}. {text}" for i, text in enumerate(options_of(doc)))
    question = f"{str(doc['question']).strip()}\n{options}"
    return f"{kwargs.get('pre_prompt') or ''}{question}{kwargs.get('post_prompt') or ''}"


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The gold option's letter."""
    return UPPERCASE[int(doc["answer"])]


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """``exact_match`` (1.0 or 0.0), also under the question type's group."""
    correct = mmmu_style_choice(results[0], options_of(doc)) == doc_to_target(doc)
    value = 1.0 if correct else 0.0
    out = {"exact_match": value}
    group = QUESTION_GROUPS.get(str(doc.get("type", ""))[:1].upper())
    if group is not None:
        out[f"exact_match_{group}"] = value
    return out
