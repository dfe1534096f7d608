"""V* Bench: fine details in high-resolution images, two categories (direct_attributes,
relative_position), lettered options (:mod:`lmms_eval.scoring.vstar`).

Prompt (as published): ``pre_prompt`` + the dataset's ``text`` with its ``(A) ...`` marks turned into
``A. ...`` lines + ``post_prompt``. ``vstar_<category>_acc`` and ``vstar_overall_acc`` are the
published numbers (percentages, by the published letter rule); the ``_strict`` keys are ours (the
shared letter reader, no letter read from inside a word).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import doc_image, user_message, with_prompts
from lmms_eval.scoring import vstar
from lmms_eval.scoring.choice import extract_mcq_answer

CATEGORIES = ("direct_attributes", "relative_position")


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    return with_prompts(vstar.option_lines(str(doc["text"])), lmms_eval_specific_kwargs)


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_image(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def _category_docs(category: str) -> Any:
    def process_docs(dataset: Any) -> Any:
        return dataset.filter(lambda doc: doc["category"] == category)

    return process_docs


process_docs_direct_attributes = _category_docs("direct_attributes")
process_docs_relative_position = _category_docs("relative_position")


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """Published keys ``vstar_<category>_acc`` and ``vstar_overall_acc``; ours with ``_strict``."""
    response = str(results[0]).strip() if results else ""
    gold = str(doc["label"]).strip().upper()
    category = str(doc.get("category") or "")
    item = {"question_id": doc["question_id"], "category": category, "ground_truth": gold}
    letter = vstar.published_letter(response)
    strict = extract_mcq_answer(response, "ABCD")
    published = {**item, "score": float(letter == gold), "prediction": letter}
    ours = {**item, "score": float(strict == gold), "prediction": strict}
    out: dict[str, Any] = {"vstar_overall_acc": published, "vstar_overall_acc_strict": ours}
    if category in CATEGORIES:
        out[f"vstar_{category}_acc"] = published
        out[f"vstar_{category}_acc_strict"] = ours
    return out


def aggregate(items: list[Mapping[str, Any]]) -> float:
    """The share of questions answered right, as a percentage (as published)."""
    return 100 * sum(float(item["score"]) for item in items) / len(items) if items else float("nan")


# The published package's names for these helpers: task YAMLs written for it reference them.
vstar_doc_to_text = doc_to_text
vstar_doc_to_visual = doc_image
vstar_process_results = process_results
