"""naturalbench: reading yes/no and a/b, the four group scores over groups of four documents."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import naturalbench


# each checked against the published package
@pytest.mark.parametrize(
    ("response", "kind", "value"),
    [
        ("Yes", "yes_no", 1),
        ("no, yes", "yes_no", 0),  # the first word decides
        (" No.", "yes_no", 0),
        ("Yesterday", "yes_no", -1),
        ("not sure", "yes_no", -1),
        ("(b)", "multiple_choice", 0),
        ("The answer is A", "multiple_choice", 1),
        ("Answer: B", "multiple_choice", 0),
        ("A or B", "multiple_choice", 1),
        ("Because", "multiple_choice", -1),
        ("Yes", "multiple_choice", -1),
    ],
)
def test_read_answer(response: str, kind: str, value: int) -> None:
    assert naturalbench.read_answer(response, kind) == value


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ((1, 0, 0, 1), (1.0, 1.0, 1.0, 1.0)),
        ((1, 1, 1, 1), (0.5, 0.0, 0.0, 0.0)),
        ((1, 0, 1, 0), (0.5, 0.5, 0.0, 0.0)),  # question 0 right on both images
        ((1, 1, 0, 0), (0.5, 0.0, 0.5, 0.0)),  # image 0 right on both questions
        ((-1, 0, 0, 1), (0.75, 0.5, 0.5, 0.0)),
    ],
)
def test_group_scores(answers: tuple[int, ...], expected: tuple[float, ...]) -> None:
    items = [{"id": 4 + k, "score": s} for k, s in enumerate(answers)] + [
        {"id": 8, "score": 1}
    ]  # 8: incomplete
    got = tuple(naturalbench.score(items, unit) for unit in ("ACC", "Q_ACC", "I_ACC", "G_ACC"))
    assert got == pytest.approx(expected)


# per document: (question type, answer); gold by place: Yes/A, No/B, No/B, Yes/A
DOCS = [("yes_no", "Yes"), ("yes_no", "No"), ("yes_no", "no"), ("yes_no", "No")]
DOCS += [
    ("multiple_choice", "A"),
    ("multiple_choice", "B"),
    ("multiple_choice", "B"),
    ("multiple_choice", "A"),
]


@pytest.fixture
def nb_data(hub_dataset: Any) -> None:
    import datasets

    rows = [
        {
            "Index": i,
            "Image": solid_image((0, 0, i * 30)),
            "Question": f"Question {i // 2}?",
            "Question_Type": kind,
        }
        for i, (kind, _) in enumerate(DOCS)
    ]
    features = {
        "Index": datasets.Value("int64"),
        "Image": datasets.Image(),
        "Question": datasets.Value("string"),
        "Question_Type": datasets.Value("string"),
    }
    hub_dataset("BaiqiL/NaturalBench-lmms-eval", "test", rows, features)


def test_run(nb_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(lambda task, doc: DOCS[int(doc["Index"])][1])
    scores = run_benchmark("naturalbench", lambda t, d: "", model=model)["results"]["naturalbench"]
    # group 0: doc 3 wrong -> Q: 1 of 2, I: 1 of 2, G: 0; group 1 all right
    assert scores["naturalbench_ACC,none"] == pytest.approx(7 / 8)
    assert scores["naturalbench_Q_ACC,none"] == pytest.approx(3 / 4)
    assert scores["naturalbench_I_ACC,none"] == pytest.approx(3 / 4)
    assert scores["naturalbench_G_ACC,none"] == pytest.approx(1 / 2)
    content = model.seen["naturalbench"][5][0]["content"]
    assert content[1]["text"] == "Question 2? Please output the letter corresponding to the correct option."
    assert content[0]["url"].getpixel((0, 0)) == (0, 0, 150)
