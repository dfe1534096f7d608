"""MMMU scoring: the multiple-choice letter parser, open-answer matching and the subject taxonomy.

Rules (MMMU's published evaluation; the corrections are marked *Correction*):

* **Multiple choice.** Edge punctuation is stripped from the response. A letter is looked for, in
  this order, as ``(B)``; as a separate word ``B``; as ``B.``; and, only in responses longer than
  five words, as the text of an option. When several options are found by the same rule, the one
  mentioned last wins. When nothing is found the answer is **unparsed and counts as wrong**.
  *Correction:* the published parser picked a random letter there, so scores changed between
  identical runs. *Correction:* a letter must stand alone (``"DNA is"`` does not name option A).
* **Open answers.** The response is cut into sentences. In each sentence, the text after the last
  occurrence of each answer cue (``"is "``, ``"so "``, ``"therefore "``, ``"answer "``, ..., and
  ``"="`` in the last sentence) is a candidate, and the shortest one is kept; with no cue in any
  sentence, the whole response is the candidate. Numbers in the candidates are added.
  Candidates are normalised: numbers to floats rounded to 2 decimals (commas dropped), text to
  lower case. The answer is correct when a normalised gold number equals a candidate number, or a
  normalised gold text is contained in a candidate text. One-character gold texts must appear
  next to a space, so that the gold ``"a"`` is not found inside every word.
  *Correction:* the published splitter lower-cased the response before looking for sentence
  starts, so it only split at line breaks. *Correction:* each number is read once, in its longest
  form (``1,234``, ``1.5e-3``), where the published extractor could also read fragments of it
  (``234``; ``1`` and ``-3``).

Subjects come from the document id (``validation_Art_Theory_12`` -> ``Art_Theory``); the 30
subjects fall into six disciplines (:data:`DOMAINS`) that MMMU reports separately.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from lmms_eval.api.prompts import option_letters

DOMAINS: dict[str, tuple[str, ...]] = {
    "Art and Design": ("Art", "Art_Theory", "Design", "Music"),
    "Business": ("Accounting", "Economics", "Finance", "Manage", "Marketing"),
    "Science": ("Biology", "Chemistry", "Geography", "Math", "Physics"),
    "Health and Medicine": (
        "Basic_Medical_Science",
        "Clinical_Medicine",
        "Diagnostics_and_Laboratory_Medicine",
        "Pharmacy",
        "Public_Health",
    ),
    "Humanities and Social Science": ("History", "Literature", "Sociology", "Psychology"),
    "Tech and Engineering": (
        "Agriculture",
        "Architecture_and_Engineering",
        "Computer_Science",
        "Electronics",
        "Energy_and_Power",
        "Materials",
        "Mechanical_Engineering",
    ),
}
SUBJECT_DOMAIN: dict[str, str] = {
    subject: domain for domain, subjects in DOMAINS.items() for subject in subjects
}

_EDGE_PUNCTUATION = ",.!?;:'"
_ANSWER_CUES = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ")
_NUMBERS_IN_TEXT = re.compile(
    r"-?\b\d{1,3}(?:,\d{3})+\b"  # 1,234,567
    r"|-?\d+(?:\.\d+)?[eE][+-]?\d+"  # 1.5e-3
    r"|-?(?:\d+\.\d+|\.\d+|\d+)"  # 12, 3.5, .5
)
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SENTENCE_BREAK = re.compile(r"\.\s+(?=[A-Z])|\n")


# -- taxonomy ------------------------------------------------------------------------------------


def subject_of(doc_id: str) -> str:
    """The subject in an MMMU id: ``"validation_Art_Theory_12"`` -> ``"Art_Theory"``."""
    parts = str(doc_id).split("_")
    if len(parts) < 3:
        raise ValueError(f"MMMU id {doc_id!r} is not '<split>_<Subject>_<n>'")
    return "_".join(parts[1:-1])


def domain_of(subject: str) -> str:
    """The discipline of a subject (``"Art_Theory"`` -> ``"Art and Design"``)."""
    try:
        return SUBJECT_DOMAIN[subject]
    except KeyError:
        raise ValueError(
            f"unknown MMMU subject {subject!r}; known: {', '.join(sorted(SUBJECT_DOMAIN))}"
        ) from None


def domain_key(domain: str) -> str:
    """A result-key fragment for a discipline: ``"Art and Design"`` -> ``"art_and_design"``."""
    return re.sub(r"[^a-z0-9]+", "_", domain.lower()).strip("_")


# -- dataset fields ------------------------------------------------------------------------------


def parse_options(value: str | Sequence[str]) -> list[str]:
    """The ``options`` field, a Python list literal such as ``"['1 m', '2 m']"``, as a list."""
    if not isinstance(value, str):
        return [str(v) for v in value]
    try:
        parsed = ast.literal_eval(value) if value.strip() else []
    except (ValueError, SyntaxError) as exc:
        raise ValueError(f"MMMU options {value!r} are not a Python list literal: {exc}") from None
    if not isinstance(parsed, (list, tuple)):
        raise ValueError(f"MMMU options {value!r} are not a list")
    return [str(v) for v in parsed]


def parse_gold(answer: str) -> str | list[str]:
    """An open question's gold: a text, or a list literal of accepted answers (``"['3', '3.0']"``)."""
    text = str(answer).strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
        if isinstance(parsed, (list, tuple)):
            return [str(v) for v in parsed]
    return text


