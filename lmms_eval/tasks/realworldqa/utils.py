"""RealWorldQA: the question is the whole prompt; letter and open answers are matched differently
(``exact_match`` by the published rule, ``exact_match_strict`` by ours)."""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.choice import choice_or_text_match
from lmms_eval.scoring.published import published_letter_or_text_match


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The question as published (it already lists the options and how to answer)."""
    return with_prompts(str(doc["question"]), lmms_eval_specific_kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``exact_match``: the published rule (a letter gold read by the published letter reader, an
    open gold equal to the whole output); ``exact_match_strict``: ours (the letter read by
    ``extract_mcq_answer``). Both ignore case and trailing full stops for open golds."""
    output, gold = results[0], doc["answer"]
    return {
        "exact_match": float(published_letter_or_text_match(output, gold)),
        "exact_match_strict": float(choice_or_text_match(output, gold)),
    }


# The published package's names for these helpers: task YAMLs written for it reference them.
realworldqa_doc_to_text = doc_to_text
realworldqa_doc_to_visual = doc_to_visual
realworldqa_process_results = process_results
