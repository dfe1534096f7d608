"""VocalSound: which of six human vocal sounds a clip holds (laughter, sigh, cough, throat
clearing, sneeze, sniff); the answer is free text.

Published key ``accuracy``: an answer is right when it contains the first word of the gold label,
in any case ("Throat clearing" -> "throat"), whatever else it says, so "laughter, not a cough" is
right for Laughter and for Cough. ``accuracy_strict`` (ours, beside it) also needs the answer to
name no other label. Both are fractions (0-1).
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


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    answer = str(results[0]) if results else ""
    gold = keyword(doc["answer"])
    published = bool(gold) and gold in answer.lower()
    return {"accuracy": float(published), "accuracy_strict": float(named_labels(answer) == {gold})}
