"""HallusionBench task wiring; the yes/no rule and aAcc/qAcc/fAcc live in :mod:`lmms_eval.scoring.yesno`."""

from __future__ import annotations

from typing import Any

from lmms_eval.scoring.yesno import hb_gold, hb_judged_items, hb_rule_items, hb_scores

METRICS = ("aAcc", "qAcc", "fAcc")


def doc_to_target(doc: dict[str, Any]) -> str:
    """ "Yes" for gt_answer "1", "No" for "0"."""
    return hb_gold(doc["gt_answer"], doc.get("question_id")).capitalize()


def _metrics(item: dict[str, Any]) -> dict[str, Any]:
    return dict.fromkeys(METRICS, item)


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """The rule-read record for aAcc, qAcc and fAcc (an unreadable answer is wrong)."""
    [item] = hb_rule_items([doc], [str(results[0])])
    return _metrics(item)


def process_results_batch_judge(docs: list[dict[str, Any]], results: list[list[Any]]) -> list[dict[str, Any]]:
    """Rule first; the answers it cannot read go to the judge (``get_server()``) in one batch."""
    from lmms_eval.llm_judge import get_server

    outputs = [str(result[0]) for result in results]
    with get_server() as server:
        items = hb_judged_items(docs, outputs, server)
    return [_metrics(item) for item in items]


def aggregate_aacc(items: list[dict[str, Any]]) -> dict[str, float]:
    """Question accuracy ×100, overall and per category (VD, VS)."""
    return hb_scores(items, "aAcc")


def aggregate_qacc(items: list[dict[str, Any]]) -> dict[str, float]:
    """Question-group accuracy ×100 (all figures of a set answered right), overall and per category."""
    return hb_scores(items, "qAcc")


def aggregate_facc(items: list[dict[str, Any]]) -> dict[str, float]:
    """Figure accuracy ×100 (all questions about a figure answered right), overall and per category."""
    return hb_scores(items, "fAcc")
