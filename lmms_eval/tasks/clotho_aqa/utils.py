"""Clotho-AQA: a sound clip and a question about it.

**clotho_aqa_val / clotho_aqa_test** (config ``clotho_aqa``): the answer is one word (often "yes"
or "no"). The model hears the clip (``doc_to_visual``) and reads the question with the single-word
instruction; the built-in ``exact_match`` compares its output with ``answer`` ignoring case and
punctuation, as published.

**clotho_asqa_test_v2** (config ``clotho_asqa_test_v2``): the answer is free text. An LLM judge
reads the question, the reference answer and the model's answer (the published prompt,
:data:`JUDGE_PROMPT`) and rates the answer from 0 to 5. As published, the rating is the first
digit from 0 to 5 in the judge's reply, and ``gpt_eval`` is the mean rating as a percentage of 5
(``100 * mean / 5``). A reply with no such digit, or a failed call, scores 0 and keeps the reply
(the published aggregation fails on it). The published task has no offline rule, so scoring needs
a judge: without ``API_TYPE`` or ``OPENAI_API_KEY`` it stops with a :class:`ConfigError`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.api.prompts import with_prompts
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs  # noqa: F401 - used by the YAML

logger = logging.getLogger(__name__)


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(str(doc["question"]), lmms_eval_specific_kwargs)


# -- clotho_asqa_test_v2: judged free-form answers ---------------------------------------------------

JUDGE_MAX_TOKENS = 1024
MAX_RATING = 5
_RATING = re.compile(r"[0-5]")

# published verbatim (its indentation included): the judge's reply depends on it
JUDGE_PROMPT = """
            [Question]
            {question}

            [Reference Answer]
            {ground_truth}

            [Model Answer]
            {model_response}

            [Task]
            Rate the model's answer based on its alignment with the reference answer, focusing on accuracy and relevance to the reference provided. Please be critical on the details.
            Criteria: Assess if the model's response mirrors the reference in terms of content, accuracy, and relevance.
            Score0: The answer is completely misaligned, providing incorrect or irrelevant information compared to the reference.
            Score1: The answer shows minimal alignment, often misunderstanding or providing irrelevant details unrelated to the reference.
            Score2: The answer recognizes the topic but diverges significantly from the reference in accuracy or relevance.
            Score3: The answer aligns with the reference generally but lacks detail or precise accuracy in some aspects.
            Score4: The answer is mostly accurate and relevant, closely following the reference but could be clearer or more detailed.
            Score5: The answer is highly accurate, detailed, and matches the reference answer perfectly, capturing its essence and detail.

            Your response should be formatted as follows:
            Explanation: (Provide a concise explanation of your rating, comparing the reference answer with the model's response. "The reference answer is [XXX], while the model's answer is [YYY]. I think ...")
            Rating: (int)"""


def judge_prompt(doc: Mapping[str, Any], prediction: str) -> str:
    return JUDGE_PROMPT.format(
        question=doc["question"], ground_truth=doc["answer"], model_response=prediction
    )


def rating(reply: str | None) -> int | None:
    """The first digit from 0 to 5 in the judge's reply (the published rule), or None."""
    match = _RATING.search(reply or "")
    return int(match.group()) if match else None


def process_results_batch_v2(
    docs: Sequence[Mapping[str, Any]], results: Sequence[Sequence[Any]]
) -> list[dict[str, Any]]:
    """One ``gpt_eval`` item per question (its rating, 0 when unreadable), judged as one batch."""
    from lmms_eval.llm_judge import Request, get_server, require_judge

    require_judge("clotho_asqa_test_v2", "it is scored by an LLM judge only, as published")
    predictions = [str(result[0]) if result else "" for result in results]
    requests = [
        Request.from_prompt(judge_prompt(doc, prediction), max_tokens=JUDGE_MAX_TOKENS)
        for doc, prediction in zip(docs, predictions, strict=True)
    ]
    with get_server() as server:
        replies = server.complete_batch(requests)
    rows: list[dict[str, Any]] = []
    for reply in replies:
        value = rating(reply.content)
        row: dict[str, Any] = {"gpt_eval": {"rating": value or 0, "readable": value is not None}}
        row["judge_reply"] = reply.content
        if value is None:
            row["judge_error"] = reply.error or f"no rating from 0 to 5 in {str(reply.content)[:200]!r}"
        rows.append(row)
    unreadable = sum(not row["gpt_eval"]["readable"] for row in rows)
    if unreadable:
        logger.warning(
            "clotho_asqa_test_v2: %d of %d answer(s) without a readable rating; scored 0",
            unreadable,
            len(rows),
        )
    return rows


def aggregate_v2(items: Sequence[Mapping[str, Any]]) -> float:
    """The mean rating as a percentage of the top rating (0-100)."""
    if not items:
        return 0.0
    return 100.0 * sum(float(item["rating"]) for item in items) / len(items) / MAX_RATING


# The published package's names for these helpers: task YAMLs written for it reference them.
clotho_aqa_doc_to_audio = doc_to_visual
clotho_aqa_doc_to_text = doc_to_text
