"""VSI-Bench: spatial questions on room scans (ScanNet, ScanNet++, ARKitScenes videos).

Prompt (published): "These are frames of a video." (or the model's pre prompt), the question, and
for multiple-choice questions "Options:" with the lettered options and the MC post prompt, else the
numeric post prompt. The video is ``<dataset>/<scene_name>.mp4``.

Scoring: numeric question types by mean relative accuracy (:mod:`lmms_eval.scoring.mra`), the
others by accuracy. Published rule for a letter: the answer's first word, a trailing full stop
removed, equals the gold letter in any case ("A.", "b", "D. go" are read; "(A)", "Answer: A" are
not). Category keys are the mean per question type, ``object_rel_direction_accuracy`` the mean of
its easy, medium and hard accuracies, and ``vsibench_overall`` the mean of the category scores,
all fractions (0-1). ``vsibench_overall_strict`` (ours, beside it) reads letters with the shared
:func:`lmms_eval.scoring.choice.extract_mcq_answer`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.scoring.mra import first_number, mean_relative_accuracy
from lmms_eval.scoring.video import find_video, video_folders
from lmms_eval.stats import pure_aggregation

DATASET = "nyu-visionx/VSI-Bench"
CACHE_DIR = "vsibench"
PRE_PROMPT = "These are frames of a video."
MCA_POST_PROMPT = "Answer with the option's letter from the given choices directly."
NA_POST_PROMPT = "Please answer the question using a single word or phrase."
NUMERIC_TYPES = ("object_counting", "object_abs_distance", "object_size_estimation", "room_size_estimation")
DIRECTION = "object_rel_direction"
CATEGORIES = {  # result key -> the question type it averages
    "obj_appearance_order_accuracy": "obj_appearance_order",
    "object_abs_distance_mra": "object_abs_distance",
    "object_counting_mra": "object_counting",
    "object_rel_distance_accuracy": "object_rel_distance",
    "object_size_estimation_mra": "object_size_estimation",
    "room_size_estimation_mra": "room_size_estimation",
    "route_planning_accuracy": "route_planning",
    "object_rel_direction_accuracy": DIRECTION,
}


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """The scene's video: ``<dataset>/<scene_name>.mp4``."""
    name = f"{doc['scene_name']}.mp4"
    return [find_video(name, video_folders(DATASET, CACHE_DIR), subdirs=(str(doc["dataset"]), ""))]


def vsibench_doc_to_text(
    doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
) -> str:
    """The published prompt (module doc)."""
    kwargs = lmms_eval_specific_kwargs or {}
    text = f"{kwargs.get('pre_prompt') or PRE_PROMPT}\n{doc['question']}"
    if doc["question_type"] in NUMERIC_TYPES:
        return f"{text}\n{kwargs.get('na_post_prompt') or NA_POST_PROMPT}"
    options = "\n".join(str(option) for option in doc.get("options") or [])
    return f"{text}\nOptions:\n{options}\n{kwargs.get('mca_post_prompt') or MCA_POST_PROMPT}"


doc_to_text = vsibench_doc_to_text


def first_word_letter(answer: Any) -> str:
    """The published reading of a letter: the first space-separated word, trailing "." removed."""
    return str(answer).split(" ")[0].rstrip(".").strip()


def _scores(doc: Mapping[str, Any], answer: str) -> tuple[float, float]:
    """(published, strict) score of one answer."""
    gold = str(doc["ground_truth"]).strip()
    if doc["question_type"] in NUMERIC_TYPES:
        value = mean_relative_accuracy(first_number(answer), float(gold))
        return value, value
    published = float(first_word_letter(answer).lower() == gold.lower())
    letters = "ABCDEF"[: max(len(doc.get("options") or []), 4)]
    return published, float(extract_mcq_answer(answer, letters) == gold.upper())


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, Any]:
    published, strict = _scores(doc, str(results[0]) if results else "")
    item = {"question_type": str(doc["question_type"]), "score": published}
    out: dict[str, Any] = dict.fromkeys(("vsibench_overall", *CATEGORIES), item)
    out["vsibench_overall_strict"] = {**item, "score": strict}
    return out


def _category(question_type: str) -> str:
    return DIRECTION if question_type.startswith(DIRECTION) else question_type


def category_scores(items: list[Mapping[str, Any]]) -> dict[str, float]:
    """The mean score per category present; the relative direction as the mean over its levels."""
    by_type: dict[str, list[float]] = defaultdict(list)
    for item in items:
        by_type[item["question_type"]].append(float(item["score"]))
    levels: dict[str, list[float]] = defaultdict(list)
    for question_type, scores in by_type.items():
        levels[_category(question_type)].append(sum(scores) / len(scores))
    return {category: sum(means) / len(means) for category, means in levels.items()}


def _aggregate(key: str, items: list[Mapping[str, Any]]) -> float:
    scores = category_scores(items)
    if key in ("vsibench_overall", "vsibench_overall_strict"):
        return sum(scores.values()) / len(scores) if scores else 0.0
    return scores.get(CATEGORIES[key], float("nan"))


@pure_aggregation
def aggregate_overall(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("vsibench_overall", items)


@pure_aggregation
def aggregate_appearance_order(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("obj_appearance_order_accuracy", items)


@pure_aggregation
def aggregate_abs_distance(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("object_abs_distance_mra", items)


@pure_aggregation
def aggregate_counting(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("object_counting_mra", items)


@pure_aggregation
def aggregate_rel_distance(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("object_rel_distance_accuracy", items)


@pure_aggregation
def aggregate_size_estimation(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("object_size_estimation_mra", items)


@pure_aggregation
def aggregate_room_size(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("room_size_estimation_mra", items)


@pure_aggregation
def aggregate_route_planning(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("route_planning_accuracy", items)


@pure_aggregation
def aggregate_rel_direction(items: list[Mapping[str, Any]]) -> float:
    return _aggregate("object_rel_direction_accuracy", items)


# The published package's names for these helpers: task YAMLs written for it reference them.
vsibench_doc_to_visual = doc_to_visual
vsibench_process_results = process_results
