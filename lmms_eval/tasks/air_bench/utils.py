"""AIR-Bench (``lmms-lab/AIR_Bench``): questions about speech, sound and music clips.

**Foundation** (config ``Foundation``, splits ``sound`` / ``music`` / ``speech``): single-choice
questions with two to four options in ``choice_a`` ... ``choice_d`` and the right option's text in
``answer_gt``. Prompt (published): the question, then the four lines ``A. ...`` to ``D. ...`` (an
option the question lacks is printed as its raw value, e.g. ``C. None``), then the post prompt.
The letter the output commits to is read by :func:`lmms_eval.scoring.choice.extract_mcq_answer`
over the letters of the options the question has. ``accuracy`` is the share right (0-1, as
published); the aggregation logs the share right per ``task_name`` (the published breakdown).

**Chat** (config ``Chat``, splits ``sound`` / ``music`` / ``speech`` / ``mixed``): open questions
with a reference answer (``answer_gt``) and a text description of the clip (``meta_info``). A
judge that reads the description scores the model's answer and the reference from 1 to 10, twice,
with the two answers in both orders; the model's score for a question is the mean of its two
scores, and ``gpt_eval`` is the mean over questions (a question whose verdicts cannot be read
scores 0, as published). The published task has no offline rule, so these tasks need a judge:
without ``API_TYPE`` or ``OPENAI_API_KEY`` scoring stops with a :class:`ConfigError` that says so.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.api.prompts import LETTERS
from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs  # noqa: F401 - used by the YAML

logger = logging.getLogger(__name__)

OPTION_FIELDS = ("choice_a", "choice_b", "choice_c", "choice_d")
JUDGE_MAX_TOKENS = 1024
MIN_SCORE, MAX_SCORE = 1, 10


# -- foundation -------------------------------------------------------------------------------------


def _present(value: Any) -> bool:
    return value is not None and str(value) != ""


def options(doc: Mapping[str, Any]) -> dict[str, str]:
    """``{letter: option text}`` of the options the question has (missing or empty ones left out)."""
    return {
        letter: str(doc.get(field))
        for letter, field in zip(LETTERS, OPTION_FIELDS)
        if _present(doc.get(field))
    }


def doc_to_text_foundation(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    lines = "".join(f"{letter}. {doc.get(field)}\n" for letter, field in zip(LETTERS, OPTION_FIELDS))
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}\n{lines}{kwargs.get('post_prompt') or ''}"


def doc_to_target_foundation(doc: Mapping[str, Any]) -> str | None:
    """The letter of the option whose text is ``answer_gt`` (None when no option is)."""
    return next((letter for letter, text in options(doc).items() if text == str(doc["answer_gt"])), None)


def process_results_foundation(doc: Mapping[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    """One ``accuracy`` item ``{id, task, score}``; an output with no letter it commits to is wrong."""
    gold = doc_to_target_foundation(doc)
    if gold is None:
        logger.warning("air_bench: the answer of question %s is none of its options", doc.get("uniq_id"))
    predicted = extract_mcq_answer(results[0] if results else None, "".join(options(doc)))
    score = float(gold is not None and predicted == gold)
    return {"accuracy": {"id": doc.get("uniq_id"), "task": doc.get("task_name"), "score": score}}


def accuracy_by_task(items: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The share right per ``task_name``, in the order the tasks first appear."""
    groups: dict[str, list[float]] = defaultdict(list)
    for item in items:
        groups[str(item["task"])].append(float(item["score"]))
    return {task: sum(scores) / len(scores) for task, scores in groups.items()}


def aggregate_foundation(items: list[dict[str, Any]]) -> float:
    """The share right over all questions (0-1); the per-``task_name`` shares are logged."""
    if not items:
        return 0.0
    overall = sum(float(item["score"]) for item in items) / len(items)
    breakdown = ", ".join(f"{task} {share:.4f}" for task, share in accuracy_by_task(items).items())
    logger.info(
        "air_bench foundation: accuracy %.4f over %d questions; by task: %s", overall, len(items), breakdown
    )
    return overall


