"""MMVP: 150 image pairs, one two-option question per image (:mod:`lmms_eval.scoring.mmvp`).

Prompt: ``pre_prompt + Question + "\\n" + "A. ...\\nB. ..." + post_prompt``. ``mmvp_accuracy`` is the
share of questions answered right and ``mmvp_pair_accuracy`` the share of pairs (documents
``Index`` 1-2, 3-4, ...) with both right, by the published letter rule; the ``_strict`` keys use
the shared letter reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import doc_image, format_options, option_letters, user_message, with_prompts
from lmms_eval.scoring import mmvp
from lmms_eval.scoring.choice import extract_mcq_answer


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    options = format_options(mmvp.parse_options(doc["Options"]))
    return with_prompts(f"{doc['Question']}\n{options}", lmms_eval_specific_kwargs)


def doc_to_messages(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_image(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def doc_to_target(doc: Mapping[str, Any]) -> str:
    return str(doc["Correct Answer"])


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    response = str(results[0]) if results else ""
    count = len(mmvp.parse_options(doc["Options"]))
    gold = mmvp.gold_letter(doc["Correct Answer"])
    index = int(doc["Index"]) - 1
    letter = mmvp.published_letter(response, count)
    strict = extract_mcq_answer(response, "".join(option_letters(count))) or ""
    item = {"index": index, "pair_index": index // 2, "pred": response, "pred_letter": letter, "gt": gold}
    published = {**item, "is_correct": letter == gold}
    ours = {**item, "pred_letter": strict, "is_correct": strict == gold}
    return {
        "mmvp_accuracy": published,
        "mmvp_pair_accuracy": published,
        "mmvp_accuracy_strict": ours,
        "mmvp_pair_accuracy_strict": ours,
    }


def aggregate_accuracy(items: list[Mapping[str, Any]]) -> float:
    """The share of questions answered right."""
    return sum(bool(item["is_correct"]) for item in items) / len(items) if items else float("nan")


def aggregate_pairs(items: list[Mapping[str, Any]]) -> float:
    """The share of image pairs with both questions right."""
    return mmvp.pair_accuracy(items)


# The published package's names for these helpers: task YAMLs written for it reference them.
mmvp_doc_to_target = doc_to_target
mmvp_doc_to_text = doc_to_text
mmvp_doc_to_visual = doc_image
mmvp_process_results = process_results
