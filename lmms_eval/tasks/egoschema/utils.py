"""EgoSchema: five-option questions on three-minute egocentric clips, one question per video.

Prompt (published): the question, the options (already lettered "A. ..."), then the post prompt
after a line break. The answer is the option index (``"0"``-``"4"``); the option letter is read by
the MMMU parser, or the whole answer naming one option's text.

The ``_mcppl`` variants score by log-likelihood instead: the choices are the option texts (the
``"A. "`` prefix removed), the prompt is the bare question, and the prediction is the choice with
the highest log-likelihood.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.scoring.choice import UPPERCASE, most_likely_choice
from lmms_eval.scoring.video import find_video, mmmu_style_choice, video_folders

DATASET = "lmms-eval/egoschema"
CACHE_DIR = "egoschema"
SUBMISSION_FILE = "inference_results_egoschema_MC.json"
SUBMISSION_FILE_MCPPL = "inference_results_egoschema_MC_PPL.json"
_LETTERED = ("A.", "B.", "C.", "D.", "E.")


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``videos/<video_idx>.mp4``."""
    folders = video_folders(DATASET, CACHE_DIR)
    return [find_video(f"{doc['video_idx']}.mp4", folders, subdirs=("videos", ""))]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    options = "\n".join(str(option).strip() for option in doc["option"])
    return f"{kwargs.get('pre_prompt') or ''}{doc['question']}\n{options}\n{kwargs.get('post_prompt') or ''}"


def doc_to_target(doc: Mapping[str, Any]) -> str:
    return str(doc["answer"])


def option_texts(doc: Mapping[str, Any]) -> list[str]:
    """The options without their ``"A. "`` prefixes."""
    return [str(o).strip()[2:].strip() if str(o).strip()[:2] in _LETTERED else str(o) for o in doc["option"]]


def predicted_index(doc: Mapping[str, Any], response: Any) -> int:
    """The 0-based index of the option the response picks; -1 when it picks none."""
    letter = mmmu_style_choice(response, option_texts(doc))
    return UPPERCASE.index(letter) if letter is not None else -1


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    """The ``_mcppl`` choices: the option texts, scored as continuations of the question."""
    return option_texts(doc)


def _score(doc: Mapping[str, Any], index: int) -> dict[str, float]:
    return {"score": 1.0 if str(index) == str(doc["answer"]).strip() else 0.0}


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """``score``: 1.0 when the picked option is the gold one, else 0.0."""
    return _score(doc, predicted_index(doc, results[0]))


def process_results_mcppl(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """``score`` of the most likely choice."""
    return _score(doc, most_likely_choice(results))


def process_submission(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """The submission entry ``{video_idx: option index}`` (answers are hidden)."""
    return {"submission": {str(doc["video_idx"]): predicted_index(doc, results[0])}}


def process_submission_mcppl(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    """The submission entry ``{video_idx: index of the most likely choice}``."""
    return {"submission": {str(doc["video_idx"]): most_likely_choice(results)}}


def _write(items: list[dict[str, int]], context: AggregationContext, filename: str) -> None:
    merged: dict[str, int] = {}
    for item in items:
        merged.update(item)
    context.write_json(filename, merged)


def write_submission(items: list[dict[str, int]], context: AggregationContext) -> None:
    """Write the evaluation server's file ``{video_idx: option index}``; no score."""
    _write(items, context, SUBMISSION_FILE)


def write_submission_mcppl(items: list[dict[str, int]], context: AggregationContext) -> None:
    """:func:`write_submission` for ``egoschema_mcppl`` (its own file name)."""
    _write(items, context, SUBMISSION_FILE_MCPPL)


# The published package's names for these helpers: task YAMLs written for it reference them.
egoschema_doc_to_answer = doc_to_target
egoschema_doc_to_choice = doc_to_choice
egoschema_doc_to_text = doc_to_text
egoschema_doc_to_visual = doc_to_visual
egoschema_process_results = process_results_mcppl
egoschema_process_results_generation = process_results
