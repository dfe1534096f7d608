"""MMBench tasks: the published prompt (see :func:`doc_to_text`) and CircularEval scoring.

Rules and CircularEval live in :mod:`lmms_eval.scoring.circular`. The dev tasks read answers by
rules; the ``*_judge`` variants send the answers the rules cannot resolve to the LLM judge
(``API_TYPE`` / ``MODEL_VERSION``) as one batch. ``mmbench_en_test`` writes the submission table
for the MMBench server.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.api.prompts import format_options, is_missing, rgb, user_message, with_prompts
from lmms_eval.scoring import circular

logger = logging.getLogger(__name__)

JUDGE_PROMPT = (
    "You are checking which option a model chose in a multiple-choice question.\n\n"
    "Question and options: {question}\n"
    "Correct option: {answer}\n"
    "Model answer: {prediction}\n\n"
    "Decide whether the model answer chooses the correct option, by its letter or by its content. "
    "An answer that chooses several options, another option, or none counts as not correct. "
    "{instruction}"
)


def _question(doc: Mapping[str, Any]) -> str:
    hint = doc.get("hint")
    question = str(doc["question"])
    return question if is_missing(hint) else f"{hint} {question}"


OPTIONS_INTRO = "There are several options:"


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """``"{hint} {question} There are several options:\\nA. ...\\nB. ...\\n"`` + post-prompt.

    The hint and its space only when the doc has one (not None, NaN or "nan"), as published.
    """
    options = format_options(list(circular.available_options(doc).values()))
    return with_prompts(f"{_question(doc)} {OPTIONS_INTRO}\n{options}\n", lmms_eval_specific_kwargs)


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    image = doc.get("image")
    return [] if image is None else [rgb(image)]


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


# -- dev: rule-based CircularEval ----------------------------------------------------------------


def _record(doc: Mapping[str, Any], response: str, extracted: str | None, via: str) -> dict[str, Any]:
    answer = str(doc["answer"]).strip()
    return {
        "index": int(doc["index"]),
        "category": doc.get("category"),
        "l2_category": doc.get("L2-category"),
        "answer": answer,
        "prediction": response,
        "extracted": extracted,
        "via": via,
        "correct": extracted == answer,
    }


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """``gpt_eval_score``: the variant's record (extracted letter, correctness, categories)."""
    response = str(results[0])
    extracted = circular.extract_choice(response, circular.available_options(doc))
    return {"gpt_eval_score": _record(doc, response, extracted, "rule" if extracted else "unresolved")}


def circular_aggregate(items: list[dict[str, Any]]) -> circular.ScoreTable:
    """``gpt_eval_score`` (CircularEval accuracy x100) and the per-category / per-L2 accuracies."""
    return circular.score_table(circular.circular_scores(items), "gpt_eval_score")


# -- dev with the judge --------------------------------------------------------------------------


def judge_process_results_batch(
    docs: Sequence[Mapping[str, Any]], results: list[list[Any]]
) -> list[dict[str, Any]]:
    """Rules first; the answers they leave unresolved go to the judge in one batch.

    The judge is asked whether the answer chooses the correct option. A "correct" verdict counts
    as the correct letter, anything else (a "not correct" verdict or a failed call) as wrong. The
    record keeps the judge's reply and call (``judge``).
    """
    from lmms_eval.llm_judge import get_server

    out = [process_results(doc, result) for doc, result in zip(docs, results)]
    pending = [i for i, metrics in enumerate(out) if metrics["gpt_eval_score"]["extracted"] is None]
    if not pending:
        return out
    requests = []
    for i in pending:
        doc, options = docs[i], circular.available_options(docs[i])
        answer = str(docs[i]["answer"]).strip()
        requests.append(
            {
                "question": f"{_question(doc)}\n{format_options(list(options.values()))}",
                "answer": f"{answer}. {options.get(answer, '')}".strip(),
                "prediction": str(results[i][0]),
                "custom_prompt": JUDGE_PROMPT,
            }
        )
    with get_server() as judge:
        verdicts = judge.evaluate_binary_batch(requests)
    for i, verdict in zip(pending, verdicts):
        record = out[i]["gpt_eval_score"]
        if not verdict["success"]:
            logger.warning(
                "MMBench %s: judge failed (%s); the answer counts as wrong", record["index"], verdict["error"]
            )
        chosen = verdict["success"] and verdict["result"] == "1"
        record.update(
            extracted=record["answer"] if chosen else None,
            correct=bool(chosen),
            via="judge",
            judge={"reply": verdict["raw"], "error": verdict["error"], **verdict["judge"]},
        )
    return out


# -- test: submission file -----------------------------------------------------------------------

_LEADING_COLUMNS = ("index", "question", "hint")
_TRAILING_COLUMNS = ("answer", "prediction", "category", "L2-category", "source", "split")


def process_submission(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """``submission``: the row of the submission table (the doc's fields and the raw prediction)."""
    row: dict[str, Any] = {name: doc.get(name) for name in _LEADING_COLUMNS}
    row.update(circular.available_options(doc))
    row.update({name: doc.get(name) for name in _TRAILING_COLUMNS})
    row["prediction"] = str(results[0]).strip()
    return {"submission": row}


def submission_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """index, question, hint, A-D (E when any row has it), answer, prediction, category, L2-category,
    source, split."""
    letters = [letter for letter in circular.OPTION_LETTERS if any(letter in row for row in rows)]
    return [*_LEADING_COLUMNS, *letters, *_TRAILING_COLUMNS]


def _cell(value: Any) -> Any:
    return "" if is_missing(value) else value


def write_submission(items: list[dict[str, Any]], context: AggregationContext) -> None:
    """Write the MMBench server's table: ``<task>_submission.xlsx``, or ``.tsv`` without openpyxl."""
    columns = submission_columns(items)
    rows = [[_cell(item.get(name)) for name in columns] for item in items]
    try:
        import openpyxl
    except ImportError:
        openpyxl = None
    if openpyxl is None:
        path = context.submission_path(f"{context.task_name}_submission.tsv")
        if path is not None:
            with open(path, "w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle, delimiter="\t")
                writer.writerow(columns)
                writer.writerows(rows)
        return None
    path = context.submission_path(f"{context.task_name}_submission.xlsx")
    if path is not None:
        workbook = openpyxl.Workbook()
        sheet = workbook.active or workbook.create_sheet()
        sheet.append(columns)
        for row in rows:
            sheet.append(row)
        workbook.save(path)
    return None
