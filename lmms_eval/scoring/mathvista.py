"""MathVista: prompts, rule-based answer extraction, normalisation and comparison.

A document (``AI4Math/MathVista``) has ``question``, ``choices`` (a list, or None for free-form
questions), ``unit``, ``precision`` (decimals of float answers), ``answer`` (the choice text for
multiple choice), ``question_type`` (``multi_choice`` | ``free_form``), ``answer_type``
(``integer`` | ``float`` | ``text`` | ``list``) and ``query`` (the dataset's own prompt: a hint on
the answer format, the question and the lettered choices).

Scoring (:func:`score_response`): the answer is extracted from the response by rules
(:func:`extract_answer`), normalised to a choice text or to a number at the answer's precision,
and compared with the gold answer (:func:`is_correct`). A response the rules cannot read scores 0:
there is no random choice. The optional LLM judge is asked only about those responses
(:func:`judge_unresolved`).

Which part of the response is read (:func:`answer_span`): the content of the last ``\\boxed{...}``;
else the text after the last answer marker ("answer is", "answer:", "final answer", ...); else the
whole response.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from lmms_eval.api.prompts import option_letters
from lmms_eval.scoring.text import edit_distance

# -- prompts -------------------------------------------------------------------------------------

SHOT_TYPES = ("solution", "format-prompt", "step-by-step")

STEP_BY_STEP_SUFFIX = (
    "\nSolve the problem step by step, then write the final answer on the last line as 'Answer: ...'."
)
_PRECISION_WORDS = {1: "one decimal place", 2: "two decimal places", 3: "three decimal places"}


def choices_of(doc: Mapping[str, Any]) -> list[str]:
    """The document's choices as a list of strings (empty for free-form questions)."""
    choices = doc.get("choices")
    if choices is None:
        return []
    if isinstance(choices, str):
        try:
            choices = json.loads(choices)
        except ValueError:
            return [choices]
    return [str(c) for c in choices]


def _precision(doc: Mapping[str, Any]) -> int | None:
    value = doc.get("precision")
    try:
        return None if value is None or value != value else int(float(value))
    except (TypeError, ValueError):
        return None


def format_instruction(doc: Mapping[str, Any]) -> str:
    """The answer-format sentence of the ``format-prompt`` shot type."""
    if doc.get("question_type") == "multi_choice":
        return "Answer with the option's letter from the given choices directly."
    answer_type = doc.get("answer_type")
    if answer_type == "integer":
        return "Answer the question using a single integer number."
    if answer_type == "float":
        decimals = _precision(doc) or 1
        words = _PRECISION_WORDS.get(decimals, f"{decimals} decimal places")
        return f"Answer the question using a single floating-point number with {words}."
    if answer_type == "list":
        return "Answer the question using a Python list."
    return "Answer the question using a single word or phrase."


def _question_with_choices(doc: Mapping[str, Any]) -> str:
    question = str(doc.get("question", "")).strip()
    unit = doc.get("unit")
    if unit and str(unit).strip():
        question = f"{question} (Unit: {str(unit).strip()})"
    choices = choices_of(doc)
    if choices:
        lettered = "\n".join(
            f"({letter}) {text}" for letter, text in zip(option_letters(len(choices)), choices)
        )
        question = f"{question}\nChoices:\n{lettered}"
    return question


def build_query(doc: Mapping[str, Any], shot_type: str = "solution") -> str:
    """The prompt text of ``doc`` for a shot type.

    - ``solution``: the dataset's ``query`` as it is (hint on the answer format, question, choices);
    - ``format-prompt``: the question (with its unit), the choices as ``(A) text`` lines, then one
      sentence on the expected answer format (:func:`format_instruction`);
    - ``step-by-step``: the dataset's ``query`` followed by a request to reason step by step and
      end with ``Answer: ...``.
    """
    if shot_type == "solution":
        return str(doc.get("query") or _question_with_choices(doc))
    if shot_type == "format-prompt":
        return f"{_question_with_choices(doc)}\n{format_instruction(doc)}"
    if shot_type == "step-by-step":
        return f"{doc.get('query') or _question_with_choices(doc)}{STEP_BY_STEP_SUFFIX}"
    raise ValueError(f"MathVista: unknown shot_type {shot_type!r}; use one of {', '.join(SHOT_TYPES)}")


# -- which part of the response holds the answer ---------------------------------------------------

_MARKER = re.compile(r"\banswer\s*(?:is|should be|would be|will be|[:=])\s*:?|\bfinal answer\b\s*:?", re.I)
_BOXED = re.compile(r"\\boxed\s*\{")


