"""BLINK: 14 perception subtasks, one to four images each, lettered options
(:mod:`lmms_eval.scoring.blink`).

Prompt (as published): ``pre_prompt`` with ``{}`` filled by the option letters (``"A, B"``), then
the dataset's ``prompt`` (question and ``(A) ...`` options). The images are ``image_1`` to
``image_4`` (those present, in order); chat models get them all first, then the text.
``blink_acc`` is the published number; ``blink_acc_strict`` is ours (the shared letter reader).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import option_letters, rgb, user_message
from lmms_eval.scoring import blink
from lmms_eval.scoring.choice import extract_mcq_answer

IMAGE_COLUMNS = ("image_1", "image_2", "image_3", "image_4")


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    return [rgb(doc[key]) for key in IMAGE_COLUMNS if doc.get(key) is not None]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    pre = str((lmms_eval_specific_kwargs or {}).get("pre_prompt") or "")
    letters = option_letters(len(doc["choices"]))
    return f"{pre.format(', '.join(letters))}{doc['prompt']}"


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    response = str(results[0]) if results else ""
    count = len(doc["choices"])
    gold = str(doc["answer"]).strip().strip("()").upper()
    parsed = blink.published_letter(response, count)
    strict = extract_mcq_answer(response, "".join(option_letters(count))) or ""
    item = {"id": doc.get("idx"), "gt_content": gold, "pred": response, "sub_task": doc.get("sub_task")}
    return {
        "blink_acc": {**item, "pred_parsed": parsed, "is_correct": parsed == gold},
        "blink_acc_strict": {**item, "pred_parsed": strict, "is_correct": strict == gold},
    }


def aggregate(items: list[Mapping[str, Any]]) -> float:
    """The share of questions answered right (0-1, as published)."""
    return sum(bool(item["is_correct"]) for item in items) / len(items) if items else float("nan")
