"""ChartQAPro: questions about charts, infographics and dashboards (rules in ``lmms_eval.scoring.chartqapro``).

Prompt: ``Context: <paragraph>`` and a blank line when the item has a paragraph, then the question;
a conversation shows its earlier turns as ``Q1: ..`` / ``A1: ..`` lines and ends with the last
question (``Qn: ..``). Only the answer to the last question is scored. ``relaxed_overall`` and
``relaxed_<question type>`` (factoid, conversational, hypothetical, fact_checking, multi_choice).
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring.chartqapro import relaxed_score
from lmms_eval.scoring.text import slug

POST_PROMPT = "\nAnswer the question with a short phrase."


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def _questions(doc: dict[str, Any]) -> str:
    questions, answers = list(doc["Question"]), list(doc["Answer"])
    if len(questions) < 2:
        return str(questions[0]) if questions else ""
    turns = [f"Q{i}: {q}\nA{i}: {a}" for i, (q, a) in enumerate(zip(questions[:-1], answers), start=1)]
    return "\n".join([*turns, f"Q{len(questions)}: {questions[-1]}"])


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    paragraph = str(doc["Paragraph"] or "").strip()
    context = f"Context: {paragraph}\n\n" if paragraph else ""
    return with_prompts(context + _questions(doc), lmms_eval_specific_kwargs, POST_PROMPT)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def doc_to_target(doc: dict[str, Any]) -> str:
    """The answer to the last question."""
    return str(list(doc["Answer"])[-1])


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    question_type = str(doc["Question Type"])
    score = relaxed_score(str(results[0] or ""), list(doc["Answer"]), question_type, list(doc["Year"] or []))
    return {"relaxed_overall": score, f"relaxed_{slug(question_type)}": score}
