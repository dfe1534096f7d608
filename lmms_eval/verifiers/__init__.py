"""Answer verification (the published ``lmms_eval.verifiers`` names): extract, then verify.

::

    from lmms_eval.verifiers import VerificationPipeline, ExactMatchVerifier
    from lmms_eval.verifiers.extractors import StripReasoningExtractor

    pipeline = VerificationPipeline([StripReasoningExtractor()], ExactMatchVerifier())
    pipeline.verify("Capital of France?", "<think>...</think> Paris", "paris").is_correct  # True

:func:`build_verification_pipeline` builds one from ``{"extractors": [{"type": ...}], "verifier":
{"type": ...}}`` with the names of :data:`EXTRACTOR_REGISTRY` / :data:`VERIFIER_REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.verifiers import extractors
from lmms_eval.verifiers.base import Extractor, Verifier, VerifyResult
from lmms_eval.verifiers.composite import CompositeVerifier
from lmms_eval.verifiers.extractors import (
    MCQExtractor,
    NumberExtractor,
    RegexExtractor,
    StripExtractor,
    StripReasoningExtractor,
)
from lmms_eval.verifiers.pipeline import VerificationPipeline
from lmms_eval.verifiers.rule import (
    ContainsVerifier,
    ExactMatchVerifier,
    MCQMatchVerifier,
    NumericToleranceVerifier,
)

EXTRACTOR_REGISTRY: dict[str, type[Extractor]] = {
    "strip_reasoning": StripReasoningExtractor,
    "regex": RegexExtractor,
    "mcq": MCQExtractor,
    "number": NumberExtractor,
    "strip": StripExtractor,
}
VERIFIER_REGISTRY: dict[str, type[Verifier]] = {
    "exact_match": ExactMatchVerifier,
    "contains": ContainsVerifier,
    "mcq_match": MCQMatchVerifier,
    "numeric": NumericToleranceVerifier,
    "composite": CompositeVerifier,
}


def _build(spec: Mapping[str, Any], registry: Mapping[str, type[Any]], kind: str) -> Any:
    options = dict(spec)
    name = options.pop("type", None)
    if name not in registry:
        raise ValueError(f"unknown {kind} type {name!r}; known: {', '.join(sorted(registry))}")
    if name == "composite":
        options["verifiers"] = [_build(v, registry, kind) for v in options.get("verifiers", [])]
    return registry[name](**options)


def build_verification_pipeline(config: Mapping[str, Any]) -> VerificationPipeline:
    """A pipeline from ``{"extractors": [{"type": name, **options}], "verifier": {"type": name, **options}}``."""
    found = [_build(e, EXTRACTOR_REGISTRY, "extractor") for e in config.get("extractors", [])]
    return VerificationPipeline(found, _build(config.get("verifier") or {}, VERIFIER_REGISTRY, "verifier"))


def parse_binary_response(text: str) -> bool:
    """See :func:`lmms_eval.verifiers.openai.parse_binary_response`."""
    from lmms_eval.verifiers.openai import parse_binary_response as parse

    return parse(text)


__all__ = [
    "EXTRACTOR_REGISTRY",
    "VERIFIER_REGISTRY",
    "CompositeVerifier",
    "ContainsVerifier",
    "ExactMatchVerifier",
    "Extractor",
    "MCQExtractor",
    "MCQMatchVerifier",
    "NumberExtractor",
    "NumericToleranceVerifier",
    "RegexExtractor",
    "StripExtractor",
    "StripReasoningExtractor",
    "VerificationPipeline",
    "Verifier",
    "VerifyResult",
    "build_verification_pipeline",
    "extractors",
    "parse_binary_response",
]