# -- multiple choice -----------------------------------------------------------------------------


def parse_choice(response: str, options: Sequence[str]) -> str | None:
    """The option letter a response picks (rules in the module docstring); None when none is found."""
    letters = option_letters(len(options))
    body = " ".join(str(response).split()).strip(_EDGE_PUNCTUATION + " ")
    text = f" {body} "
    forms = (lambda letter: f"({letter})", lambda letter: f" {letter} ", lambda letter: f" {letter}.")
    for form in forms:
        found = [letter for letter in letters if form(letter) in text]
        if found:
            return max(found, key=lambda letter: text.rfind(form(letter)))
    if len(body.split()) > 5:
        lowered = text.lower()
        named = {
            letter: option.strip().lower()
            for letter, option in zip(letters, options)
            if option.strip() and option.strip().lower() in lowered
        }
        if named:
            return max(named, key=lambda letter: lowered.rfind(named[letter]))
    return None


# -- open answers --------------------------------------------------------------------------------


def key_responses(response: str) -> list[str]:
    """The candidate answer texts of a response (lower case): the shortest tail after an answer cue
    in each sentence, or the whole response when no sentence has a cue."""
    text = str(response).strip().strip(".")
    sentences = [s.strip().lower() for s in _SENTENCE_BREAK.split(text)]
    sentences = [s for s in sentences if s]
    keys: list[str] = []
    for position, sentence in enumerate(sentences):
        cues = (*_ANSWER_CUES, "=") if position == len(sentences) - 1 else _ANSWER_CUES
        tails = [sentence.split(cue)[-1].strip() for cue in cues if cue in sentence]
        if not tails:
            continue
        shortest = min(tails, key=len)
        if shortest and shortest not in _EDGE_PUNCTUATION:
            keys.append(shortest)
    return keys or [text.lower()]


def extract_numbers(text: str) -> list[str]:
    """Numbers written in ``text``, left to right, each read once in its longest form: with
    thousands commas, in scientific notation, or plain."""
    return _NUMBERS_IN_TEXT.findall(text)


def _as_number(text: str) -> float | None:
    plain = text.strip().replace(",", "")
    return float(plain) if _NUMBER.fullmatch(plain) else None


def normalise(value: str) -> list[str | float]:
    """A number as ``[float rounded to 2 decimals]``; a text lower-cased, one character padded with a
    space on either side (``"a"`` -> ``[" a", "a "]``)."""
    number = _as_number(value)
    if number is not None:
        return [round(number, 2)]
    text = value.strip().lower()
    return [f" {text}", f"{text} "] if len(text) == 1 else [text]


def open_candidates(response: str) -> list[str | float]:
    """The normalised candidates of an open answer (key texts and the numbers in them), unique."""
    keys = key_responses(response)
    raw = keys + [number for key in keys for number in extract_numbers(key)]
    out: list[str | float] = []
    for item in raw:
        for value in normalise(item):
            if value not in out:
                out.append(value)
    return out


def match_open(gold: str | Sequence[str], response: str) -> bool:
    """Whether an open answer is correct: a gold number equals a candidate number, or a gold text
    is contained in a candidate text. ``gold`` may list several accepted answers."""
    golds = [gold] if isinstance(gold, str) else list(gold)
    normalised = [value for g in golds for value in normalise(str(g))]
    for candidate in open_candidates(response):
        if isinstance(candidate, str):
            if any(isinstance(g, str) and g in candidate for g in normalised):
                return True
        elif any(isinstance(g, float) and g == candidate for g in normalised):
            return True
    return False


def published_choice(response: str, options: Sequence[str]) -> str:
    """The published rule: :func:`parse_choice`, else a random option letter drawn from the
    published-fallback stream (:mod:`lmms_eval.scoring.published`: same ``--seed``, same letters)."""
    from lmms_eval.scoring.published import fallback_choice

    letter = parse_choice(response, options)
    return letter if letter is not None else fallback_choice(option_letters(len(options)))


def score(
    question_type: str, gold: str, response: str, options: Sequence[str], published: bool = False
) -> tuple[bool, object]:
    """``(correct, parsed prediction)`` of one MMMU answer; ``question_type`` is
    ``"multiple-choice"`` or ``"open"``. ``published=True`` applies the published rules: a random
    letter when no option is found (:func:`published_choice`), and an open gold that is a list
    literal read as one string; otherwise no letter is wrong and a list literal lists alternatives."""
    if question_type == "multiple-choice":
        letter = published_choice(response, options) if published else parse_choice(response, options)
        return letter is not None and letter == str(gold).strip(), letter
    if question_type == "open":
        # published: a list-literal gold ("['3', '3.0']") is one string, so it never matches
        golds = str(gold).strip() if published else parse_gold(gold)
        return match_open(golds, response), open_candidates(response)
    raise ValueError(f"unknown MMMU question_type {question_type!r} (expected 'multiple-choice' or 'open')")


__all__ = [
    "DOMAINS",
    "SUBJECT_DOMAIN",
    "domain_key",
    "domain_of",
    "extract_numbers",
    "key_responses",
    "match_open",
    "normalise",
    "open_candidates",
    "parse_choice",
    "parse_gold",
    "parse_options",
    "published_choice",
    "score",
    "subject_of",
]
