"""MIA-Bench: layered instructions about images, graded per component by an LLM judge
(``lmms_eval.scoring.mia_bench``). ``gpt_eval_score`` is the mean total score (0-1), as published.

No offline rule: without a judge the run stops with one line, and ``--predict_only`` keeps the
answers unscored.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring import mia_bench

logger = logging.getLogger(__name__)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(str(doc["instruction"]), lmms_eval_specific_kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def _components(doc: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    count = int(doc["num_of_component"])
    return [str(c) for c in doc["components"]][:count], list(doc["component_weight"])[:count]


def _request(doc: Mapping[str, Any], prediction: str) -> Any:
    from lmms_eval.llm_judge import Request

    components, weights = _components(doc)
    prompt = mia_bench.judge_prompt(str(doc["instruction"]), components, weights, prediction)
    return Request(
        messages=[{"role": "user", "content": prompt}],
        temperature=0.0,
        max_tokens=mia_bench.JUDGE_MAX_TOKENS,
        metadata={"kind": "mia_bench", "components": components},
    )


def _row(doc: Mapping[str, Any], reply: Any) -> dict[str, Any]:
    components, _ = _components(doc)
    if reply is None:
        scores = {**dict.fromkeys(components, 0.0), "total_score": 0.0}
        error = f"MIA-Bench grades 1 to {mia_bench.MAX_COMPONENTS} components; this question has {len(components)}"
        return {"gpt_eval_score": scores, "judge_error": error}
    scores = mia_bench.parse_scores(reply.content, components)
    row: dict[str, Any] = {"gpt_eval_score": scores, "judge_reply": reply.content}
    if reply.error:
        row["judge_error"] = reply.error
    return row


def process_results_batch(
    docs: Sequence[Mapping[str, Any]], results: Sequence[Sequence[Any]]
) -> list[dict[str, Any]]:
    """Every answer graded by the judge (``get_server()``) in one batch."""
    from lmms_eval.llm_judge import get_server, require_judge

    require_judge("mia_bench", "MIA-Bench is scored by an LLM grader only, as published")
    predictions = [str(result[0]) if result else "" for result in results]
    gradable = [i for i, doc in enumerate(docs) if 1 <= len(_components(doc)[0]) <= mia_bench.MAX_COMPONENTS]
    with get_server() as server:
        replies = server.complete_batch([_request(docs[i], predictions[i]) for i in gradable])
    by_doc: dict[int, Any] = dict(zip(gradable, replies, strict=True))
    rows = [_row(doc, by_doc.get(i)) for i, doc in enumerate(docs)]
    failed = sum("judge_error" in row for row in rows)
    if failed:
        logger.warning(
            "mia_bench: %d of %d grade(s) failed; see judge_error in the samples", failed, len(rows)
        )
    return rows


def aggregate_score(items: list[Mapping[str, Any]]) -> float:
    return mia_bench.mean_total(items)
