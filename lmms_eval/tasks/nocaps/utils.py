"""NoCaps (validation): captions of Open Images pictures with objects beyond COCO's classes.

Scored with the COCO caption metrics of ``coco_cap`` (corpus BLEU 1-4, METEOR, ROUGE-L, CIDEr-D)
against the ten human captions of each image.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts

PROMPT = "Provide a one-sentence caption for the provided image."
METRICS = (
    "nocaps_Bleu_4",
    "nocaps_Bleu_3",
    "nocaps_Bleu_2",
    "nocaps_Bleu_1",
    "nocaps_METEOR",
    "nocaps_ROUGE_L",
    "nocaps_CIDEr",
)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return with_prompts(str(kwargs.get("prompt") or PROMPT), kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    item = {
        "image_id": doc["image_id"],
        "prediction": str(results[0] or ""),
        "references": [str(c) for c in doc["annotations_captions"]],
    }
    return dict.fromkeys(METRICS, item)


# The published package's names for these helpers: task YAMLs written for it reference them.
nocaps_doc_to_text = doc_to_text
nocaps_doc_to_visual = doc_to_visual
nocaps_process_result = process_results