def _last_boxed(text: str) -> str | None:
    starts = [m.end() for m in _BOXED.finditer(text)]
    if not starts:
        return None
    start, depth = starts[-1], 1
    for k in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[start:k]
    return text[start:]


def answer_span(response: str) -> tuple[str, bool]:
    """``(span, marked)``: the part of ``response`` that states the answer, and whether it was marked
    (a ``\\boxed{}`` or an answer marker) rather than being the whole response."""
    text = str(response).strip()
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed.strip(), True
    markers = list(_MARKER.finditer(text))
    if markers:
        return text[markers[-1].end() :].strip(), True
    return text, False


# -- multiple choice -----------------------------------------------------------------------------


def _normal(text: str) -> str:
    """Lower case, whitespace collapsed, surrounding spaces and final punctuation removed."""
    return " ".join(str(text).lower().split()).strip(" .。:;,!")


def _letter_choice(span: str, choices: Sequence[str]) -> str | None:
    letters = "".join(option_letters(len(choices)))
    bare = span.strip().strip("*").strip()
    patterns = (
        (rf"^\(?([{letters}])\)?[.:)]?$", 0),  # "B", "(B)", "B.", "B)"
        (rf"^\(([{letters}])\)", 0),  # "(B) 145°"
        (rf"^([{letters}])[.:)]\s", 0),  # "B. 145°", "B: ..."
        (rf"\b(?:option|choice)\s*\(?([{letters}])\)?(?!\w)", re.I),  # "option B"
    )
    for pattern, flags in patterns:
        match = re.search(pattern, bare, flags)
        if match and match.group(1).upper() in letters:
            return choices[letters.index(match.group(1).upper())]
    return None


def _mentioned_choice(span: str, choices: Sequence[str]) -> str | None:
    """The choice whose text occurs last in ``span`` as a whole (ties: the longer text)."""
    best: tuple[int, int] | None = None
    found = None
    lowered = span.lower()
    for choice in choices:
        needle = _normal(choice)
        if not needle:
            continue
        for match in re.finditer(rf"(?<![\w.]){re.escape(needle)}(?![\w])", lowered):
            key = (match.end(), len(needle))
            if best is None or key > best:
                best, found = key, choice
    return found


def closest_choice(span: str, choices: Sequence[str]) -> str | None:
    """The choice nearest to ``span`` by edit distance (ties: the first), used only when the span is
    short (at most twice the longest choice plus 10 characters) and at least half similar to that
    choice (``distance <= max(len) / 2``); None otherwise."""
    longest = max((len(c) for c in choices), default=0)
    text = _normal(span)
    if not text or not choices or len(span) > 2 * longest + 10:
        return None
    distances = [edit_distance(text, _normal(c)) for c in choices]
    best = distances.index(min(distances))
    if distances[best] > max(len(text), len(_normal(choices[best]))) / 2:
        return None
    return choices[best]


def extract_choice(response: str, choices: Sequence[str]) -> str | None:
    """The choice a response picks, or None. Rules, in order, on the answer span:

    1. an option letter: the span is ``B``/``(B)``/``B.``, starts with ``(B)`` or ``B.``, or says
       "option B";
    2. the span equals a choice's text (case, spaces and final punctuation ignored);
    3. a ``(B)`` anywhere in the span (the last one);
    4. the choice whose text occurs last in the span (then in the whole response);
    5. the only choice whose number equals the number the response gives (:func:`extract_number`);
    6. the choice closest by edit distance to a short span (:func:`closest_choice`), a last resort
       like the published package's nearest-choice step, never a random pick.
    """
    if not choices:
        return None
    span, _marked = answer_span(response)
    letters = "".join(option_letters(len(choices)))
    by_letter = _letter_choice(span, choices)
    if by_letter is not None:
        return by_letter
    exact = [c for c in choices if _normal(c) == _normal(span)]
    if exact:
        return exact[0]
    bracketed = re.findall(rf"\(([{letters}])\)", span)
    if bracketed:
        return choices[letters.index(bracketed[-1])]
    mentioned = _mentioned_choice(span, choices) or _mentioned_choice(str(response), choices)
    if mentioned is not None:
        return mentioned
    return _numeric_choice(response, choices) or closest_choice(span, choices)


def _numeric_choice(response: str, choices: Sequence[str]) -> str | None:
    """The only choice whose first number equals the number the response gives ("145 degrees"
    picks "145°"), else None."""
    number = extract_number(response)
    if number is None:
        return None
    matching = [c for c in choices if (n := _numbers(c)) and n[0][1] == number]
    return matching[0] if len(matching) == 1 else None


