"""Reading verdicts out of a judge's free-text reply.

Each parser returns ``None`` when the reply does not contain a clear verdict; callers turn that into
an unsuccessful result instead of guessing.
"""

from __future__ import annotations

import math
import re

# output_format -> (label for a correct prediction, label for an incorrect one)
BINARY_FORMATS: dict[str, tuple[str, str]] = {
    "0/1": ("1", "0"),
    "1/0": ("1", "0"),
    "yes/no": ("yes", "no"),
    "Yes/No": ("Yes", "No"),
    "true/false": ("true", "false"),
    "correct/incorrect": ("correct", "incorrect"),
}

_POSITIVE = frozenset({"1", "yes", "y", "true", "correct", "right"})
_NEGATIVE = frozenset({"0", "no", "n", "false", "incorrect", "wrong"})
_LABELS = (
    r"final\s+answer|final\s+verdict|answer|judge?ment|verdict|decision|result|output|score|rating|grade"
)
_NUMBER = r"[-+]?\d+(?:\.\d+)?"

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_BRACKETED = re.compile(r"\[\[\s*([^\[\]]+?)\s*\]\]")
_LABELLED = re.compile(rf"(?:{_LABELS})\s*\**\s*[:：=]\s*\**\s*\[?\s*([A-Za-z]+|{_NUMBER})", re.IGNORECASE)
_SCORE_LABELLED = re.compile(
    rf"(?:{_LABELS})\s*\**\s*[:：=]\s*\**\s*\[*\s*({_NUMBER})(?:\s*/\s*({_NUMBER}))?", re.IGNORECASE
)
_PAIR_LINE = re.compile(rf"[\s*\[(]*({_NUMBER})\s*[,;|\s]\s*({_NUMBER})[\s*\])\.]*")
_FRACTION = re.compile(rf"^({_NUMBER})\s*/\s*({_NUMBER})\b")
_LEADING_NUMBER = re.compile(rf"^({_NUMBER})(?![\w.])")
_WORD = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
_STRIP = " \t\r\n*_`'\"“”‘’.,;:!?()[]{}<>"


def strip_reasoning(text: str) -> str:
    """The reply without ``<think>…</think>`` blocks (and anything before a dangling ``</think>``)."""
    text = _THINK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text.strip()


def _polarity(token: str) -> bool | None:
    word = token.strip(_STRIP).lower()
    if word in _POSITIVE:
        return True
    if word in _NEGATIVE:
        return False
    try:
        value = float(word)
    except ValueError:
        return None
    if value == 1.0:
        return True
    if value == 0.0:
        return False
    return None


def parse_binary_verdict(reply: str) -> bool | None:
    """``True`` (correct), ``False`` (incorrect) or ``None`` (no clear verdict).

    Looks, in order, at the last ``[[x]]``, the last ``Label: x`` (answer, judgement, verdict,
    score, ...), the whole reply as one word, and the reply's first word. Words understood:
    1/yes/true/correct/right and 0/no/false/incorrect/wrong (any case).
    """
    text = strip_reasoning(reply)
    if not text:
        return None
    for pattern in (_BRACKETED, _LABELLED):
        matches = pattern.findall(text)
        if matches:
            verdict = _polarity(matches[-1])
            if verdict is not None:
                return verdict
    whole = text.strip(_STRIP)
    if whole and _WORD.fullmatch(whole):
        return _polarity(whole)
    first = _WORD.search(text)
    return _polarity(first.group(0)) if first else None


def binary_labels(output_format: str) -> tuple[str, str]:
    """``(correct label, incorrect label)`` of an ``output_format``; ValueError for unknown formats."""
    try:
        return BINARY_FORMATS[output_format]
    except KeyError:
        raise ValueError(
            f"unknown judge output_format {output_format!r}; use one of {', '.join(BINARY_FORMATS)}"
        ) from None


def parse_binary(reply: str, output_format: str = "0/1") -> str | None:
    """The verdict of ``reply`` as the label of ``output_format`` (``"1"``/``"0"``, ...), or ``None``."""
    positive, negative = binary_labels(output_format)
    verdict = parse_binary_verdict(reply)
    if verdict is None:
        return None
    return positive if verdict else negative


def _as_number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _score_candidates(text: str) -> list[str]:
    """Numbers that may be the score, most explicit first."""
    candidates: list[str] = []
    for inner in reversed(_BRACKETED.findall(text)):
        match = _LEADING_NUMBER.match(inner.strip()) or _FRACTION.match(inner.strip())
        if match:
            candidates.append(match.group(1))
    candidates.extend(m[0] for m in reversed(_SCORE_LABELLED.findall(text)))
    body = text.strip().lstrip("*#`'\" ")
    for pattern in (_FRACTION, _LEADING_NUMBER):
        match = pattern.match(body)
        if match:
            candidates.append(match.group(1))
            break
    lines = [line.strip(_STRIP) for line in text.splitlines() if line.strip(_STRIP)]
    if lines and re.fullmatch(rf"{_NUMBER}(?:\s*/\s*{_NUMBER})?", lines[-1]):
        candidates.append(re.split(r"\s*/\s*", lines[-1])[0])
    return candidates


def parse_score(reply: str, min_score: float = 0, max_score: float = 10) -> float | None:
    """A score in ``[min_score, max_score]`` read from ``reply``, or ``None``.

    Understands ``[[7]]``, ``Score: 7``, ``Rating: 7/10``, a reply that is or starts with a number
    (``"7"``, ``"8/10 - good"``), and a last line that is a number. The most explicit form found
    wins; a number outside the range is not a score.
    """
    text = strip_reasoning(reply)
    for candidate in _score_candidates(text):
        value = _as_number(candidate)
        if value is not None and min_score <= value <= max_score:
            return value
    return None


def parse_score_pair(reply: str, min_score: float = 0, max_score: float = 10) -> tuple[float, float] | None:
    """Two scores (first response, second response) in range, or ``None``.

    Reads ``[[a, b]]``, ``Assistant 1: a`` ... ``Assistant 2: b``, or a first line of exactly two
    numbers (``"8 7"``, ``"8, 7"``), as in pairwise judge prompts.
    """
    text = strip_reasoning(reply)
    pairs: list[tuple[str, str]] = []
    for inner in reversed(_BRACKETED.findall(text)):
        numbers = re.findall(_NUMBER, inner)
        if len(numbers) == 2:
            pairs.append((numbers[0], numbers[1]))
    labelled = re.findall(
        rf"(?:assistant|response)\s*(1|2|a|b)\s*\**\s*[:：=]?\s*\**\s*({_NUMBER})", text, re.IGNORECASE
    )
    by_side = {side.lower(): value for side, value in labelled}
    first, second = by_side.get("1") or by_side.get("a"), by_side.get("2") or by_side.get("b")
    if first is not None and second is not None:
        pairs.append((first, second))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines:
        match = _PAIR_LINE.fullmatch(lines[0])
        if match:
            pairs.append((match.group(1), match.group(2)))
    for a_text, b_text in pairs:
        a, b = _as_number(a_text), _as_number(b_text)
        if a is not None and b is not None and min_score <= a <= max_score and min_score <= b <= max_score:
            return a, b
    return None


__all__ = [
    "BINARY_FORMATS",
    "binary_labels",
    "parse_binary",
    "parse_binary_verdict",
    "parse_score",
    "parse_score_pair",
    "strip_reasoning",
]
