"""NaturalBench: groups of two questions on two images, yes-no or two options
(:mod:`lmms_eval.scoring.naturalbench`).

Prompt (as published): the ``Question``, a space, and ``"Please answer Yes or No."`` (yes-no) or
``"Please output the letter corresponding to the correct option."`` (multiple choice); the image is
``Image``. The gold answers follow from the document's place in its group of four (``Index``), as
published, so no answer column is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.prompts import rgb, user_message
from lmms_eval.scoring import naturalbench

_SUFFIX = {
    "yes_no": "Please answer Yes or No.",
    "multiple_choice": "Please output the letter corresponding to the correct option.",
}
METRICS = ("naturalbench_G_ACC", "naturalbench_Q_ACC", "naturalbench_I_ACC", "naturalbench_ACC")


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> str:
    return f"{doc['Question']} {_SUFFIX.get(str(doc['Question_Type']), _SUFFIX['yes_no'])}"


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    image = doc.get("Image")
    return [] if image is None else [rgb(image)]


def doc_to_messages(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Any = None) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc))


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The gold answer by the document's place in its group: ``Yes`` / ``No`` or ``A`` / ``B``."""
    first, second = ("A", "B") if doc["Question_Type"] == "multiple_choice" else ("Yes", "No")
    return first if naturalbench.GROUP_ANSWERS[int(doc["Index"]) % 4] == 1 else second


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """The same item under every key: ``{"id": Index, "score": 1 | 0 | -1}`` (the answer read)."""
    response = str(results[0]) if results else ""
    item = {"id": int(doc["Index"]), "score": naturalbench.read_answer(response, str(doc["Question_Type"]))}
    return dict.fromkeys(METRICS, item)


def aggregate_acc(items: list[Mapping[str, Any]]) -> float:
    return naturalbench.score(items, "ACC")


def aggregate_q_acc(items: list[Mapping[str, Any]]) -> float:
    return naturalbench.score(items, "Q_ACC")


def aggregate_i_acc(items: list[Mapping[str, Any]]) -> float:
    return naturalbench.score(items, "I_ACC")


def aggregate_g_acc(items: list[Mapping[str, Any]]) -> float:
    return naturalbench.score(items, "G_ACC")


# The published package's names for these helpers: task YAMLs written for it reference them.
naturalbench_doc_to_text = doc_to_text
naturalbench_doc_to_visual = doc_to_visual
naturalbench_process_results = process_results
