"""Speech recognition scoring: transcript normalisation and corpus-level word error rate.

- **Normalisation** (:func:`normalise_transcript`): special tokens such as ``<|en|>`` are removed,
  then English (``language == "en"``) goes through the Whisper English text normaliser (lower
  case, punctuation and filler words dropped, numbers as digits, British spellings and
  contractions spelled out); other languages through the Whisper basic normaliser (lower case,
  symbols and bracketed text removed). Both come from the ``whisper-normalizer`` package, which
  ships OpenAI Whisper's normalisers with their English spelling map.
- **Chinese** (``language == "zh"``, :func:`chinese_characters`) is scored per character, as the
  published Common Voice task does: spaces dropped, Arabic numerals read as Chinese numerals
  (:func:`chinese_numerals`), punctuation dropped, Latin letters lower case, one token per
  character, so :func:`corpus_wer` of the normalised texts is the character error rate. Traditional
  characters are not converted to simplified ones.
- **Cantonese** (``language == "yue"``, :func:`cantonese_characters`) is scored per character as
  the published FLEURS task does: traditional characters converted to simplified ones (``zhconv``,
  ``zh-cn``), spaces and punctuation dropped, numerals kept as written.
- **WER** (:func:`corpus_wer`): ``(substitutions + deletions + insertions) / reference words``
  summed over the whole corpus (not a mean of per-utterance rates), computed by ``jiwer``.

``pip install 'lmms_eval[audio]'`` installs both libraries; they are imported when first used.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
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
    ``language == "en"``, the characters of :func:`chinese_characters` (space-separated) for
    ``"zh"`` and the Whisper basic normaliser otherwise."""
    text = strip_special_tokens(text)
    if language == "yue":
        return " ".join(cantonese_characters(text))
    if language in CHARACTER_LANGUAGES:
        return " ".join(chinese_characters(text))
    return " ".join(_normaliser(language)(text).split())


# -- Chinese ---------------------------------------------------------------------------------------

CHARACTER_LANGUAGES = frozenset({"zh", "yue"})
"""Languages scored per character (their transcripts have no spaces between words)."""

_ZH_DIGITS = "零一二三四五六七八九"
# the first alternative that matches wins: a year, a percentage, a fraction, a decimal, an integer
_ZH_NUMBER = re.compile(
    r"(?P<year>\d{1,4})(?=年)|(?P<percent>\d{1,3}(?:\.\d+)?)%"
    r"|(?P<numerator>\d+)/(?P<denominator>\d+)|(?P<decimal>\d{1,3}\.\d+)|(?P<integer>\d+)"
)
_ZH_DROPPED = frozenset(string.punctuation)


def _zh_digits(digits: str) -> str:
    return "".join(_ZH_DIGITS[unicodedata.digit(d)] for d in digits)


def _zh_below_thousand(number: int) -> str:
    hundreds, tens, ones = number // 100, number // 10 % 10, number % 10
    head = f"{_ZH_DIGITS[hundreds]}百" if hundreds else ""
    if tens:
        middle = f"{_ZH_DIGITS[tens]}十" if hundreds or tens > 1 else "十"
    else:
        middle = "零" if hundreds and ones else ""
    return head + middle + (_ZH_DIGITS[ones] if ones or not (head or middle) else "")


def _zh_integer(digits: str) -> str:
    """One digit or four and more digit by digit (``1000`` -> 一零零零); two or three as a number,
    a leading zero read once (``110`` -> 一百一十, ``007`` -> 零七, ``00`` -> nothing)."""
    if len(digits) == 1 or len(digits) >= 4:
        return _zh_digits(digits)
    value = int(digits)
    if not value:
        return ""
    return ("零" if unicodedata.digit(digits[0]) == 0 else "") + _zh_below_thousand(value)


def _zh_decimal(number: str) -> str:
    whole, _, fraction = number.partition(".")
    return _zh_integer(whole) + (f"点{_zh_digits(fraction)}" if fraction else "")


def _zh_number(match: re.Match[str]) -> str:
    groups = match.groupdict()
    if groups["year"]:
        return _zh_digits(groups["year"])
    if groups["percent"]:
        return "百分之" + _zh_decimal(groups["percent"])
    if groups["numerator"]:
        return f"{_zh_integer(groups['denominator'])}分之{_zh_integer(groups['numerator'])}"
    if groups["decimal"]:
        return _zh_decimal(groups["decimal"])
    return _zh_integer(groups["integer"])


def chinese_numerals(text: str) -> str:
    """``text`` with its Arabic numerals read as Chinese ones, as the published normaliser reads
    them: a year digit by digit (``2020年`` -> 二零二零年), ``50%`` -> 百分之五十, ``2/3`` ->
    三分之二, ``3.5`` -> 三点五, ``123`` -> 一百二十三, four digits or more digit by digit
    (``1000`` -> 一零零零). Full-width digits count as digits."""
    return _ZH_NUMBER.sub(_zh_number, text)


def _dropped(character: str) -> bool:
    return character in _ZH_DROPPED or character.isspace() or unicodedata.category(character).startswith("P")


def chinese_characters(text: str) -> list[str]:
    """The characters ``text`` is scored by: whitespace removed (so ``3 5`` reads 三十五),
    numerals read (:func:`chinese_numerals`), ASCII punctuation and symbols and Unicode
    punctuation dropped, letters lower case; other symbols (``¥``, ``℃``) are kept."""
    spoken = chinese_numerals("".join(text.split()))
    return [c.lower() for c in spoken if not _dropped(c)]


def cantonese_characters(text: str) -> list[str]:
    """The characters Cantonese ``text`` is scored by: converted to simplified characters
    (``zhconv``, ``zh-cn``: 這 -> 这, 係 -> 系), whitespace, ASCII punctuation and Unicode
    punctuation dropped, letters lower case. Numerals stay as written (``3`` is not 三)."""
    try:
        import zhconv
    except ImportError:
        raise MissingDependencyError("zhconv", "audio", "scoring Cantonese speech recognition") from None
    simplified = str(zhconv.convert("".join(text.split()), "zh-cn"))
    return [c.lower() for c in simplified if not _dropped(c)]


def corpus_error_rate(
    references: Sequence[str], hypotheses: Sequence[str], languages: Sequence[str]
) -> float:
    """The corpus error rate in percent of ``(reference, hypothesis)`` pairs, each pair normalised
    in its own language (:func:`normalise_transcript`): word error rate, character error rate for
    the :data:`CHARACTER_LANGUAGES`."""
    refs = [normalise_transcript(str(r), lang) for r, lang in zip(references, languages, strict=True)]
    hyps = [normalise_transcript(str(h), lang) for h, lang in zip(hypotheses, languages, strict=True)]
    return 100.0 * corpus_wer(refs, hyps)


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


__all__ = [
    "CHARACTER_LANGUAGES",
    "asr_language",
    "cantonese_characters",
    "chinese_characters",
    "chinese_numerals",
    "corpus_error_rate",
    "corpus_wer",
    "normalise_transcript",
    "strip_special_tokens",
]
