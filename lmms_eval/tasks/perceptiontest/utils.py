"""PerceptionTest validation, multiple choice: three options per question, the gold index in ``answer_id``.

Prompt (published): the question, the options as ``A. ...`` lines, then "Answer with the option's
letter from the given choices directly." on its own line. Scoring: the option letter of the answer
against the gold letter; ``accuracy`` is the share correct, with breakdowns by ``area`` and
``reasoning``.

``perceptiontest_val_mcppl`` scores by log-likelihood instead: the options (as given) are
continuations of the bare question, and the most likely one is the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE, most_likely_choice
from lmms_eval.scoring.video import breakdown_key, choice_letter, find_video, video_folders

DATASET = "lmms-eval/PerceptionTest_Val"
CACHE_DIR = "perceptiontest_val"


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``videos/<video_name>.mp4``."""
    folders = video_folders(DATASET, CACHE_DIR, config="mc_question_val")
    return [find_video(f"{doc['video_name']}.mp4", folders, subdirs=("videos", ""))]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    options = "\n".join(f"{UPPERCASE[i]}. {str(o).strip()}" for i, o in enumerate(doc["options"]))
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}\n{options}{kwargs.get('post_prompt') or ''}"


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    """The ``mcppl`` choices: the options as given."""
    return [str(option) for option in doc["options"]]


def _scores(doc: Mapping[str, Any], index: int | None) -> dict[str, float]:
    """``accuracy`` (1.0 or 0.0) of the picked option index, also under the doc's area and reasoning type."""
    value = 1.0 if index == int(doc["answer_id"]) else 0.0
    out = {"accuracy": value}
    for field in ("area", "reasoning"):
        if doc.get(field):
            out[f"accuracy_{field}_{breakdown_key(doc[field])}"] = value
    return out


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """The scores of the option letter the answer names."""
    letter = choice_letter(results[0], len(doc["options"]))
    return _scores(doc, None if letter is None else UPPERCASE.index(letter))


def process_results_mcppl(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """The scores of the choice with the highest log-likelihood (the first on ties); ``results``
    holds one ``(log-likelihood, is_greedy)`` pair per option."""
    return _scores(doc, most_likely_choice(results))
