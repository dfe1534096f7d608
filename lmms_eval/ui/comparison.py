"""Compare two runs: the numbers of ``lmms-eval compare`` (:func:`lmms_eval.compare.compare_runs`,
computed here, on the server side) and the documents whose scores differ, with both answers."""

from __future__ import annotations

import math
from typing import Any

from lmms_eval.compare import ComparisonReport, compare_runs, load_doc_scores
from lmms_eval.errors import LmmsEvalError
from lmms_eval.secrets import redact
from lmms_eval.ui.media import media_list, shorten
from lmms_eval.ui.runs import Run
from lmms_eval.ui.samples import SamplesCache
from lmms_eval.ui.security import Refused

MAX_DISAGREEMENTS = 200  # documents listed per task


def report_of(a: Run, b: Run) -> ComparisonReport:
    """The paired comparison A - B, exactly as ``lmms-eval compare`` computes it."""
    try:
        return compare_runs(load_doc_scores(_source(a)), load_doc_scores(_source(b)))
    except (LmmsEvalError, ValueError, RecursionError) as exc:  # a samples file it cannot read
        raise Refused(422, str(exc)[:500]) from None


def _source(run: Run) -> Any:
    """The run's samples files as the listing found them (regular files only; a FIFO or device
    named like a samples file was skipped there), never its folder searched again."""
    if run.error:
        raise Refused(422, f"run '{run.id}' cannot be compared: {run.error}")
    if not run.files.samples:
        raise Refused(422, f"run '{run.id}' has no samples files; compare needs per-document scores")
    return run.files.sample_files()


def _first_per_task(report: ComparisonReport, a: Run) -> list[tuple[str, str, str, str]]:
    """(task A, task B, metric, filter): each task's main metric, else its first compared one."""
    chosen: dict[str, tuple[str, str, str, str]] = {}
    for c in report.comparisons:
        main = a.main_metric(c.task)
        current = chosen.get(c.task)
        if current is None or (c.metric == main and current[2] != main):
            chosen[c.task] = (c.task, c.task_b or c.task, c.metric, c.filter)
    return list(chosen.values())


def _answer(resps: Any) -> Any:
    return resps[0] if isinstance(resps, list) and len(resps) == 1 else resps


def disagreements(a: Run, b: Run, report: ComparisonReport, cache: SamplesCache) -> list[dict[str, Any]]:
    """Per task: the documents whose scores differ between the runs, with both answers."""
    out = []
    for task_a, task_b, metric, filter_key in _first_per_task(report, a):
        file_a, file_b = cache.get(a.samples_file(task_a)), cache.get(b.samples_file(task_b))
        facts_a, facts_b = file_a.facts(), file_b.facts()
        lines_a, lines_b = facts_a.lines_by_doc(filter_key), facts_b.lines_by_doc(filter_key)
        differing = []
        for doc_id, line_a in sorted(lines_a.items()):
            line_b = lines_b.get(doc_id)
            if line_b is None:
                continue
            score_a = facts_a.scores[line_a].get(metric, math.nan)
            score_b = facts_b.scores[line_b].get(metric, math.nan)
            if not math.isclose(score_a, score_b, abs_tol=1e-12) and not (
                math.isnan(score_a) and math.isnan(score_b)
            ):
                differing.append((doc_id, line_a, line_b, score_a, score_b))
        docs = []
        for doc_id, line_a, line_b, score_a, score_b in differing[:MAX_DISAGREEMENTS]:
            rec_a, rec_b = file_a.record(line_a), file_b.record(line_b)
            docs.append(
                {
                    "doc_id": doc_id,
                    "line_a": line_a,
                    "line_b": line_b,
                    "score_a": None if math.isnan(score_a) else score_a,
                    "score_b": None if math.isnan(score_b) else score_b,
                    "input": shorten(rec_a.input),
                    "target": shorten(rec_a.target),
                    "answer_a": shorten(_answer(rec_a.filtered_resps)),
                    "answer_b": shorten(_answer(rec_b.filtered_resps)),
                    "media": media_list(task_a, rec_a.doc),
                }
            )
        out.append(
            {
                "task": task_a,
                "task_b": task_b,
                "metric": metric,
                "filter": filter_key,
                "total": len(differing),
                "docs": docs,
            }
        )
    return out


def compare_view(a: Run, b: Run, cache: SamplesCache) -> dict[str, Any]:
    report = report_of(a, b)
    return {
        "a": a.id,
        "b": b.id,
        "report": redact(report.to_dict()),
        "disagreements": disagreements(a, b, report, cache),
    }