# -- numbers, text and lists ---------------------------------------------------------------------

_NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+"
_NUMBER_RE = re.compile(rf"(?<![\w.])(?:{_NUMBER})")
_FRACTION_RE = re.compile(
    rf"\\d?frac\{{({_NUMBER})\}}\{{({_NUMBER})\}}|(?<![\w.])({_NUMBER})\s*/\s*({_NUMBER})(?![\w.])"
)


def _to_decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None


def _numbers(text: str) -> list[tuple[int, Decimal]]:
    """(position, value) of every number in ``text``; a fraction ``a/b`` or ``\\frac{a}{b}`` is one
    number."""
    found: list[tuple[int, Decimal]] = []
    covered: list[tuple[int, int]] = []
    for m in _FRACTION_RE.finditer(text):
        top, bottom = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(3), m.group(4))
        a, b = _to_decimal(top), _to_decimal(bottom)
        if a is not None and b is not None and b != 0:
            found.append((m.start(), a / b))
            covered.append(m.span())
    for m in _NUMBER_RE.finditer(text):
        if any(s <= m.start() < e for s, e in covered):
            continue
        value = _to_decimal(m.group(0))
        if value is not None:
            found.append((m.start(), value))
    return sorted(found, key=lambda item: item[0])


def extract_number(response: str) -> Decimal | None:
    """The number a response gives: the first number of a marked answer span (``\\boxed{}`` or after
    "answer is" / "Answer:"), else the last number of the response. Thousands separators are
    removed ("1,000" is 1000); units and "%" after the number are ignored; fractions are divided."""
    span, marked = answer_span(response)
    if marked:
        numbers = _numbers(span)
        if numbers:
            return numbers[0][1]
    numbers = _numbers(str(response))
    return numbers[-1][1] if numbers else None


def round_to(value: Decimal, decimals: int) -> Decimal:
    """``value`` rounded to ``decimals`` places, halves away from zero (2.675 -> 2.68)."""
    return value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def _decimals_of(answer: str) -> int:
    _, _, fraction = answer.strip().partition(".")
    return len(fraction)


def extract_list(response: str) -> list[str] | None:
    """The last ``[...]`` of the answer span (else of the response), as normalised items."""
    span, _ = answer_span(response)
    for text in (span, str(response)):
        lists = re.findall(r"\[([^\[\]]*)\]", text)
        if lists:
            return [_normal_item(x) for x in lists[-1].split(",") if x.strip()]
    return None


def _normal_item(item: str) -> str:
    text = _normal(item.strip().strip("'\""))
    value = _to_decimal(text)
    return str(value.normalize()) if value is not None and text else text


def extract_text(response: str) -> str | None:
    """A free-text answer: the marked answer span, or a response of at most five words; else None."""
    span, marked = answer_span(response)
    if marked or len(span.split()) <= 5:
        return _normal(span) or None
    return None


# -- the whole rule ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MathVistaScore:
    """The extracted answer (None when the rules found none) and whether it is correct."""

    extraction: str | None
    correct: bool


def extract_answer(response: str, doc: Mapping[str, Any]) -> str | None:
    """The normalised answer of ``response`` for ``doc``, or None when the rules find none.

    Multiple choice: the chosen choice's text (:func:`extract_choice`). Integer: the number
    (:func:`extract_number`) as written without trailing zeros ("3.0" -> "3"). Float: the number
    rounded to ``precision`` decimals (the gold answer's decimals when ``precision`` is missing).
    List: ``"[a, b]"`` of normalised items. Text: the normalised answer span (:func:`extract_text`).
    """
    if doc.get("question_type") == "multi_choice":
        return extract_choice(response, choices_of(doc))
    answer_type = doc.get("answer_type")
    if answer_type in ("integer", "float"):
        number = extract_number(response)
        if number is None:
            return None
        if answer_type == "float":
            decimals = _precision(doc)
            number = round_to(
                number, decimals if decimals is not None else _decimals_of(str(doc.get("answer", "")))
            )
            return str(number)
        return _plain(number)
    if answer_type == "list":
        items = extract_list(response)
        return None if items is None else "[" + ", ".join(items) + "]"
    return extract_text(response)


