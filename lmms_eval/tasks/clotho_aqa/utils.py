"""Clotho-AQA: a sound clip and a question whose answer is one word (often "yes" or "no").

The model hears the clip (``doc_to_visual``) and reads the question with the single-word
instruction; the built-in ``exact_match`` compares its output with ``answer`` ignoring case and
punctuation, as published.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import with_prompts
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs  # noqa: F401 - used by the YAML


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(str(doc["question"]), lmms_eval_specific_kwargs)
