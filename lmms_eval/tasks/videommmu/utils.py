"""Video-MMMU: lecture videos from the six MMMU disciplines, each followed by a question on
perception (what the video shows), comprehension, or adaptation (applying it to a new problem,
whose image is the video's last frame).

Prompts (published): adaptation says to watch and learn the video, then to answer the
multiple-choice or open question whose image ends the video; perception and comprehension give the
question and options and ask to ignore the quiz in the last frame; the question-only variant gives
the question and options alone, with a clip of the question image. Options are lettered "A. ...".

Scoring as MMMU (:func:`lmms_eval.scoring.mmmu.score`). ``mmmu_acc`` with the published rules,
rounded to 5 decimals: a multiple-choice answer is read by its letters only (a bracketed or
standalone letter; no option texts, no random letter: otherwise wrong). ``mmmu_acc_strict`` (ours,
beside it) also reads the option text of a long answer ("Pop art is the style ..." is the option
Pop art).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring import mmmu
from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import find_video, video_folders

DATASET = "lmms-eval/VideoMMMU"
CACHE_DIR = "video_mmmu"
ACC_DECIMALS = 5


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """The lecture video: ``<subject>/<id>.mp4`` (the subject parsed from the id)."""
    subject = mmmu.subject_of(str(doc["id"]))
    return [find_video(f"{doc['id']}.mp4", video_folders(DATASET, CACHE_DIR), subdirs=(subject, ""))]


def doc_to_visual_question_only(doc: Mapping[str, Any]) -> list[str]:
    """The clip of the question image alone: ``question_only/<id>_image.mp4``."""
    return [
        find_video(f"{doc['id']}_image.mp4", video_folders(DATASET, CACHE_DIR), subdirs=("question_only", ""))
    ]


def _options(doc: Mapping[str, Any]) -> str:
    return "".join(f"\n{UPPERCASE[i]}. {option}" for i, option in enumerate(doc.get("options") or []))


def doc_to_text_adaptation(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    if doc["question_type"] == "multiple-choice":
        return f"{kwargs.get('pre_prompt', '')}{kwargs.get('mcq_prompt', '')}{doc['question']}{_options(doc)}"
    return f"{kwargs.get('pre_prompt', '')}{kwargs.get('open_ended_prompt', '')}{doc['question']}"


def doc_to_text_question_only(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    return f"{doc['question']}{_options(doc)}"


def doc_to_text_perception_comprehension(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{doc['question']}{_options(doc)}{kwargs.get('perception_and_comprehension_prompt', '')}"


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    options = [str(option) for option in doc.get("options") or []]
    response = str(results[0]) if results else ""
    strict, _ = mmmu.score(doc["question_type"], doc["answer"], response, options)
    if doc["question_type"] == "multiple-choice":  # letters only: blank option texts match nothing
        correct = mmmu.parse_choice(response, [""] * len(options)) == str(doc["answer"]).strip()
    else:
        correct = strict
    return {"mmmu_acc": float(correct), "mmmu_acc_strict": float(strict)}


def aggregate_accuracy(items: list[float]) -> float:
    """``mmmu_acc``: the accuracy rounded to 5 decimals, as published."""
    return round(sum(items) / len(items), ACC_DECIMALS) if items else float("nan")


# The published package's names for these helpers: task YAMLs written for it reference them.
videommmu_doc_to_text_adaptation = doc_to_text_adaptation
videommmu_doc_to_text_no_preprompt = doc_to_text_question_only
videommmu_doc_to_text_perception_comprehension = doc_to_text_perception_comprehension
videommmu_doc_to_visual = doc_to_visual
videommmu_doc_to_visual_question_only = doc_to_visual_question_only
videommmu_process_results = process_results
