"""MMVU validation: expert-level questions on videos from 27 disciplines, multiple choice and open.

Prompt (published): the question, the lettered choices ("A: ...") for multiple choice, a line
"Visual Information: processed video" and the instruction to answer directly (with the option
letter, or the final answer). The video is ``video_path`` (``videos/<discipline>/<n>.mp4``).

Scoring (the published rules, as run without an LLM judge): multiple choice is right when the
first standalone capital letter A-E is the gold one, or when the answer names the gold letter in
lower case ("I pick b") or contains the gold choice's text in any case ("hot dog", and "A dog"
too, for "dog"). An open answer is right when it contains the gold answer in any case, or states the
same number ("3.50" for "3.5"). ``accuracy`` is the percentage right.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.text import parse_relaxed_number
from lmms_eval.scoring.video import find_video, video_folders

DATASET = "lmms-eval/MMVU"
CACHE_DIR = "mmvu"
MC_INSTRUCTION = (
    "Do not generate any intermediate reasoning process. Answer directly with the option letter from the\n"
    "given choices.\n"
)
OPEN_INSTRUCTION = "Do not generate any intermediate reasoning process. Directly output the final answer.\n"
_CAPITAL = re.compile(r"\b([A-E])\b")


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    return [find_video(str(doc["video_path"]), video_folders(DATASET, CACHE_DIR))]


def _is_mc(doc: Mapping[str, Any]) -> bool:
    return doc["question_type"] == "multiple-choice"


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    text = f"\nQuestion:{doc['question']}\n"
    if _is_mc(doc):
        text += "".join(f"{letter}: {choice}\n" for letter, choice in (doc.get("choices") or {}).items())
    text += "Visual Information: processed video\n" + (MC_INSTRUCTION if _is_mc(doc) else OPEN_INSTRUCTION)
    return f"{kwargs.get('pre_prompt') or ''}{text}{kwargs.get('post_prompt') or ''}"


def multiple_choice_right(answer: str, gold: str, choices: Mapping[str, Any]) -> bool:
    found = _CAPITAL.search(answer)
    if found is not None and found.group(1) == gold:
        return True
    lowered = answer.lower()
    text = str(choices.get(gold) or "").strip().lower()
    return bool(re.search(rf"\b{gold.lower()}\b", lowered)) or (bool(text) and text in lowered)


def open_right(answer: str, gold: str) -> bool:
    if gold.strip().lower() in answer.lower():
        return True
    number, expected = parse_relaxed_number(answer), parse_relaxed_number(gold)
    return number is not None and expected is not None and number == expected


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    answer, gold = str(results[0]) if results else "", str(doc["answer"]).strip()
    choices = doc.get("choices") or {}
    right = multiple_choice_right(answer, gold, choices) if _is_mc(doc) else open_right(answer, gold)
    return {"accuracy": 100.0 if right else 0.0}
