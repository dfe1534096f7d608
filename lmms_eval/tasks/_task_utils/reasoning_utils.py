"""Scoring and prompting helpers of the published "reasoning" task variants.

A reasoning task asks for ``<think>...</think>`` followed by ``<answer>...</answer>`` (or
``\\boxed{}``); :func:`compute_score` gives ``score = 0.9 * accuracy + 0.1 * format`` as the published
helper does, where accuracy is an exact, option-letter or mathematical match of the answer part.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from lmms_eval.tasks._task_utils.math_verify_utils import MathVerifyFn
from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer

# the published default system prompt, verbatim, so prompts (and scores) match
SYSTEM_PROMPT = (
    "You are a helpful assistant. When user asks a question, your response must include two parts: "
    "first, reasoning process enclosed in <analysis>...</analysis> tags, then final answer enclosed in "
    "<answer>...</answer> tags."
    "Please provide a clear, concise response within <answer> </answer> tags that directly addresses "
    "to question."
)
ACCURACY_WEIGHT, FORMAT_WEIGHT = 0.9, 0.1
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_FORMAT = re.compile(r"<think>.*?</think>.*?(<answer>.*?</answer>|\\boxed\{.*\})", re.DOTALL)
_MATH = MathVerifyFn()


def extract_boxed_answer(predict_str: str) -> str:
    """The last ``\\boxed{...}`` content, or ``""``."""
    found = _BOXED.findall(predict_str or "")
    return found[-1].strip() if found else ""


def extract_anwser_tag(predict_str: str) -> str:  # (sic) the published spelling
    """The last ``<answer>...</answer>`` content, else the last ``\\boxed{}`` content, else ``""``."""
    found = _ANSWER.findall(predict_str or "")
    return found[-1].strip() if found else extract_boxed_answer(predict_str)


def format_reward(predict_str: str) -> float:
    """1.0 when a ``<think>`` block is followed by an ``<answer>`` tag or ``\\boxed{}``, else 0.0."""
    return 1.0 if _FORMAT.search(predict_str or "") else 0.0


def simple_parse(predict_str: str) -> str:
    """The text without surrounding whitespace and a final full stop."""
    return (predict_str or "").strip().removesuffix(".").strip()


def parse_mcq(predict_str: str) -> str:
    """The option letter the text names, or ``""``."""
    return extract_mcq_answer(predict_str or "")


def relax_exact_match(predict_str: str, ground_truth: str, relax_portion: float = 0.9) -> float:
    """1.0 when equal, or when the gold is in the prediction and covers ``relax_portion`` of it."""
    pred, gold = simple_parse(predict_str), simple_parse(ground_truth)
    if pred == gold:
        return 1.0
    return 1.0 if gold and gold in pred and len(gold) / max(len(pred), 1) >= relax_portion else 0.0


def acc_reward(
    predict_str: str,
    ground_truth: str,
    extra_info: Mapping[str, Any] | None = None,
    format_reward_score: float = 0.0,
    solution_str: str | None = None,
) -> float:
    """1.0 when the answer equals the gold exactly, names the gold option letter, or is the same
    number / math expression; else 0.0 (case matters: ``Paris`` is not ``paris``)."""
    pred, gold = simple_parse(predict_str), simple_parse(str(ground_truth))
    if not pred:
        return 0.0
    if pred == gold or relax_exact_match(pred, gold) == 1.0:
        return 1.0
    if len(gold) == 1 and gold.isupper() and parse_mcq(pred) == gold:
        return 1.0
    return 1.0 if _MATH(pred, gold)[0] == 1.0 else 0.0


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``{score, acc_score, format_reward_score, predict_str, ground_truth}`` of one response."""
    fmt = format_reward(solution_str)
    answer = extract_anwser_tag(solution_str)
    acc = acc_reward(answer, ground_truth, extra_info, fmt, solution_str)
    return {
        "score": ACCURACY_WEIGHT * acc + FORMAT_WEIGHT * fmt,
        "acc_score": acc,
        "format_reward_score": fmt,
        "predict_str": answer,
        "ground_truth": ground_truth,
    }


def _visual_part(visual: Any) -> dict[str, Any]:
    if isinstance(visual, str):
        lowered = visual.lower()
        if lowered.endswith((".mp4", ".avi", ".mov", ".mkv", ".webm")):
            return {"type": "video", "url": visual}
        if lowered.endswith((".wav", ".mp3", ".flac", ".m4a", ".ogg", ".opus")):
            return {"type": "audio", "url": visual}
    return {"type": "image", "url": visual}


def make_reasoning_doc_to_messages(
    doc_to_visual_fn: Callable[..., Any], doc_to_text_fn: Callable[..., Any], system_prompt: str | None = None
) -> Callable[..., list[dict[str, Any]]]:
    """A ``doc_to_messages``: a system turn (``system_prompt``, default :data:`SYSTEM_PROMPT`), then a
    user turn with the doc's visuals followed by its text."""

    def doc_to_messages(
        doc: Any, lmms_eval_specific_kwargs: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        text = (
            doc_to_text_fn(doc, lmms_eval_specific_kwargs)
            if lmms_eval_specific_kwargs
            else doc_to_text_fn(doc)
        )
        content = [_visual_part(v) for v in (doc_to_visual_fn(doc) or [])]
        return [
            {"role": "system", "content": [{"type": "text", "text": system_prompt or SYSTEM_PROMPT}]},
            {"role": "user", "content": [*content, {"type": "text", "text": text}]},
        ]

    return doc_to_messages


def make_reasoning_process_results(
    data_source: str,
    doc_to_text_fn: Callable[..., Any],
    gt_key: str = "answer",
    metrics_prefix: str = "",
    extra_info_fn: Callable[[Any], Mapping[str, Any]] | None = None,
) -> Callable[[Any, list[str]], dict[str, float]]:
    """A ``process_results`` giving ``{<prefix>acc_score, <prefix>format_score}`` of the first result."""

    def process_results(doc: Any, results: list[str]) -> dict[str, float]:
        extra = extra_info_fn(doc) if extra_info_fn else None
        scored = compute_score(data_source, results[0] if results else "", str(doc[gt_key]), extra)
        return {
            f"{metrics_prefix}acc_score": float(scored["acc_score"]),
            f"{metrics_prefix}format_score": float(scored["format_reward_score"]),
        }

    return process_results