def _plain(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return "0" if text in ("-0", "") else text


def is_correct(extraction: str | None, doc: Mapping[str, Any]) -> bool:
    """Safe comparison of an extracted answer with ``doc["answer"]``: numbers compare by value (floats
    at the answer's precision), lists item by item, text case-insensitively; never raises."""
    if extraction is None:
        return False
    gold = str(doc.get("answer", ""))
    answer_type = doc.get("answer_type")
    if doc.get("question_type") != "multi_choice" and answer_type in ("integer", "float"):
        pred, target = _to_decimal(extraction), _to_decimal(gold.strip())
        if pred is None or target is None:
            return False
        if answer_type == "float":
            decimals = _precision(doc)
            places = decimals if decimals is not None else _decimals_of(gold)
            return round_to(pred, places) == round_to(target, places)
        return pred == target
    if doc.get("question_type") != "multi_choice" and answer_type == "list":
        gold_items = extract_list(gold)
        return gold_items is not None and extraction == "[" + ", ".join(gold_items) + "]"
    return _normal(extraction) == _normal(gold)


def score_response(response: str, doc: Mapping[str, Any]) -> MathVistaScore:
    """Extract (rules only) and compare; an unreadable response is wrong."""
    extraction = extract_answer(str(response or ""), doc)
    return MathVistaScore(extraction, is_correct(extraction, doc))


# -- categories ------------------------------------------------------------------------------------

TASKS = {
    "figure question answering": "fqa",
    "geometry problem solving": "gps",
    "math word problem": "mwp",
    "textbook question answering": "tqa",
    "visual question answering": "vqa",
}
SKILLS = {
    "algebraic reasoning": "alg",
    "arithmetic reasoning": "ari",
    "geometry reasoning": "geo",
    "logical reasoning": "log",
    "numeric commonsense": "num",
    "scientific reasoning": "sci",
    "statistical reasoning": "sta",
}
CATEGORY_KEYS = tuple(f"acc_{abbr}" for abbr in (*TASKS.values(), *SKILLS.values()))


def category_values(doc: Mapping[str, Any], value: float) -> dict[str, float | None]:
    """``acc_<task>`` and ``acc_<skill>`` keys (MathVista's five tasks and seven skills, from
    ``doc["metadata"]``): ``value`` where the document belongs, None elsewhere."""
    metadata = doc.get("metadata") or {}
    task = TASKS.get(str(metadata.get("task", "")).strip().lower())
    skills = {SKILLS.get(str(s).strip().lower()) for s in metadata.get("skills") or []}
    return {
        f"acc_{abbr}": value if abbr == task or abbr in skills else None
        for abbr in (*TASKS.values(), *SKILLS.values())
    }


# -- optional LLM judge ----------------------------------------------------------------------------

JUDGE_PROMPT = (
    "You are grading the answer of a model to a visual math question.\n\n"
    "Question: {question}\n"
    "Correct answer: {answer}\n"
    "Model response: {prediction}\n\n"
    "Decide whether the final answer given in the model response equals the correct answer (the "
    "option's letter or its text for multiple-choice questions; the same value at the given "
    "precision for numbers; units and wording do not matter). {instruction}"
)


def judge_unresolved(
    docs: Sequence[Mapping[str, Any]],
    responses: Sequence[str],
    extractions: Sequence[str | None],
    server: Any,
) -> dict[int, bool]:
    """Ask the judge about the responses the rules could not read (``extractions[i] is None``).

    ``server`` is a :class:`lmms_eval.llm_judge.JudgeServer`; all questions go as one concurrent
    batch. Returns ``{index: correct}`` for the judged documents; a failed judge call counts as
    wrong.
    """
    pending = [i for i, extraction in enumerate(extractions) if extraction is None]
    if not pending:
        return {}
    items = [
        {
            "question": build_query(docs[i], "solution"),
            "answer": str(docs[i].get("answer", "")),
            "prediction": str(responses[i]),
            "output_format": "0/1",
            "custom_prompt": JUDGE_PROMPT,
        }
        for i in pending
    ]
    verdicts = server.evaluate_binary_batch(items)
    return {i: bool(v.get("success")) and v.get("result") == "1" for i, v in zip(pending, verdicts)}


__all__ = [
    "CATEGORY_KEYS",
    "JUDGE_PROMPT",
    "SHOT_TYPES",
    "SKILLS",
    "TASKS",
    "MathVistaScore",
    "answer_span",
    "build_query",
    "category_values",
    "choices_of",
    "closest_choice",
    "edit_distance",
    "extract_answer",
    "extract_choice",
    "extract_list",
    "extract_number",
    "extract_text",
    "format_instruction",
    "is_correct",
    "judge_unresolved",
    "round_to",
    "score_response",
]
