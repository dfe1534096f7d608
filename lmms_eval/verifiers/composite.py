"""``CompositeVerifier``: try verifiers in turn, keep the first confident result."""

from __future__ import annotations

from typing import Any

from lmms_eval.verifiers.base import Verifier, VerifyResult


class CompositeVerifier(Verifier):
    """Runs ``verifiers`` in order and returns the first result whose ``metadata["confident"]`` is
    true (a rule that cannot decide defers to the next one); else the last result."""

    def __init__(self, verifiers: list[Verifier]) -> None:
        if not verifiers:
            raise ValueError("CompositeVerifier needs at least one verifier")
        self.verifiers = list(verifiers)

    def verify(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> VerifyResult:
        result = VerifyResult(0.0, False)
        for verifier in self.verifiers:
            result = verifier.verify(question, prediction, ground_truth, **kwargs)
            if result.metadata.get("confident", True):
                return result
        return result
