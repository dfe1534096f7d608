"""ActivityNet-QA: open questions on ActivityNet videos, judged yes/no with a 0-5 score.

Prompt (published): the question with its first letter capitalised and a question mark, then the
post prompt " Answer the question using a single word or phrase.". ``activitynetqa`` decides by
rule (offline); ``activitynetqa_judge`` sends the answers the rule is not sure of to an LLM judge
with the published judge prompt (:mod:`lmms_eval.scoring.open_qa`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.scoring.open_qa import (
    JUDGE_MAX_TOKENS,
    Verdict,
    judge_messages,
    parse_judge_reply,
    rule_verdict,
)
from lmms_eval.scoring.video import find_video, video_folders

logger = logging.getLogger(__name__)

DATASET = "lmms-eval/ActivityNetQA"
CACHE_DIR = "activitynetqa"


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``all_test/v_<video_name>.mp4`` (also ``.mkv``, ``.webm``, and without the ``v_`` prefix)."""
    folders = video_folders(DATASET, CACHE_DIR)
    name = str(doc["video_name"])
    found = find_video(f"v_{name}", folders, subdirs=("all_test", ""))
    if not os.path.isfile(found):
        plain = find_video(name, folders, subdirs=("all_test", ""))
        found = plain if os.path.isfile(plain) else found
    return [found]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    question = str(doc["question"]).strip()
    question = question[:1].upper() + question[1:] + "?"
    return f"{kwargs.get('pre_prompt') or ''}{question}{kwargs.get('post_prompt') or ''}"


def _metrics(verdict: Verdict, error: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "gpt_eval_score": verdict.score,
        "gpt_eval_accuracy": 100.0 if verdict.correct else 0.0,
        "verdict_source": verdict.source,
    }
    if error is not None:
        out["judge_error"] = error
    return out


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """The rule's verdict as the published keys (score 0-5; accuracy 100 or 0)."""
    return _metrics(rule_verdict(doc["answer"], results[0]))


def _judge(docs: Sequence[Mapping[str, Any]], outputs: Sequence[str], pending: list[int]) -> dict[int, Any]:
    from lmms_eval.llm_judge import Request, get_server

    requests = [
        Request(
            messages=judge_messages(docs[i]["question"], docs[i]["answer"], outputs[i]),
            temperature=0,
            max_tokens=JUDGE_MAX_TOKENS,
            metadata={"kind": "activitynetqa", "answer": docs[i]["answer"], "prediction": outputs[i]},
        )
        for i in pending
    ]
    with get_server() as server:
        replies = server.complete_batch(requests)
    return dict(zip(pending, replies, strict=True))


def process_results_batch_judge(docs: list[dict[str, Any]], results: list[list[Any]]) -> list[dict[str, Any]]:
    """Rule verdicts where the rule is sure; the judge (``get_server()``) for the rest, in one batch."""
    outputs = [str(result[0]) for result in results]
    verdicts = [rule_verdict(doc["answer"], out) for doc, out in zip(docs, outputs, strict=True)]
    pending = [i for i, verdict in enumerate(verdicts) if not verdict.resolved]
    replies = _judge(docs, outputs, pending) if pending else {}
    rows, failures = [], 0
    for i, verdict in enumerate(verdicts):
        if i not in replies:
            rows.append(_metrics(verdict))
            continue
        reply = replies[i]
        judged = parse_judge_reply(reply.content)
        if judged is None:
            failures += 1
            error = reply.error or f"unreadable judge reply: {str(reply.content)[:200]!r}"
            rows.append(_metrics(Verdict(False, 0.0, True, "judge"), error))
        else:
            rows.append(_metrics(judged))
    if failures:
        logger.warning("activitynetqa: %d of %d judge verdict(s) failed; scored no/0", failures, len(pending))
    return rows


# The published package's names for these helpers: task YAMLs written for it reference them.
activitynetqa_doc_to_text = doc_to_text
activitynetqa_doc_to_visual = doc_to_visual
activitynetqa_process_results = process_results
