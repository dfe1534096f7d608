"""Flickr30k (test): captions of everyday scenes, scored with the COCO caption metrics of
``coco_cap`` (corpus BLEU 1-4, METEOR, ROUGE-L, CIDEr-D) against the five human captions."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message

PROMPT = "Provide a one-sentence caption for the provided image."
METRICS = (
    "flickr_Bleu_4",
    "flickr_Bleu_3",
    "flickr_Bleu_2",
    "flickr_Bleu_1",
    "flickr_METEOR",
    "flickr_ROUGE_L",
    "flickr_CIDEr",
)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any]) -> str:
    return PROMPT


def doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), PROMPT)


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    item = {
        "image_id": str(doc["img_id"]),
        "prediction": str(results[0] or ""),
        "references": [str(c) for c in doc["caption"]],
    }
    return dict.fromkeys(METRICS, item)


# The published package's names for these helpers: task YAMLs written for it reference them.
flickr_doc_to_text = doc_to_text
flickr_doc_to_visual = doc_to_visual
flickr_process_result = process_results
