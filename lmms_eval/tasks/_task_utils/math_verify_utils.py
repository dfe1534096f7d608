"""``MathVerifyFn``: is a model's final math answer equal to the gold one?

With the ``math-verify`` package installed (the published dependency) its LaTeX parser decides;
without it, answers are compared as numbers (integers, decimals, ``a/b`` and ``\\frac{a}{b}``) and
otherwise as whitespace-collapsed text.
"""

from __future__ import annotations

import re
from fractions import Fraction

_FRAC = re.compile(r"\\d?frac\{([^{}]+)\}\{([^{}]+)\}")
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")


def _as_number(text: str) -> Fraction | None:
    cleaned = _FRAC.sub(r"(\1)/(\2)", text).replace("$", "").replace(",", "").replace(" ", "")
    cleaned = re.sub(r"\((-?[\d.]+)\)", r"\1", cleaned)
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None


def final_answer(text: str) -> str:
    """The last ``\\boxed{}`` content, else the last number, else the stripped text."""
    boxed = _BOXED.findall(text)
    if boxed:
        return boxed[-1].strip()
    numbers = _NUMBER.findall(text)
    return numbers[-1] if numbers else text.strip().strip("$").strip()


def math_equal(prediction: str, gold: str) -> bool:
    """Numeric equality when both sides are numbers, else text equality (whitespace collapsed)."""
    a, b = _as_number(prediction), _as_number(gold)
    if a is not None and b is not None:
        return a == b
    return " ".join(prediction.split()) == " ".join(gold.split())


class MathVerifyFn:
    """``fn(prediction, gold) -> (score, extracted_answer)``: ``correct_score`` when equal, else
    ``incorrect_score`` (and ``""`` as the extraction when nothing matched)."""

    def __init__(
        self,
        correct_score: float = 1.0,
        incorrect_score: float = 0.0,
        timeout_seconds: int = 10,
        strict: bool = True,
        silent: bool = True,
    ) -> None:
        self.correct_score = correct_score
        self.incorrect_score = incorrect_score
        self.timeout_seconds = timeout_seconds
        self.strict = strict
        self.silent = silent

    def __call__(self, prediction: str, gold: str) -> tuple[float, str]:
        verified = _with_math_verify(str(prediction), str(gold), self.strict)
        if verified is not None:
            return (self.correct_score, verified) if verified else (self.incorrect_score, "")
        gold_answer = final_answer(str(gold))
        for answer in dict.fromkeys((str(prediction).strip().strip("$"), final_answer(str(prediction)))):
            if answer and (math_equal(answer, str(gold).strip()) or math_equal(answer, gold_answer)):
                return self.correct_score, answer
        return self.incorrect_score, ""


def _with_math_verify(prediction: str, gold: str, strict: bool) -> str | None:
    """The matched extraction (``""`` when not equal) via ``math-verify``; None when not installed."""
    try:
        from math_verify import parse, verify  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        parsed_gold = parse(gold if "$" in gold or "\\" in gold else f"${gold}$")
        parsed = parse(prediction)
        ok = bool(parsed) and bool(verify(parsed_gold, parsed, strict=strict))
    except Exception:  # math-verify raises on unparsable LaTeX: not equal
        return ""
    return str(parsed[-1]) if ok else ""
