"""MathVista answer extraction, normalisation and comparison (lmms_eval.scoring.mathvista)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lmms_eval.llm_judge import get_server
from lmms_eval.scoring import mathvista as mv

CHOICE_DOC: dict[str, Any] = {
    "question": "Find the angle x.",
    "choices": ["135°", "145°", "155°", "165°"],
    "unit": None,
    "precision": None,
    "answer": "145°",
    "question_type": "multi_choice",
    "answer_type": "text",
    "query": "Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, "
    "at the end.\nQuestion: Find the angle x.\nChoices:\n(A) 135°\n(B) 145°\n(C) 155°\n(D) 165°",
    "metadata": {"task": "geometry problem solving", "skills": ["geometry reasoning", "algebraic reasoning"]},
}
INT_DOC: dict[str, Any] = {
    "question": "How many apples are there?",
    "choices": None,
    "unit": None,
    "precision": None,
    "answer": "1000",
    "question_type": "free_form",
    "answer_type": "integer",
    "query": "Hint: ... integer answer ...\nQuestion: How many apples are there?",
    "metadata": {"task": "math word problem", "skills": ["arithmetic reasoning"]},
}
FLOAT_DOC: dict[str, Any] = {
    "question": "What is the length of the side?",
    "choices": None,
    "unit": "cm",
    "precision": 2.0,
    "answer": "2.68",
    "question_type": "free_form",
    "answer_type": "float",
    "query": "Hint: ... two decimal places ...\nQuestion: What is the length of the side? (Unit: cm)",
    "metadata": {"task": "figure question answering", "skills": ["statistical reasoning"]},
}


@pytest.mark.parametrize(
    "response",
    [
        "B",
        "(B)",
        "B.",
        "The answer is (B) 145°",
        "Answer: B",
        "B. 145°",
        "145°",
        "the angle is 145°.",
        "I pick option b",
        "So the answer should be 145 degrees",  # rule 5: the only choice whose number is 145
        "\\boxed{B}",
    ],
)
def test_choice_mapping_reads_letters_and_choice_texts(response: str) -> None:
    assert mv.extract_choice(response, CHOICE_DOC["choices"]) == "145°"
    assert mv.score_response(response, CHOICE_DOC).correct


def test_choice_mapping_edge_cases() -> None:
    choices = CHOICE_DOC["choices"]
    # letters outside the option range are not options, and "e" is not similar to any choice
    assert mv.extract_choice("E", choices) is None
    # the choice mentioned last wins; "1" inside "10" is not a mention of "1"
    assert mv.extract_choice("It is not 135°, it is 165°", choices) == "165°"
    assert mv.extract_choice("10", ["1", "10"]) == "10"
    # edit distance only for a short, similar span: "150" is 2 edits from "135°" and "155°" (ties: first) ...
    assert mv.closest_choice("150", choices) == "135°"
    assert mv.closest_choice("x", choices) is None  # 4 edits from every choice: not similar
    # ... never for a long response (no parse -> wrong, never random)
    long = "Long rambling text without any letter at all that no rule whatsoever can read, really"
    assert mv.extract_choice(long, choices) is None
    assert mv.score_response(long, CHOICE_DOC) == mv.MathVistaScore(None, False)
    assert mv.score_response("", CHOICE_DOC) == mv.MathVistaScore(None, False)
    assert mv.score_response("(C)", CHOICE_DOC) == mv.MathVistaScore("155°", False)


def test_integer_extraction() -> None:
    cases = {
        "1,000": "1000",  # thousands separator
        "The answer is 1000 apples, because 500 + 500": "1000",  # first number after the marker
        "There are 3 boxes of 1000": "1000",  # no marker: the last number
        "\\boxed{1000}": "1000",
        "1000.0": "1000",  # written without trailing zeros
        "999.6": "999.6",  # not rounded: a non-integer is wrong
        "-3 degrees": "-3",
    }
    for response, extraction in cases.items():
        assert mv.extract_answer(response, INT_DOC) == extraction, response
    assert mv.score_response("1,000", INT_DOC).correct
    assert not mv.score_response("999.6", INT_DOC).correct
    assert mv.score_response("I cannot tell", INT_DOC) == mv.MathVistaScore(None, False)


def test_float_precision_rounding() -> None:
    # precision 2: 2.675 rounds half up to 2.68; 2.6749 to 2.67; 67/25 = 2.68
    assert mv.extract_answer("2.675", FLOAT_DOC) == "2.68"
    assert mv.score_response("2.675", FLOAT_DOC).correct
    assert mv.score_response("Answer: 2.68 cm", FLOAT_DOC).correct
    assert mv.score_response("\\frac{67}{25}", FLOAT_DOC).correct
    assert mv.score_response("2.6800001", FLOAT_DOC).correct
    assert not mv.score_response("2.6749", FLOAT_DOC).correct
    assert mv.round_to(Decimal("0.125"), 2) == Decimal("0.13")
    # precision missing: the gold answer's decimals (one here)
    doc = {**FLOAT_DOC, "precision": None, "answer": "1.5"}
    assert mv.extract_answer("1.54", doc) == "1.5"
    assert mv.score_response("1.54", doc).correct
    assert not mv.score_response("1.56", doc).correct


def test_list_and_text_answers() -> None:
    list_doc = {**INT_DOC, "answer_type": "list", "answer": "[1, 2.0, 3]"}
    assert mv.extract_answer("The answer is [1, 2, 3].", list_doc) == "[1, 2, 3]"
    assert mv.score_response("[1,2,3]", list_doc).correct
    assert not mv.score_response("[1, 3, 2]", list_doc).correct
    text_doc = {**INT_DOC, "answer_type": "text", "answer": "Jupiter"}
    assert mv.score_response("jupiter.", text_doc).correct
    assert mv.score_response("Final answer: Jupiter", text_doc).correct
    # a long unmarked response is not read as text
    assert mv.extract_text("I believe the planet with the rings is Jupiter for sure") is None


def test_answer_span_prefers_boxed_then_markers() -> None:
    assert mv.answer_span("so \\boxed{\\frac{1}{2}} done") == ("\\frac{1}{2}", True)
    assert mv.answer_span("Let me answer this. The answer is 5.") == ("5.", True)
    assert mv.answer_span("just 5") == ("just 5", False)


def test_prompts_for_each_shot_type() -> None:
    assert mv.build_query(CHOICE_DOC, "solution") == CHOICE_DOC["query"]
    assert mv.build_query(CHOICE_DOC, "format-prompt") == (
        "Find the angle x.\nChoices:\n(A) 135°\n(B) 145°\n(C) 155°\n(D) 165°\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert mv.build_query(FLOAT_DOC, "format-prompt") == (
        "What is the length of the side? (Unit: cm)\n"
        "Answer the question using a single floating-point number with two decimal places."
    )
    assert mv.build_query(INT_DOC, "format-prompt").endswith(
        "\nAnswer the question using a single integer number."
    )
    assert mv.build_query(INT_DOC, "step-by-step") == INT_DOC["query"] + mv.STEP_BY_STEP_SUFFIX
    with pytest.raises(ValueError, match="unknown shot_type 'reason-last'"):
        mv.build_query(INT_DOC, "reason-last")


def test_category_values() -> None:
    values = mv.category_values(CHOICE_DOC, 100.0)
    assert set(values) == set(mv.CATEGORY_KEYS) and len(values) == 12
    assert {k for k, v in values.items() if v is not None} == {"acc_gps", "acc_geo", "acc_alg"}
    assert values["acc_gps"] == 100.0 and values["acc_fqa"] is None


def test_judge_is_asked_only_about_unreadable_responses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TYPE", "dummy")
    text_doc = {**INT_DOC, "answer_type": "text", "answer": "Jupiter"}
    docs = [INT_DOC, text_doc, INT_DOC]
    responses = ["1000", "I believe the planet with the big rings is Jupiter for sure", "no idea at all"]
    extractions = [mv.score_response(r, d).extraction for r, d in zip(responses, docs)]
    assert extractions == ["1000", None, None]
    with get_server() as server:
        verdicts = mv.judge_unresolved(docs, responses, extractions, server)
        assert server.calls == 2  # type: ignore[attr-defined]
    # dummy judge ("contains"): "jupiter" is in the second response; "1000" is not in the third
    assert verdicts == {1: True, 2: False}


def test_scoring_is_deterministic() -> None:
    responses = ["B", "150 degrees", "", "The answer is (D)"]
    first = [mv.score_response(r, CHOICE_DOC) for r in responses]
    assert [mv.score_response(r, CHOICE_DOC) for r in responses] == first
