"""POPE task wiring; the answer rule and the metrics live in :mod:`lmms_eval.scoring.yesno`.

Each metric's aggregation has a vectorised form for the error-bar bootstrap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lmms_eval.api.prompts import doc_image, doc_question
from lmms_eval.scoring.yesno import pope_metric, pope_metric_batch, pope_prediction
from lmms_eval.stats import register_batched


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """The same record for every POPE metric: ``{question_id, prediction, answer}``."""
    item = {
        "question_id": doc["question_id"],
        "prediction": pope_prediction(str(results[0])),
        "answer": doc["answer"],
    }
    return {f"pope_{name}": item for name in ("accuracy", "precision", "recall", "f1_score", "yes_ratio")}


def _aggregation(name: str) -> Callable[[list[dict[str, Any]]], float]:
    def aggregate(items: list[dict[str, Any]]) -> float:
        return pope_metric(items, name)

    def batch(items: Sequence[Any], idx: Any) -> Any:
        return pope_metric_batch(items, idx, name)

    aggregate.__name__ = aggregate.__qualname__ = f"aggregate_{name}"
    aggregate.__doc__ = f"POPE {name} over the task's records (see lmms_eval.scoring.yesno.pope_scores)."
    register_batched(aggregate, batch)
    return aggregate


aggregate_accuracy = _aggregation("accuracy")
aggregate_precision = _aggregation("precision")
aggregate_recall = _aggregation("recall")
aggregate_f1_score = _aggregation("f1_score")
aggregate_yes_ratio = _aggregation("yes_ratio")

# The published package's names for these helpers: task YAMLs written for it reference them.
pope_doc_to_text = doc_question
pope_doc_to_visual = doc_image
pope_process_results = process_results
