"""mmmu_pro: the published letter rule (random fallback), the vision whole-output rule, composite
letter lists, strict keys beside the published ones, prompts and images of each setting."""

from __future__ import annotations

import random
from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import mmmu_pro

OPTIONS = ["apple", "banana", "cherry", "date fruit", "elder", "fig", "grape", "honeydew", "ice", "jack"]
RED, GREEN, BLUE = (200, 0, 0), (0, 200, 0), (0, 0, 200)
POST = "Answer with the option letter from the given choices directly."


# (response, letter the published rule reads) - each checked against the published package
PUBLISHED = [
    ("B", "B"),
    ("B.", "B"),
    ("(B)", "B"),
    ("Answer: B", "B"),
    ("The answer is B.", "B"),
    ("answer is B!", "B"),
    ("DNA is", "A"),  # "A " counts: a letter need not start a word
    ("(A) or (B)", "B"),  # the last bracketed letter
    ("B or C", "C"),  # the last " X "
    ("A\nB", "B"),
    ("x B.y", "B"),
    ("Answer: (J)", "J"),
    ("I pick the cherry here because it is red", "I"),  # "I " is option I
    ("the cherry and the banana are both fruits in this", "B"),  # option text, the last mentioned
]


@pytest.mark.parametrize(("response", "letter"), PUBLISHED)
def test_published_choice(response: str, letter: str) -> None:
    assert mmmu_pro.published_choice(response, OPTIONS) == (letter, False)


@pytest.mark.parametrize("response", ["b", "**B**", "B)", "[B]", "B\n", "cherry", "K", "Answer: $B$"])
def test_published_choice_draws_a_seeded_letter(response: str) -> None:
    random.seed(0)
    first = mmmu_pro.published_choice(response, OPTIONS)
    random.seed(0)
    expected = random.choice(list("ABCDEFGHIJ"))
    random.seed(0)
    assert first == (expected, True) == mmmu_pro.published_choice(response, OPTIONS)
    # seed 0 draws G and seed 1 draws C, as in the published package
    random.seed(1)
    assert mmmu_pro.published_choice(response, OPTIONS)[0] == "C"
    assert expected == "G"


@pytest.mark.parametrize(
    ("response", "letter"),
    [("**B**", "B"), ("Answer: B", "B"), ("DNA is", None), ("b", "B"), ("A cat", None), ("K", None)],
)
def test_strict_choice(response: str, letter: str | None) -> None:
    assert mmmu_pro.strict_choice(response, 10) == letter


@pytest.mark.parametrize(
    ("response", "letters"),
    [
        ("No: 1\nAnswer: A\nNo: 2\nAnswer: C", ["A", "C"]),
        ("A B C", ["A", "B"]),
        ("B", ["B", ""]),
        ("AC", ["", ""]),
        ("A.C", ["A", "C"]),
        ("I think A", ["I", "A"]),
        ("Answer: **A**\nAnswer: C", ["A", "C"]),
        ("a c", ["", ""]),
    ],
)
def test_composite_letters(response: str, letters: list[str]) -> None:
    assert mmmu_pro.composite_letters(response, 2) == letters


def test_composite_gold_and_score() -> None:
    assert mmmu_pro.composite_gold("['A', 'C']") == ["A", "C"]
    assert mmmu_pro.composite_gold("B") == ["B"]
    with pytest.raises(ValueError, match="not a Python list literal"):
        mmmu_pro.composite_gold("['A', C]")
    assert mmmu_pro.composite_score(["A", "B"], ["A", "C"]) == 0.5
    assert mmmu_pro.composite_score(["", ""], ["A", "C"]) == 0.0


def _standard_features() -> Any:
    import datasets

    fields: dict[str, Any] = {
        "id": datasets.Value("string"),
        "question": datasets.Value("string"),
        "options": datasets.Value("string"),
        "explanation": datasets.Value("string"),
    }
    fields.update({f"image_{k}": datasets.Image() for k in range(1, 8)})
    for name in ("img_type", "answer", "topic_difficulty", "subject"):
        fields[name] = datasets.Value("string")
    return datasets.Features(fields)


