"""The verifier contracts: an :class:`Extractor` turns a prediction into an answer, a
:class:`Verifier` decides whether it matches the gold answer, giving a :class:`VerifyResult`."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any


@dataclass
class VerifyResult:
    """Outcome of one verification: ``score`` in [0, 1] (or the judge's scale), ``is_correct``,
    the verifier's ``raw_output`` and ``metadata`` (``confident``, the raw and extracted prediction)."""

    score: float
    is_correct: bool
    raw_output: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


class Extractor(abc.ABC):
    """Turns a model's text into the part a verifier compares (per sample)."""

    @abc.abstractmethod
    def extract(self, text: str, **kwargs: Any) -> str: ...


class Verifier(abc.ABC):
    """Decides whether ``prediction`` answers ``question`` with ``ground_truth``."""

    @abc.abstractmethod
    def verify(self, question: str, prediction: str, ground_truth: str, **kwargs: Any) -> VerifyResult: ...
