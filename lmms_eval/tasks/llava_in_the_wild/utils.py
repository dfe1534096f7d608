"""LLaVA-Bench (in-the-wild): 60 questions on 24 images, reviewed by an LLM judge against GPT-4's
reference answer (``lmms_eval.scoring.llava_bench``).

``gpt_eval_llava_<all|conv|detail|complex>``: 100 x the model's mean rating over the reference's mean
rating, as published. No offline rule: without a judge the run stops with one line, and
``--predict_only`` keeps the answers unscored.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring import llava_bench

logger = logging.getLogger(__name__)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(str(doc["question"]), lmms_eval_specific_kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def _row(doc: Mapping[str, Any], reply: Any) -> dict[str, Any]:
    scores = llava_bench.parse_scores(reply.content)
    category = str(doc["category"])
    item = {"question_id": doc["question_id"], "category": category, "scores": list(scores)}
    row: dict[str, Any] = {"gpt_eval_llava_all": item, "judge_reply": reply.content}
    if category in llava_bench.CATEGORIES:
        row[f"gpt_eval_llava_{category}"] = item
    if scores == llava_bench.UNREADABLE:
        row["judge_error"] = (
            reply.error or f"no two ratings on the first line of {str(reply.content)[:200]!r}"
        )
    return row


def _request(doc: Mapping[str, Any], prediction: str) -> Any:
    from lmms_eval.llm_judge import Request

    prompt = llava_bench.judge_prompt(doc["caption"], doc["question"], doc["gpt_answer"], prediction)
    return Request(
        messages=[{"role": "user", "content": prompt}],
        temperature=0.0,
        max_tokens=llava_bench.JUDGE_MAX_TOKENS,
        # the offline dummy judge rates the reference 10 and the answer 10 or 1 ("comparative")
        metadata={
            "kind": "comparative",
            "response_a": doc["gpt_answer"],
            "response_b": prediction,
            "max_score": 10,
            "min_score": 1,
        },
    )


def process_results_batch(
    docs: Sequence[Mapping[str, Any]], results: Sequence[Sequence[Any]]
) -> list[dict[str, Any]]:
    """Every answer reviewed by the judge (``get_server()``) in one batch."""
    from lmms_eval.llm_judge import get_server, require_judge

    require_judge("llava_in_the_wild", "LLaVA-Bench is scored by an LLM reviewer only, as published")
    predictions = [str(result[0]) if result else "" for result in results]
    requests = [_request(doc, prediction) for doc, prediction in zip(docs, predictions, strict=True)]
    with get_server() as server:
        replies = server.complete_batch(requests)
    rows = [_row(doc, reply) for doc, reply in zip(docs, replies, strict=True)]
    failed = sum("judge_error" in row for row in rows)
    if failed:
        logger.warning("llava_in_the_wild: %d of %d review(s) unreadable; rated -1 and -1", failed, len(rows))
    return rows


def aggregate_relative(items: list[Mapping[str, Any]]) -> float:
    return llava_bench.relative_score(items)
