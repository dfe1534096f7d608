"""OCRBench: prompt building and wiring of substring matching (``lmms_eval.scoring.text``).

Every doc contributes to ``ocrbench_accuracy`` (correct / documents evaluated), to
``ocrbench_<question type>`` (e.g. ``ocrbench_doc_oriented_vqa``) and, for the six text
recognition types, to ``ocrbench_text_recognition``.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.text import ocrbench_match, slug

TEXT_RECOGNITION = frozenset(
    {
        "Regular Text Recognition",
        "Irregular Text Recognition",
        "Artistic Text Recognition",
        "Handwriting Recognition",
        "Digit String Recognition",
        "Non-Semantic Text Recognition",
    }
)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(str(doc["question"]).strip(), lmms_eval_specific_kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """1.0 when a ground truth occurs in the answer (HME100k: compared without spaces), else 0.0."""
    score = 1.0 if ocrbench_match(results[0], doc["answer"], str(doc["dataset"])) else 0.0
    question_type = str(doc["question_type"])
    metrics = {"ocrbench_accuracy": score, f"ocrbench_{slug(question_type)}": score}
    if question_type in TEXT_RECOGNITION:
        metrics["ocrbench_text_recognition"] = score
    return metrics


# The published package's names for these helpers: task YAMLs written for it reference them.
ocrbench_doc_to_text = doc_to_text
ocrbench_doc_to_visual = doc_to_visual
ocrbench_process_results = process_results
