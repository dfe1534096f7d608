"""MMMU parsing rules: multiple-choice letters, open answers, subjects and disciplines."""

from __future__ import annotations

import pytest

from lmms_eval.scoring import mmmu

OPTIONS = ["red car", "blue bicycle", "green bus", "yellow train"]


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("B", "B"),
        ("(C)", "C"),
        ("B.", "B"),  # edge "." stripped, then the spaced letter
        ("C. green bus", "C"),  # "C." form
        ("The answer is D.", "D"),
        ("Answer: (A) red car", "A"),  # bracket rule wins over the text rule
        ("(A) is tempting but (C) is right", "C"),  # two brackets: the last mentioned
        ("A or maybe B", "B"),  # two spaced letters: the last mentioned
        ("I would pick the green bus here for sure", "C"),  # > 5 words: option text
        ("the green bus", None),  # 3 words: the text rule does not apply
        ("DNA is the key", None),  # "A" inside a word is not a letter
        ("E", None),  # not one of the four options
        ("", None),
        ("I cannot tell from this picture at all", None),  # nothing parses: None, not a random letter
    ],
)
def test_parse_choice(response: str, expected: str | None) -> None:
    assert mmmu.parse_choice(response, OPTIONS) == expected


def test_unparsed_choice_is_wrong_every_time() -> None:
    results = {mmmu.score("multiple-choice", "A", "no idea", OPTIONS) for _ in range(20)}
    assert results == {(False, None)}


def test_text_rule_takes_the_option_mentioned_last() -> None:
    # "red car" ends at position ~20, "yellow train" later: the later one is picked.
    response = "Not the red car, it has to be the yellow train"
    assert mmmu.parse_choice(response, OPTIONS) == "D"


@pytest.mark.parametrize(
    ("response", "keys"),
    [
        ("The answer is 5 m/s.", ["5 m/s"]),
        # two sentences, each with a cue: "is 5" -> "5"; "it is big" -> "big"
        ("The answer is 5. It is big", ["5", "big"]),
        # last sentence also splits at "=": "x = 12" -> "12" (shorter than the text after "so ")
        ("so x = 12", ["12"]),
        ("Paris", ["paris"]),  # no cue: the whole response, lower-cased
    ],
)
def test_key_responses(response: str, keys: list[str]) -> None:
    assert mmmu.key_responses(response) == keys


def test_extract_numbers_forms() -> None:
    # thousands commas kept together; scientific notation read whole; plain decimals
    assert mmmu.extract_numbers("total 1,234 units") == ["1,234"]
    assert mmmu.extract_numbers("rate 1.5e-3 per s") == ["1.5e-3"]
    assert mmmu.extract_numbers("-3.75 and 12") == ["-3.75", "12"]


def test_normalise() -> None:
    assert mmmu.normalise("3.14159") == [3.14]  # rounded to 2 decimals
    assert mmmu.normalise("1,000") == [1000.0]
    assert mmmu.normalise(" Paris ") == ["paris"]
    assert mmmu.normalise("a") == [" a", "a "]  # single characters padded
    assert mmmu.normalise("nan") == ["nan"]  # a word, not a float


@pytest.mark.parametrize(
    ("gold", "response", "correct"),
    [
        ("24", "24 cm", True),  # number with a unit: 24.0 == 24.0
        ("24", "The length is 24.004 cm", True),  # key "24.004 cm" -> 24.0 after rounding
        ("24", "The length is 25 cm", False),
        ("5 m", "The speed is 5 m/s", True),  # text gold contained in the key text "5 m/s"
        ("Paris", "I believe it's Paris, France", True),  # no cue: whole response contains "paris"
        ("['3', '3.0']", "so the value = 3.0", True),  # list literal gold; key "3.0" -> 3.0
        ("['7', 'seven']", "The result is six", False),
        # a list-literal gold accepts any of its alternatives (MMMU's official answer file lists
        # them; the published task compares the literal's text and so never matches)
        ("['3', '4']", "The answer is 4", True),
        ("['red', 'blue']", "red", True),
        ("1,500", "therefore 1500", True),  # commas dropped: 1500.0
        ("a", "the answer is b", False),  # " a"/"a " not in "b"
        ("a", "a banana", True),  # whole response "a banana" contains "a "
        ("a", "banana", False),  # neither " a" nor "a " in "banana"
    ],
)
def test_match_open(gold: str, response: str, correct: bool) -> None:
    assert mmmu.match_open(mmmu.parse_gold(gold), response) is correct


