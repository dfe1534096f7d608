"""The published MMStar letter reader, on phrasings measured against the published package."""

from __future__ import annotations

import pytest

from lmms_eval.scoring.choice import extract_mcq_answer
from lmms_eval.scoring.published import published_mcq_letter, published_videomme_letter

# (output, the letter the published package reads) as measured with its own process_results
MEASURED = [
    ("B", "B"),
    ("b", None),
    ("(B)", "B"),
    ("B. blue", "B"),
    ("Blue", "B"),
    ("A cat sits", "A"),
    ("Answer: B", "B"),
    ("Answer: E", "A"),
    ("Answer: B C", "C"),
    ("The answer is B, not C", "C"),
    ("C is wrong, so B", "C"),
    ("A and B", "A"),
    ("Both A and C", "C"),
    ("option A or option B", "B"),
    ("x A B1", "A"),
    ("x A B, x", "A"),
    ("x A B,", "B"),
    ("x A B,.", "A"),
    ("x A B.,", "B"),
    (".A (B", "A"),
    (".,A (B", "B"),
    (",.A (B", "A"),
    ("x A cat answer is Blue", "B"),
    ("ABCD", "D"),
    ("E", None),
    ("I cannot tell", None),
    ("", None),
    # the letter shapes, in order: (X), X., X:, X), X and a space; the last of one shape wins
    ("x (A) y B. z", "A"),
    ("x B. y A) z", "B"),
    ("x A. y B z", "A"),
    ("x A) y B z", "A"),
    ("x A: y B. z", "B"),
    ("x B) y A: z", "A"),
    ("x B. y A. z", "A"),
    ("x A) y B) z", "B"),
    ("x (A) y B", "B"),  # a final letter comes first
    ("x B y [A]", "B"),
    ("x (B) y answer is A z", "A"),
]

# Video-MME's reader, measured the same way: its last shape needs a space on both sides
MEASURED_VIDEOMME = [
    ("x A y Bz", "A"),
    ("x A y B z", "B"),
    ("blue(A catB.", "B"),
    ("x (A) y B. z", "A"),
    ("x B. y A) z", "B"),
    ("A cat sits", "A"),
    ("b", None),
    ("The answer is B, not C", "C"),
    ("x A) y B z", "A"),
    ("Blue", "B"),
]


@pytest.mark.parametrize(("output", "letter"), MEASURED)
def test_published_reader_matches_measured_letters(output: str, letter: str | None) -> None:
    assert published_mcq_letter(output) == letter


def test_published_reader_differs_from_ours_where_documented() -> None:
    assert published_mcq_letter("A cat sits") == "A" and extract_mcq_answer("A cat sits") is None
    assert published_mcq_letter("b") is None and extract_mcq_answer("b") == "B"


def test_non_text_reads_no_letter() -> None:
    assert published_mcq_letter(None) is None


@pytest.mark.parametrize(("output", "letter"), MEASURED_VIDEOMME)
def test_videomme_reader_matches_measured_letters(output: str, letter: str | None) -> None:
    assert published_videomme_letter(output) == letter


def test_videomme_reader_differs_from_mmstar_on_glued_letters() -> None:
    assert published_videomme_letter("blue(A catB.") == "B"
    assert published_mcq_letter("blue(A catB.") == "A"