def _vision_features() -> Any:
    import datasets

    names = ("id", "options", "answer", "subject")
    return datasets.Features({"image": datasets.Image(), **{n: datasets.Value("string") for n in names}})


# (id, gold, scripted answer, published correct?, strict correct?)
STANDARD = [
    ("test_Art_1", "C", "C", True, True),
    ("test_Art_2", "A", "DNA is", True, False),
    ("test_Physics_3", "B", "**B**", None, True),  # published: a seeded random letter
    ("test_Physics_4", "J", "The answer is (J).", True, True),
]
VISION = [
    ("test_Art_1", "B", "B", True, True),
    ("test_Art_2", "B", "Answer: B", False, True),
    ("test_Art_3", "D", "B.", False, False),
]


@pytest.fixture
def mmmu_pro_data(hub_dataset: Any) -> None:
    images = {"image_1": solid_image(RED), "image_2": solid_image(GREEN), "image_3": solid_image(BLUE)}
    rows = []
    for doc_id, gold, _, _, _ in STANDARD:
        row: dict[str, Any] = {
            "id": doc_id,
            "question": "Compare <image 2> with <image 1>.",
            "options": repr([*OPTIONS[:9], "<image 3>"]),
            "explanation": "",
            "img_type": "['Diagrams']",
            "answer": gold,
            "topic_difficulty": "Easy",
            "subject": doc_id.split("_")[1],
        }
        row.update({f"image_{k}": images.get(f"image_{k}") for k in range(1, 8)})
        rows.append(row)
    hub_dataset("MMMU/MMMU_Pro", "test", rows, _standard_features(), config="standard (10 options)")
    vision = [
        {"id": i, "image": solid_image(GREEN), "options": repr(OPTIONS), "answer": gold, "subject": "Art"}
        for i, gold, _, _, _ in VISION
    ]
    hub_dataset("MMMU/MMMU_Pro", "test", vision, _vision_features(), config="vision")


def _answer(task: str, doc: dict[str, Any]) -> str:
    table = STANDARD if "standard" in task else VISION
    return next(answer for doc_id, _, answer, _, _ in table if doc_id == doc["id"])


def test_standard_and_vision_scores(mmmu_pro_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("mmmu_pro", _answer, random_seed=0)["results"]
    standard, vision = results["mmmu_pro_standard"], results["mmmu_pro_vision"]
    random.seed(0)
    drawn = random.choice(list("ABCDEFGHIJ"))  # the one response that names no letter
    assert standard["mmmu_acc,none"] == round((3 + (drawn == "B")) / 4, 5)
    assert standard["mmmu_acc_strict,none"] == pytest.approx(3 / 4)
    assert vision["mmmu_acc,none"] == round(1 / 3, 5) == 0.33333
    assert vision["mmmu_acc_strict,none"] == pytest.approx(2 / 3)


def test_prompts_and_images(mmmu_pro_data: None, run_benchmark: Any) -> None:
    simple = ScriptedModel(_answer, chat=False)
    run_benchmark(["mmmu_pro_standard", "mmmu_pro_vision_cot"], _answer, model=simple, limit=1)
    text, visuals = simple.seen["mmmu_pro_standard"][0]
    options = "\n".join(f"{letter}. {o}" for letter, o in zip("ABCDEFGHIJ", [*OPTIONS[:9], "<image 3>"]))
    assert text == f"Compare <image 2> with <image 1>.\n{options}\n\n{POST}"
    # the mentioned images, in the order of their numbers (the option's <image 3> too)
    assert [v.getpixel((0, 0)) for v in visuals] == [RED, GREEN, BLUE]
    text, visuals = simple.seen["mmmu_pro_vision_cot"][0]
    assert (
        text.startswith("Write out the multiple-choice question in the image") and "'Answer: $LETTER'" in text
    )
    assert [v.getpixel((0, 0)) for v in visuals] == [GREEN]
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("mmmu_pro_vision", _answer, model=chat, limit=1)
    [message] = chat.seen["mmmu_pro_vision"][0]
    image, prompt = message["content"]
    assert image["url"].getpixel((0, 0)) == GREEN and prompt == {"type": "text", "text": POST}