# -- chat -------------------------------------------------------------------------------------------


def doc_to_text_chat(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    """The question and the post prompt joined with no separator, as published."""
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}{kwargs.get('post_prompt') or ''}"


JUDGE_PROMPT = """\
Two AI assistants answered a question about an audio clip. You cannot hear the clip; a detailed \
description of it is given instead.

[Audio description]
{description}

[Question]
{question}

[Assistant 1's answer]
{first}

[Assistant 2's answer]
{second}

Rate each answer for helpfulness, relevance, accuracy and level of detail with an overall score \
from 1 to 10, where higher is better. Reply with one line holding only the two scores, Assistant \
1's first, separated by a space."""


def judge_prompt(doc: Mapping[str, Any], first: str, second: str) -> str:
    return JUDGE_PROMPT.format(
        description=doc.get("meta_info") or "", question=doc["question"], first=first, second=second
    )


def _requests(doc: Mapping[str, Any], prediction: str) -> list[Any]:
    """The two judge calls of a question: reference first, then the model's answer first."""
    from lmms_eval.llm_judge import Request

    reference = str(doc["answer_gt"])
    orders = ((reference, prediction), (prediction, reference))
    return [
        Request.from_prompt(
            judge_prompt(doc, first, second),
            max_tokens=JUDGE_MAX_TOKENS,
            metadata={
                "kind": "comparative",
                "question": doc["question"],
                "response_a": first,
                "response_b": second,
                "min_score": MIN_SCORE,
                "max_score": MAX_SCORE,
            },
        )
        for first, second in orders
    ]


def model_score(replies: Sequence[str | None]) -> float | None:
    """The mean of the model's scores in the two verdicts (second number of the first, first of
    the second), or None when either verdict cannot be read."""
    from lmms_eval.llm_judge import parse_score_pair

    pairs = [parse_score_pair(reply or "", MIN_SCORE, MAX_SCORE) for reply in replies]
    if len(pairs) != 2 or pairs[0] is None or pairs[1] is None:
        return None
    return (pairs[0][1] + pairs[1][0]) / 2


def process_results_batch_chat(docs: list[dict[str, Any]], results: list[list[Any]]) -> list[dict[str, Any]]:
    """``gpt_eval`` per question from two judge calls each, sent as one concurrent batch."""
    from lmms_eval.llm_judge import get_server, require_judge

    require_judge("air_bench_chat", "the published task has no offline rule")
    outputs = [str(result[0]) if result else "" for result in results]
    requests = [request for doc, out in zip(docs, outputs, strict=True) for request in _requests(doc, out)]
    with get_server() as server:
        replies = server.complete_batch(requests)
    rows, failures = [], 0
    for i, doc in enumerate(docs):
        pair = replies[2 * i : 2 * i + 2]
        texts = [reply.content for reply in pair]
        score = model_score(texts)
        row: dict[str, Any] = {
            "gpt_eval": {
                "id": doc.get("uniq_id"),
                "task": doc.get("task_name"),
                "score": 0.0 if score is None else score,
            },
            "judge_replies": texts,
        }
        if score is None:
            failures += 1
            errors = [reply.error for reply in pair if reply.error]
            row["judge_error"] = (
                "; ".join(errors) or f"unreadable judge reply: {[str(t)[:200] for t in texts]!r}"
            )
        rows.append(row)
    if failures:
        logger.warning(
            "air_bench_chat: %d of %d question(s) without readable verdicts; scored 0", failures, len(docs)
        )
    return rows


def aggregate_chat(items: list[dict[str, Any]]) -> float:
    """The model's mean judge score (1-10) over all questions, failed verdicts counted as 0."""
    return sum(float(item["score"]) for item in items) / len(items) if items else 0.0


# The published package's names for these helpers: task YAMLs written for it reference them.
air_bench_doc_to_audio = doc_to_visual
air_bench_doc_to_target_foundation = doc_to_target_foundation
air_bench_doc_to_text_chat = doc_to_text_chat
air_bench_doc_to_text_foundation = doc_to_text_foundation
air_bench_process_results_foundation = process_results_foundation
