"""LogicVista, the ``_reasoning`` variant: logical reasoning on images, answered as
``<think>...</think><answer>...</answer>`` (:mod:`lmms_eval.scoring.reasoning_tags`).

Prompt (as published): a system turn with the reasoning instruction, then the image and the
``question`` as is. ``acc_score`` and ``format_score`` are the published per-document scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import doc_image
from lmms_eval.scoring import reasoning_tags


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> str:
    return str(doc["question"])


def doc_to_messages(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in doc_image(doc)]
    content.append({"type": "text", "text": doc_to_text(doc)})
    return [
        {"role": "system", "content": [{"type": "text", "text": reasoning_tags.SYSTEM_PROMPT}]},
        {"role": "user", "content": content},
    ]


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    response = str(results[0]) if results else ""
    return {
        "acc_score": reasoning_tags.acc_score(response, doc["answer"]),
        "format_score": reasoning_tags.format_score(response),
    }
