"""NExT-QA on a video: multiple choice (config ``MC``) and open-ended (config ``OE``).

Multiple choice: five options ``a0``-``a4``, the gold option's index in ``answer``. Prompt
(published): the question, then the options as ``A. ...`` lines (no post prompt by default).
Scoring: the option letter by the MMMU parser, or the option whose text is the whole answer,
against the gold letter; ``exact_match`` is the share correct, with breakdowns by the question
type's group (``C``ausal, ``T``emporal, ``D``escriptive).

Open-ended: the gold ``answer`` and, on some questions, an ``additional_ref_answer``. Prompt: the
question between the pre and post prompts. ``WUPS`` is WUPS@0 in percent
(:mod:`lmms_eval.scoring.wups`) against the better of the two references, averaged over questions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE
from lmms_eval.scoring.video import find_video, mmmu_style_choice, video_folders
from lmms_eval.scoring.wups import best_wups_score

DATASET = "lmms-eval/NExTQA"
CACHE_DIR = "nextqa"
OPTION_FIELDS = ("a0", "a1", "a2", "a3", "a4")
QUESTION_GROUPS = {"C": "causal", "T": "temporal", "D": "descriptive"}


def _video(doc: Mapping[str, Any], config: str) -> list[str]:
    folders = video_folders(DATASET, CACHE_DIR, config=config)
    return [find_video(f"{doc['video']}.mp4", folders, subdirs=("NExTVideo", ""))]


def doc_to_visual(doc: Mapping[str, Any]) -> list[str]:
    """``NExTVideo/<video>.mp4`` (also ``.MP4``)."""
    return _video(doc, "MC")


def doc_to_visual_oe(doc: Mapping[str, Any]) -> list[str]:
    """``NExTVideo/<video>.mp4`` (also ``.MP4``), as for multiple choice."""
    return _video(doc, "OE")


def options_of(doc: Mapping[str, Any]) -> list[str]:
    return [str(doc[field]).strip() for field in OPTION_FIELDS]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    options = "\n".join(f"{UPPERCASE[i]}. {text}" for i, text in enumerate(options_of(doc)))
    return _prompted(f"{str(doc['question']).strip()}\n{options}", lmms_eval_specific_kwargs)


def _prompted(question: str, kwargs: Mapping[str, Any] | None) -> str:
    kwargs = kwargs or {}
    return f"{kwargs.get('pre_prompt') or ''}{question}{kwargs.get('post_prompt') or ''}"


def doc_to_text_oe(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    return _prompted(str(doc["question"]).strip(), lmms_eval_specific_kwargs)


def doc_to_target_oe(doc: Mapping[str, Any]) -> str:
    return str(doc["answer"])


def references_oe(doc: Mapping[str, Any]) -> list[str]:
    """The gold answer, then the additional reference answer where there is one."""
    extra = doc.get("additional_ref_answer")
    return [str(doc["answer"])] + ([str(extra)] if extra else [])


def process_results_oe(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """``WUPS``: WUPS@0 in percent against the better reference."""
    return {"WUPS": 100.0 * best_wups_score(str(results[0]), references_oe(doc), alpha=0.0)}


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The gold option's letter."""
    return UPPERCASE[int(doc["answer"])]


def process_results(doc: Mapping[str, Any], results: list[Any]) -> dict[str, float]:
    """``exact_match`` (1.0 or 0.0), also under the question type's group."""
    correct = mmmu_style_choice(results[0], options_of(doc)) == doc_to_target(doc)
    value = 1.0 if correct else 0.0
    out = {"exact_match": value}
    group = QUESTION_GROUPS.get(str(doc.get("type", ""))[:1].upper())
    if group is not None:
        out[f"exact_match_{group}"] = value
    return out


# The published package's names for these helpers: task YAMLs written for it reference them.
nextqa_doc_to_target = doc_to_target
nextqa_doc_to_text = doc_to_text_oe
nextqa_doc_to_text_mc = doc_to_text
nextqa_doc_to_visual = doc_to_visual
nextqa_mc_process_results = process_results
nextqa_process_results = process_results_oe
