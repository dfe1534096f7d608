"""Rule-based verifiers: exact match, containment, option letter, numeric tolerance."""

from __future__ import annotations

import math
from typing import Any

from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.verifiers.base import Verifier, VerifyResult


def _result(correct: bool, raw: str, confident: bool = True) -> VerifyResult:
    return VerifyResult(float(correct), correct, raw, {"confident": confident})


class ExactMatchVerifier(Verifier):
    """Equal after stripping (``strip``) and case folding (``ignore_case``)."""

    def __init__(self, ignore_case: bool = True, strip: bool = True) -> None:
        self.ignore_case = ignore_case
        self.strip = strip

    def _norm(self, text: str) -> str:
        text = text.strip() if self.strip else text
        return text.lower() if self.ignore_case else text

    def verify(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> VerifyResult:
        pred, gold = self._norm(str(prediction)), self._norm(str(ground_truth))
        return _result(pred == gold, f"exact_match: {pred!r} vs {gold!r}")


class ContainsVerifier(Verifier):
    """The gold answer occurs in the prediction."""

    def __init__(self, ignore_case: bool = True) -> None:
        self.ignore_case = ignore_case

    def verify(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> VerifyResult:
        pred, gold = str(prediction).strip(), str(ground_truth).strip()
        if self.ignore_case:
            pred, gold = pred.lower(), gold.lower()
        found = bool(gold) and gold in pred
        return _result(found, f"contains: {gold!r} in prediction={found}")


class MCQMatchVerifier(Verifier):
    """The option letter the prediction names equals the gold letter; not confident when the
    prediction names no letter."""

    def verify(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> VerifyResult:
        gold = str(ground_truth).strip().upper()
        letter = extract_mcq_answer(str(prediction), "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        return _result(letter == gold, f"mcq_match: {letter!r} vs {gold!r}", confident=letter is not None)


class NumericToleranceVerifier(Verifier):
    """Both sides are numbers equal within ``rel_tol`` / ``abs_tol``; not confident otherwise."""

    def __init__(self, rel_tol: float = 1e-3, abs_tol: float = 1e-6) -> None:
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol

    def verify(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> VerifyResult:
        try:
            pred, gold = float(str(prediction).replace(",", "")), float(str(ground_truth).replace(",", ""))
        except ValueError:
            return _result(False, f"numeric: cannot compare {prediction!r} with {ground_truth!r}", False)
        close = math.isclose(pred, gold, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        return _result(close, f"numeric: {pred} vs {gold} (rel_tol={self.rel_tol})")
