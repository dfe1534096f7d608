"""Multiple-choice scoring: finding the option letter in a model's answer, and the match rules of
the benchmarks that score letters (AI2D, ScienceQA, SEED-Bench, MMStar, RealWorldQA, ...).

:func:`extract_mcq_answer` reads a free-text answer and returns the letter it commits to, or None.
It never guesses: an answer that names no letter, or names several with equal standing, gives None
and scores as wrong, so the same outputs always give the same score.

The narrower rules of single benchmarks are here too, so they are tested in one place:

* :func:`leading_letter` / :func:`letter_or_leading_letter_match`: an output that starts with an
  uppercase letter and a full stop (``"B. a cat"``) means that letter (AI2D, ScienceQA);
* :func:`first_char_match`: only the first character of the output counts (SEED-Bench);
* :func:`choice_or_text_match`: a letter gold is compared with the extracted letter, any other gold
  with the whole output (RealWorldQA);
* :func:`macro_mean`: the mean of per-group means (MMStar's average over its L2 categories);
* :func:`most_likely_choice`: the choice a log-likelihood (``multiple_choice``) request prefers.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

UPPERCASE = string.ascii_uppercase

# After "A" (or "I") these words show the letter is an option, not the article (or the pronoun):
# "the answer is A because ..." names option A; "the answer is a cat" does not.
_CONNECTIVES = frozenset(
    {"and", "or", "because", "since", "as", "is", "was", "which", "that", "so", "for", "with"}
    | {"from", "in", "of", "on", "to", "given", "here"}
)


@dataclass(frozen=True)
class _Patterns:
    statement: re.Pattern[str]
    boxed: re.Pattern[str]
    bare: re.Pattern[str]
    leading: re.Pattern[str]
    is_correct: re.Pattern[str]
    option: re.Pattern[str]
    bold: re.Pattern[str]
    bracketed: re.Pattern[str]
    token: re.Pattern[str]
    final: re.Pattern[str]


def _check_letters(letters: str) -> str:
    if not letters or any(c not in UPPERCASE for c in letters) or len(set(letters)) != len(letters):
        raise ValueError(f"letters must be distinct uppercase letters A-Z, got {letters!r}")
    return letters


@lru_cache(maxsize=32)
def _patterns(letters: str) -> _Patterns:
    """The compiled patterns for one set of option letters (cached: the letter sets are few)."""
    x = f"([{letters}])"
    end = r"(?![A-Za-z0-9])"
    keyword = r"(?:answer|correct (?:option|choice)|best (?:option|choice)|right (?:option|choice))"
    verb = r"(?:\s+(?:is|would be|should be|will be|must be))?"
    return _Patterns(
        statement=re.compile(
            rf"(?i:\b{keyword}{verb})[\s:：\-=*#]*(?i:(?:option|choice)\s*)?[\(\[\{{]?\**{x}\**[\)\]\}}]?{end}"
        ),
        boxed=re.compile(rf"\\boxed\{{\s*(?:\\text\w*\{{\s*)?\(?{x}\)?\s*\}}"),
        bare=re.compile(rf"^[\(\[\{{]?\**{x}\**[\)\]\}}]?[.:。]?$", re.IGNORECASE),
        leading=re.compile(rf"^[\(\[]?\**{x}\**(?:[\)\]]|[.:](?!\d)|[ \t]*\n)"),
        is_correct=re.compile(
            rf"(?<![A-Za-z0-9]){x}\)?\s+(?:is|would be|seems)\s+(?:the\s+)?"
            r"(?:correct|right|best|most (?:likely|appropriate|accurate|suitable))"
        ),
        option=re.compile(rf"(?i:\b(?:option|choice))\s*[:：]?\s*[\(\[]?{x}[\)\]]?{end}"),
        bold=re.compile(rf"\*\*\s*\(?{x}\)?[.:]?\s*\*\*"),
        bracketed=re.compile(rf"[\(\[]{x}[\)\]]"),
        token=re.compile(rf"(?<![A-Za-z0-9'’_]){x}(?![A-Za-z0-9'’_])"),
        final=re.compile(
            rf"(?<![A-Za-z0-9'’_])(?i:(?:option|choice)\s*)?[\(\[]?\**{x}\**[\)\]]?[.!]?\**\s*$"
        ),
    )


def _is_word_letter(text: str, match: re.Match[str]) -> bool:
    """True when the matched "A" / "I" reads as the article / pronoun: a lowercase word follows."""
    if match.group(1) not in ("A", "I"):
        return False
    following = re.match(r"\**[ \t]+([a-z][a-z'’-]*)", text[match.end(1) :])
    return following is not None and following.group(1) not in _CONNECTIVES


# A final letter right after one of these words is no commitment: "(A) or B", "C, not D".
_HEDGES = frozenset({"or", "not", "nor", "and", "vs", "versus", "than", "between"})


def _final_letter(pattern: re.Pattern[str], text: str) -> str | None:
    """The standalone capital letter that ends ``text`` ("... C is wrong, so B"), unless a hedge
    word (:data:`_HEDGES`) comes right before it."""
    match = pattern.search(text)
    if match is None:
        return None
    before = re.findall(r"[A-Za-z]+", text[: match.start()])
    return None if before and before[-1].lower() in _HEDGES else match.group(1)


def _letters_found(pattern: re.Pattern[str], text: str) -> list[str]:
    """The letters of every match of ``pattern``, in order, leaving out articles/pronouns."""
    return [m.group(1) for m in pattern.finditer(text) if not _is_word_letter(text, m)]


def _unique(found: list[str]) -> str | None:
    """The letter when all matches agree; None when there is none or they disagree."""
    return found[0] if found and len(set(found)) == 1 else None


def extract_mcq_answer(text: Any, letters: str = "ABCD") -> str | None:
    """The option letter (one of ``letters``) that ``text`` commits to, or None.

    The text is NFKC-normalised (full-width ``（Ｂ）`` becomes ``(B)``) and stripped. Rules, in
    priority order; the first that yields a letter wins:

    1. an answer statement: ``answer is (B)``, ``Answer: B``, ``The correct option is **B**``,
       ``best choice: option B``, or ``\\boxed{B}``. When there are several, the **last** wins
       (models revise themselves: "the answer is A... no, the answer is B");
    2. the whole output is a letter: ``B``, ``b``, ``(B)``, ``B.``, ``**B**``, ``[B]`` (the only
       rule that also takes a lowercase letter);
    3. the output starts with a letter and a delimiter: ``B. cat``, ``(B) cat``, ``B) cat``,
       ``B: cat``, ``**B.** cat``, or the letter alone on the first line;
    4. a letter declared right: ``B is correct``, ``(B) is the best``, ``C would be the right``;
    5. the output ends with a standalone capital letter (``... C is wrong, so B``, ``so (B).``,
       ``option B``), unless the word before it is a hedge (``or``, ``not``, ``and``, ``nor``,
       ``vs``, ``versus``, ``than``, ``between``: ``(A) or B``, ``C, not D`` name no final answer);
    6. ``option B`` / ``choice (B)``;
    7. a bold letter anywhere: ``**B**``;
    8. a bracketed letter anywhere: ``(B)``, ``[B]``;
    9. a lone capital letter anywhere (not inside a word).

    Rules 4 and 6-9 only count when all their matches name the same letter ("option A or option
    B" gives nothing from rule 6). Outside rule 2 letters must be uppercase, and an "A" (or "I")
    followed by a lowercase word that is not a connective ("because", "is", "and", ...) is the
    article (pronoun), not an option: "A cat sits on the mat" names no option. ``text`` that is
    not a string (None, a failed request) gives None.
    """
    if not isinstance(text, str):
        return None
    p = _patterns(_check_letters(letters))
    text = unicodedata.normalize("NFKC", text).strip()
    if not text:
        return None
    statements = [
        (m.start(), m.group(1)) for m in p.statement.finditer(text) if not _is_word_letter(text, m)
    ] + [(m.start(), m.group(1)) for m in p.boxed.finditer(text)]
    if statements:
        return max(statements)[1]
    bare = p.bare.match(text)
    if bare and bare.group(1).upper() in letters:
        return bare.group(1).upper()
    leading = p.leading.match(text)
    if leading:
        return leading.group(1)
    declared = _unique(_letters_found(p.is_correct, text))
    if declared is not None:
        return declared
    final = _final_letter(p.final, text)
    if final is not None:
        return final
    for pattern in (p.option, p.bold, p.bracketed, p.token):
        letter = _unique(_letters_found(pattern, text))
        if letter is not None:
            return letter
    return None


def mcq_match(prediction: Any, gold: str, letters: str = "ABCD") -> bool:
    """True when :func:`extract_mcq_answer` finds ``gold`` (a letter, any case) in ``prediction``."""
    return extract_mcq_answer(prediction, letters) == str(gold).strip().upper()


def leading_letter(text: Any) -> str | None:
    """The letter of an output that starts with an uppercase letter and a full stop.

    ``"B. a cat"`` and ``"  C."`` give the letter; ``"B"`` (no full stop), ``"b. cat"`` and
    ``"(B)"`` give None. This is the whole extraction rule of AI2D and ScienceQA.
    """
    if not isinstance(text, str):
        return None
    match = re.match(r"\s*([A-Z])\.", text)
    return match.group(1) if match else None


def letter_or_leading_letter_match(prediction: Any, letter: str) -> bool:
    """ScienceQA's rule: the stripped output is the letter (any case), or starts with ``"<letter>."``.

    ``"b"`` and ``"B. cat"`` match ``B``; ``"The answer is B"`` and ``"(B)"`` do not.
    """
    if not isinstance(prediction, str):
        return False
    pred = prediction.strip()
    if pred.lower() == letter.strip().lower():
        return True
    return len(pred) >= 2 and pred[0].isupper() and pred[1] == "." and pred[0] == letter.strip()


def first_char_match(prediction: Any, answer: str) -> bool:
    """SEED-Bench's rule: the first character of the stripped output equals the answer, ignoring case.

    ``"B"``, ``"b"`` and ``"B. a dog"`` match ``B``; so does ``"Because ..."`` (the rule only
    looks at one character), while ``"(B)"`` and ``"The answer is B"`` do not.
    """
    if not isinstance(prediction, str):
        return False
    pred = prediction.strip()
    return bool(pred) and pred[0].lower() == str(answer).strip().lower()


def choice_or_text_match(prediction: Any, gold: str, letters: str = "ABCD") -> bool:
    """RealWorldQA's rule: a letter gold (one of ``letters``) is compared with
    :func:`extract_mcq_answer` of the output; any other gold (a number, a word) with the whole
    output, ignoring case, surrounding whitespace and the output's trailing full stops (``"Yes."``
    matches ``yes``; ``"3 ."``, ``"3 cars"`` do not match ``3``, nor ``"yes"`` a gold ``yes.``).
    """
    gold = str(gold).strip()
    if len(gold) == 1 and gold in letters:
        return extract_mcq_answer(prediction, letters) == gold
    if not isinstance(prediction, str):
        return False
    return prediction.strip().rstrip(".").lower() == gold.lower()


def index_to_letter(index: Any, n_options: int | None = None) -> str:
    """The letter of a 0-based option index given as an int or a digit string (``"2"`` -> ``C``).

    Raises ValueError naming the value when it is not an index (or not below ``n_options``).
    """
    try:
        number = int(str(index).strip())
    except ValueError:
        raise ValueError(f"option index must be an integer, got {index!r}") from None
    limit = len(UPPERCASE) if n_options is None else min(n_options, len(UPPERCASE))
    if not 0 <= number < limit:
        raise ValueError(f"option index {index!r} is out of range for {limit} options")
    return UPPERCASE[number]


def macro_mean(items: Iterable[Mapping[str, Any]], group_key: str, score_key: str = "score") -> float:
    """The mean over groups of each group's mean ``score_key`` (groups named by ``group_key``).

    Every group weighs the same whatever its size: scores ``[1, 1, 1]`` in group x and ``[0]`` in
    group y give ``(1 + 0) / 2 = 0.5`` (the mean over items would be 0.75). No items give NaN.
    """
    groups: dict[Any, list[float]] = {}
    for item in items:
        groups.setdefault(item[group_key], []).append(float(item[score_key]))
    if not groups:
        return float("nan")
    return sum(sum(scores) / len(scores) for scores in groups.values()) / len(groups)


def most_likely_choice(results: Iterable[Any]) -> int:
    """The index of the choice with the highest log-likelihood, the first one on ties; ``results``
    holds one ``(log-likelihood, is_greedy)`` pair per choice, as ``multiple_choice`` tasks get them."""
    lls = [float(pair[0]) for pair in results]
    return max(range(len(lls)), key=lambda i: (lls[i], -i))
