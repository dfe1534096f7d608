"""MathVista: prompt wiring and scoring (rules in lmms_eval.scoring.mathvista).

``llm_as_judge_eval`` (the published result key) is the accuracy x100; the ``acc_<task>`` and
``acc_<skill>`` keys are the same accuracy over the documents of one MathVista task or skill.
The ``*_judge`` variants ask the LLM judge (env ``API_TYPE`` / ``MODEL_VERSION``) about the
responses the rules cannot read, in one concurrent batch.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring import mathvista


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    image = doc.get("decoded_image")
    return [] if image is None else [rgb(image)]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return with_prompts(mathvista.build_query(doc, str(kwargs.get("shot_type") or "solution")), kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def _metrics(doc: dict[str, Any], correct: bool) -> dict[str, float | None]:
    value = 100.0 if correct else 0.0
    return {"llm_as_judge_eval": value, **mathvista.category_values(doc, value)}


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float | None]:
    return _metrics(doc, mathvista.score_response(str(results[0] or ""), doc).correct)


def process_results_batch_judge(docs: list[dict[str, Any]], results: list[list[Any]]) -> list[dict[str, Any]]:
    """Rules first; the judge decides only the responses the rules cannot read."""
    from lmms_eval.llm_judge import get_server

    responses = [str(r[0] or "") for r in results]
    scores = [mathvista.score_response(r, d) for r, d in zip(responses, docs)]
    extractions = [s.extraction for s in scores]
    judged: dict[int, bool] = {}
    if any(e is None for e in extractions):
        with get_server() as server:
            judged = mathvista.judge_unresolved(docs, responses, extractions, server)
    return [_metrics(doc, judged.get(i, s.correct)) for i, (doc, s) in enumerate(zip(docs, scores))]


def process_test_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    response = str(results[0] or "")
    return {
        "submission": {
            "pid": str(doc.get("pid")),
            "response": response,
            "extraction": mathvista.extract_answer(response, doc),
            "question_type": doc.get("question_type"),
            "answer_type": doc.get("answer_type"),
        }
    }


def submission_file(items: list[dict[str, Any]], context: AggregationContext) -> None:
    """Write the test responses for the MathVista leaderboard; no score (the answers are hidden)."""
    context.write_json(
        "mathvista_test_submission.json",
        {i["pid"]: {k: v for k, v in i.items() if k != "pid"} for i in items},
    )
    return None


# The published package's names for these helpers: task YAMLs written for it reference them.
mathvista_doc_to_text = doc_to_text
mathvista_doc_to_visual = doc_to_visual
mathvista_process_results = process_results