def test_one_character_key_matches_one_character_gold() -> None:
    # key "c" normalises to [" c", "c "]; the gold's " c" is inside the candidate " c".
    assert mmmu.open_candidates("the answer is c") == [" c", "c "]
    assert mmmu.match_open("c", "the answer is c") is True


def test_score_open_returns_the_candidates() -> None:
    correct, parsed = mmmu.score("open", "42", "The result is 42 kg", [])
    # key "42 kg", then the number "42" -> 42.0
    assert correct is True and parsed == ["42 kg", 42.0]


def test_score_rejects_unknown_question_type() -> None:
    with pytest.raises(ValueError, match="unknown MMMU question_type 'essay'"):
        mmmu.score("essay", "A", "A", OPTIONS)


def test_options_and_gold_literals() -> None:
    assert mmmu.parse_options("['1 m', \"2 m\"]") == ["1 m", "2 m"]
    assert mmmu.parse_options("[]") == []
    assert mmmu.parse_gold("['1', '2']") == ["1", "2"]
    assert mmmu.parse_gold("[1, 2] apples") == "[1, 2] apples"
    with pytest.raises(ValueError, match="not a Python list literal"):
        mmmu.parse_options("['unclosed")
    with pytest.raises(ValueError, match="not a list"):
        mmmu.parse_options("{'a': 1}")


def test_subjects_and_disciplines() -> None:
    assert sum(len(s) for s in mmmu.DOMAINS.values()) == 30
    assert len(mmmu.SUBJECT_DOMAIN) == 30  # no subject in two disciplines
    assert mmmu.subject_of("validation_Art_Theory_12") == "Art_Theory"
    assert (
        mmmu.subject_of("test_Diagnostics_and_Laboratory_Medicine_3") == "Diagnostics_and_Laboratory_Medicine"
    )
    assert mmmu.domain_of("Art_Theory") == "Art and Design"
    assert mmmu.domain_of("Energy_and_Power") == "Tech and Engineering"
    assert mmmu.domain_key("Humanities and Social Science") == "humanities_and_social_science"
    with pytest.raises(ValueError, match="unknown MMMU subject 'Alchemy'"):
        mmmu.domain_of("Alchemy")
    with pytest.raises(ValueError, match="is not '<split>_<Subject>_<n>'"):
        mmmu.subject_of("validation")


def test_published_fallback_draws_the_letters_of_a_seeded_global_random() -> None:
    """Unparseable answers draw, in order, what ``random.seed(s); random.choice(letters)`` draws,
    without touching the global ``random``; parseable ones draw nothing."""
    import random

    from lmms_eval.scoring import published

    options = ["w", "x", "y", "z"]
    for seed in (0, 1, 1234):
        published.reseed(seed)
        outside = random.getstate()
        got = [mmmu.published_choice(text, options) for text in ("??", "B", "", "none of these", "(C)")]
        assert random.getstate() == outside
        reference = random.Random(seed)
        expected = [reference.choice("ABCD"), "B", reference.choice("ABCD"), reference.choice("ABCD"), "C"]
        assert got == expected


def test_published_open_gold_list_literal_is_one_string() -> None:
    assert mmmu.score("open", "['3', '3.0']", "x = 3", [])[0] is True
    assert mmmu.score("open", "['3', '3.0']", "x = 3", [], published=True)[0] is False
