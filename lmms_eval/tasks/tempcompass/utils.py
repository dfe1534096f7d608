"""TempCompass: temporal perception (speed, direction, action, order, attribute change) asked
three ways on the same videos: multiple choice, yes/no and caption matching.

Prompt (published): the question (options already in it), then the format's post prompt. Video:
``videos/<video_id>.mp4``.

Scoring: the published rules read each answer; an answer they cannot read would go to an LLM
there, and counts as wrong here (no judge). Multiple choice: the answer starts with the gold letter
followed by ".", ")" or nothing ("B", "B.", "B) right"). Yes/no: the answer starts with "yes" or
"no" in any case ("Nope" and "not sure" read as no). Caption matching: the answer is the gold
letter, starts with "Caption <letter>", or is the gold caption's text. Result keys: the percentage
right overall (``avg_accuracy``) and per temporal aspect (``<dim>_accuracy``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.video import find_video, video_folders

DATASET = "lmms-eval/TempCompass"
CACHE_DIR = "tempcompass"
DIMS = ("speed", "direction", "action", "order", "attribute_change")
_LEADING_LETTER = re.compile(r"^([A-Z])(?:[.)]|$)")
_CAPTION = re.compile(r"^Caption ([A-Z])\b:?\s*(.*)$", re.DOTALL)


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    return [find_video(f"{doc['video_id']}.mp4", video_folders(DATASET, CACHE_DIR), subdirs=("videos", ""))]


def _text(doc: Mapping[str, Any], kwargs: Mapping[str, Any] | None, kind: str) -> str:
    post = (kwargs or {}).get("post_prompt") or {}
    post = post.get(kind, "") if isinstance(post, Mapping) else str(post)
    return f"{(kwargs or {}).get('pre_prompt') or ''}{doc['question']}{post}"


def doc_to_text_multi_choice(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    return _text(doc, lmms_eval_specific_kwargs, "multi-choice")


def doc_to_text_yes_no(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    return _text(doc, lmms_eval_specific_kwargs, "yes_no")


def doc_to_text_caption_matching(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    return _text(doc, lmms_eval_specific_kwargs, "caption_matching")


def multi_choice_right(answer: str, gold: str) -> bool:
    found = _LEADING_LETTER.match(answer.strip())
    return found is not None and found.group(1) == gold.strip()[:1]


def yes_no_right(answer: str, gold: str) -> bool:
    text = answer.strip().lower()
    said = "yes" if text.startswith("yes") else "no" if text.startswith("no") else None
    return said == gold.strip().lower()


def caption_matching_right(answer: str, gold: str) -> bool:
    caption = _CAPTION.match(gold.strip())
    if caption is None:
        return answer.strip() == gold.strip()
    letter, text = caption.groups()
    answer = answer.strip()
    return (
        answer == letter
        or answer.startswith(f"Caption {letter}")
        or answer.rstrip(".").strip() == text.rstrip(".").strip()
    )


def _results(doc: Mapping[str, Any], right: bool) -> dict[str, float]:
    value = 100.0 if right else 0.0
    out = {"avg_accuracy": value}
    if doc.get("dim") in DIMS:
        out[f"{doc['dim']}_accuracy"] = value
    return out


def process_results_multi_choice(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    return _results(doc, multi_choice_right(str(results[0]) if results else "", str(doc["answer"])))


def process_results_yes_no(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    return _results(doc, yes_no_right(str(results[0]) if results else "", str(doc["answer"])))


def process_results_caption_matching(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    return _results(doc, caption_matching_right(str(results[0]) if results else "", str(doc["answer"])))
