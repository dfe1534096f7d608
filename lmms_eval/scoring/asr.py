"""Speech recognition scoring: transcript normalisation and corpus-level word error rate.

- **Normalisation** (:func:`normalise_transcript`): special tokens such as ``<|en|>`` are removed,
  then English (``language == "en"``) goes through the Whisper English text normaliser (lower
  case, punctuation and filler words dropped, numbers as digits, British spellings and
  contractions spelled out); other languages through the Whisper basic normaliser (lower case,
  symbols and bracketed text removed). Both come from the ``whisper-normalizer`` package, which
  ships OpenAI Whisper's normalisers with their English spelling map.
- **WER** (:func:`corpus_wer`): ``(substitutions + deletions + insertions) / reference words``
  summed over the whole corpus (not a mean of per-utterance rates), computed by ``jiwer``.

``pip install 'lmms_eval[audio]'`` installs both libraries; they are imported when first used.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

from lmms_eval.errors import MissingDependencyError

_SPECIAL_TOKEN = re.compile(r"<\|[^|>]*\|>")


@functools.cache
def _normaliser(language: str) -> Callable[[str], str]:
    try:
        if language == "en":
            from whisper_normalizer.english import EnglishTextNormalizer

            return EnglishTextNormalizer()
        from whisper_normalizer.basic import BasicTextNormalizer

        return BasicTextNormalizer()
    except ImportError:
        raise MissingDependencyError("whisper-normalizer", "audio", "scoring speech recognition") from None


def asr_language(task: str | None) -> str:
    """The language code in an ASR doc's ``task`` field: the text after its last ``_``, lower case
    (``"ASR_en"`` -> ``"en"``); ``""`` when there is none."""
    head, sep, tail = (task or "").rpartition("_")
    return tail.strip().lower() if sep and head else ""


def strip_special_tokens(text: str) -> str:
    """``text`` without ``<|...|>`` tokens, runs of whitespace made one space."""
    return " ".join(_SPECIAL_TOKEN.sub(" ", text).split())


def normalise_transcript(text: str, language: str) -> str:
    """``text`` as it is compared: special tokens removed, then the Whisper English normaliser for
    ``language == "en"`` and the Whisper basic normaliser otherwise."""
    return " ".join(_normaliser(language)(strip_special_tokens(text)).split())


def corpus_wer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Word error rate of the whole corpus (a fraction; an empty corpus is 0.0), by ``jiwer``."""
    if len(references) != len(hypotheses):
        raise ValueError(f"{len(references)} references but {len(hypotheses)} hypotheses")
    if not references:
        return 0.0
    jiwer = _jiwer()
    # jiwer counts an empty reference's words as insertions; an empty hypothesis as deletions
    return float(jiwer.process_words(list(references), list(hypotheses)).wer)


def _jiwer() -> Any:
    try:
        import jiwer
    except ImportError:
        raise MissingDependencyError("jiwer", "audio", "word error rates") from None
    return jiwer


__all__ = ["asr_language", "corpus_wer", "normalise_transcript", "strip_special_tokens"]
