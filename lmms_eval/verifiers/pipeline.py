"""``VerificationPipeline``: extractors, then a verifier, in one call."""

from __future__ import annotations

from typing import Any

from lmms_eval.verifiers.base import Extractor, Verifier, VerifyResult


class VerificationPipeline:
    """``pipeline.verify(question, prediction, ground_truth)`` runs each extractor over the
    prediction in order, then the verifier; the result's metadata also records the raw and the
    extracted prediction."""

    def __init__(self, extractors: list[Extractor] | None = None, verifier: Verifier | None = None) -> None:
        if verifier is None:
            raise ValueError("VerificationPipeline requires a verifier")
        self.extractors = list(extractors or [])
        self.verifier = verifier

    def verify(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> VerifyResult:
        extracted = str(prediction)
        for extractor in self.extractors:
            extracted = extractor.extract(extracted, **kwargs)
        result = self.verifier.verify(question, extracted, ground_truth, **kwargs)
        result.metadata.setdefault("raw_prediction", prediction)
        result.metadata.setdefault("extracted_prediction", extracted)
        return result

    __call__ = verify
