"""VocalSound: which of six human vocal sounds a clip holds (laughter, sigh, cough, throat
clearing, sneeze, sniff); the answer is free text.

Published key ``accuracy``: the answer is read as the first label, in the order of :data:`LABELS`,
whose first word it contains in any case ("Throat clearing" -> "throat", "sighing" -> Sigh), so "a
cough, not laughter" reads as Laughter. ``accuracy_strict`` (ours, beside it) needs the answer to
name the gold label and no other. Both are fractions (0-1); ``accuracy`` is rounded to 5 decimals,
as published.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import with_prompts
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs  # noqa: F401 - used by the YAML

LABELS = ("Laughter", "Sniff", "Throat clearing", "Cough", "Sigh", "Sneeze")


def keyword(label: Any) -> str:
    """The word an answer must contain for ``label``: its first word, lower case."""
    words = str(label).lower().split()
    return words[0] if words else ""


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The instruction is the task's post prompt (after its pre prompt)."""
    return with_prompts("", lmms_eval_specific_kwargs)


def doc_to_choice(doc: dict[str, Any]) -> list[str]:
    return list(LABELS)


def named_labels(answer: Any) -> set[str]:
    """The keywords of the six labels that ``answer`` contains."""
    text = str(answer).lower()
    return {keyword(label) for label in LABELS if keyword(label) in text}


ACC_DECIMALS = 5  # the published aggregation rounds accuracy to 5 decimals


def aggregate_accuracy(items: list[float]) -> float:
    """The accuracy rounded to 5 decimals, as published."""
    return round(sum(items) / len(items), ACC_DECIMALS) if items else float("nan")


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    answer = str(results[0]) if results else ""
    gold = keyword(doc["answer"])
    named = named_labels(answer)
    first = next((keyword(label) for label in LABELS if keyword(label) in named), None)
    published = first is not None and first == gold
    return {"accuracy": float(published), "accuracy_strict": float(named_labels(answer) == {gold})}


# The published package's names for these helpers: task YAMLs written for it reference them.
doc_to_audio = doc_to_visual
vocalsound_process_results = process_results
