"""CV-Bench: 2D (counting, spatial relation) and 3D (depth, distance) multiple choice
(:mod:`lmms_eval.scoring.cv_bench`).

Prompt (as published): ``pre_prompt`` with ``{}`` filled by the option letters (``"A, B, C, D"``),
a newline, then the dataset's ``prompt`` (question and ``(A) ...`` options); no ``post_prompt``.
``cv_bench_acc`` is the published number (the first character of the output as the letter);
``cv_bench_acc_strict`` is ours (the shared letter reader).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import doc_image, option_letters, user_message
from lmms_eval.scoring import cv_bench
from lmms_eval.scoring.choice import extract_mcq_answer


def _letters(doc: Mapping[str, Any]) -> list[str]:
    return option_letters(len(doc["choices"]))


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    pre = str((lmms_eval_specific_kwargs or {}).get("pre_prompt") or "")
    return f"{pre.format(', '.join(_letters(doc)))}\n{doc['prompt']}"


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_image(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    response = str(results[0]) if results else ""
    gold = cv_bench.gold_letter(doc["answer"])
    parsed = cv_bench.published_letter(response)
    strict = extract_mcq_answer(response, "".join(_letters(doc))) or ""
    item = {
        "id": doc.get("idx"),
        "gt_content": gold,
        "pred": response,
        "type": doc.get("type"),
        "task": doc.get("task"),
        "source": doc.get("source"),
    }
    return {
        "cv_bench_acc": {**item, "pred_parsed": parsed, "is_correct": parsed == gold},
        "cv_bench_acc_strict": {**item, "pred_parsed": strict, "is_correct": strict == gold},
    }


def aggregate(items: list[Mapping[str, Any]]) -> float:
    """The share of questions answered right (0-1, as published)."""
    return sum(bool(item["is_correct"]) for item in items) / len(items) if items else float("nan")


# The published package's names for these helpers: task YAMLs written for it reference them.
cv_bench_doc_to_text = doc_to_text
cv_bench_doc_to_visual = doc_image
cv_bench_process_results = process_results
