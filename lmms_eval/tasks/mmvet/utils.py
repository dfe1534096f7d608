"""MM-Vet: open answers graded by an LLM judge with the MM-Vet grader prompt (``lmms_eval.scoring.mmvet``).

``gpt_eval_score`` is the mean correctness (0.0-1.0) times 100, as published; ``gpt_eval_score_<cap>``
(ours, beside it) is the same over the questions that need capability ``cap`` (rec, ocr, know, gen,
spat, math). There is no offline rule: without a judge the run stops with one line, and
``--predict_only`` keeps the answers unscored.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring import mmvet

logger = logging.getLogger(__name__)

PRE_PROMPT = "First please perform reasoning, and think step by step to provide best answer to the following question: \n\n"


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = {"pre_prompt": PRE_PROMPT, **(lmms_eval_specific_kwargs or {})}
    return with_prompts(str(doc["question"]), kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def _row(doc: Mapping[str, Any], prediction: str, reply: Any) -> dict[str, Any]:
    score = mmvet.parse_score(reply.content)
    item = {
        "question_id": doc["question_id"],
        "capabilities": mmvet.capabilities(doc["capability"]),
        "score": score if score is not None else 0.0,
    }
    row: dict[str, Any] = {"gpt_eval_score": item, "judge_reply": reply.content}
    row.update({f"gpt_eval_score_{cap}": item for cap in item["capabilities"] if cap in mmvet.CAPABILITIES})
    if score is None:
        row["judge_error"] = reply.error or f"no score from 0 to 1 in {str(reply.content)[:200]!r}"
    return row


def process_results_batch(
    docs: Sequence[Mapping[str, Any]], results: Sequence[Sequence[Any]]
) -> list[dict[str, Any]]:
    """Every answer graded by the judge (``get_server()``) in one batch; an unreadable grade is 0.0."""
    from lmms_eval.llm_judge import Request, get_server, require_judge

    require_judge("mmvet", "MM-Vet is scored by an LLM grader only, as published")
    predictions = [str(result[0]) if result else "" for result in results]
    requests = [
        Request(
            messages=[{"role": "user", "content": mmvet.judge_prompt(doc["question"], doc["answer"], pred)}],
            temperature=0.0,
            max_tokens=mmvet.JUDGE_MAX_TOKENS,
            # the offline dummy judge answers a binary "1" / "0" (a grade of 1.0 or 0.0)
            metadata={"kind": "binary", "output_format": "0/1", "answer": doc["answer"], "prediction": pred},
        )
        for doc, pred in zip(docs, predictions, strict=True)
    ]
    with get_server() as server:
        replies = server.complete_batch(requests)
    rows = [_row(doc, pred, reply) for doc, pred, reply in zip(docs, predictions, replies, strict=True)]
    failed = sum("judge_error" in row for row in rows)
    if failed:
        logger.warning("mmvet: %d of %d grade(s) unreadable; scored 0.0", failed, len(rows))
    return rows


def aggregate_score(items: list[Mapping[str, Any]]) -> float:
    """The mean correctness times 100."""
    return mmvet.percent(items)
