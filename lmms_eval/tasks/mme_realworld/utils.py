"""MME-RealWorld (English, lite, Chinese): high-resolution real-world multiple choice, five options
(:mod:`lmms_eval.scoring.mme_realworld`).

Prompt (as published, fixed: the task kwargs are not used): the question, `` The choices are listed
below:`` (Chinese: `` 选项如下所示:``), the ``multi-choice options`` one per line, the instruction and
``The best answer is: `` (``最佳答案为： ``). The image is the base64 ``bytes`` column.
``mme_realworld_score`` is the published number (the share right, by the published letter rule);
``mme_realworld_score_strict`` is ours (the shared letter reader: an empty output is no answer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import rgb, user_message
from lmms_eval.scoring import mme_realworld
from lmms_eval.scoring.choice import extract_mcq_answer

_EN = (
    " The choices are listed below:\n",
    "\nSelect the best answer to the above multiple-choice question based on the image. Respond with "
    "only the letter (A, B, C, D, or E) of the correct option.\nThe best answer is: ",
)
_CN = (
    " 选项如下所示:\n",
    "\n根据图像选择上述多项选择题的最佳答案。只需回答正确选项的字母（A, B, C, D 或 E）。\n最佳答案为： ",
)


def _text(doc: Mapping[str, Any], wording: tuple[str, str]) -> str:
    options = "\n".join(str(option) for option in doc["multi-choice options"])
    return f"{doc['question']}{wording[0]}{options}{wording[1]}"


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> str:
    return _text(doc, _EN)


def doc_to_text_cn(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> str:
    return _text(doc, _CN)


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    return [rgb(doc["bytes"])]


def doc_to_messages(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc))


def doc_to_messages_cn(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text_cn(doc))


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    response = str(results[0]) if results else ""
    category, _, sub_category = str(doc["category"]).partition("/")
    gold = str(doc["answer"]).strip()
    item = {
        "question_id": doc["index"],
        "category": category,
        "sub_category": sub_category,
        "task_category": doc.get("l2-category"),
        "answer": gold,
    }
    letter = mme_realworld.published_letter(response)
    strict = extract_mcq_answer(response, "ABCDE") or ""
    return {
        "mme_realworld_score": {**item, "pred_answer": letter, "score": letter == gold},
        "mme_realworld_score_strict": {**item, "pred_answer": strict, "score": strict == gold},
    }


def aggregate(items: list[Mapping[str, Any]]) -> float:
    """The share of questions answered right (0-1, as published)."""
    return sum(bool(item["score"]) for item in items) / len(items) if items else float("nan")
