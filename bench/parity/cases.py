"""Synthetic documents and scripted answers for the published-parity measurement.

Each case is ``{"task", "split", "docs", "answers", "seed"}``: JSON-ready docs in the published
schema (media columns left out: scoring does not read them) and one answer per doc. The answers
are chosen to probe where extraction rules differ: lowercase letters, a sentence that starts with
the article "A", "the answer is B, not C", empty answers, several letters, option texts, numbers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Case = dict[str, Any]
LETTERS = "ABCD"


def mcq_answers(gold: str, wrong: str) -> list[str]:
    """Tricky answers for a question whose right letter is ``gold`` (``wrong`` is another one)."""
    return [
        gold,
        gold.lower(),
        f"({gold})",
        f"{gold}. because",
        f"Answer: {gold}",
        f"The answer is {gold}, not {wrong}",
        "A cat sits on the mat.",
        "",
        f"{gold} {wrong}",
        f"{wrong} or {gold}",
        f"**{gold}**",
        "I cannot tell from the image.",
        wrong,
        f"{gold}\n",
    ]


def _mcq_grid(n_options: int = 4) -> list[tuple[int, str]]:
    """(gold index, answer) pairs: every tricky answer for every gold letter."""
    letters = LETTERS[:n_options]
    out = []
    for g, gold in enumerate(letters):
        wrong = letters[(g + 1) % n_options]
        out.extend((g, a) for a in mcq_answers(gold, wrong))
    return out


def mmmu_val() -> Case:
    subjects = ["Art", "Biology", "Economics", "Math", "Physics", "History"]
    docs, answers = [], []
    for i, (g, answer) in enumerate(_mcq_grid()):
        options = [f"option {c} text" for c in "wxyz"]
        docs.append(
            {
                "id": f"validation_{subjects[i % len(subjects)]}_{i + 1}",
                "question": f"Question {i} <image 1>?",
                "options": str(options),
                "answer": LETTERS[g],
                "question_type": "multiple-choice",
                "explanation": "",
                "img_type": "['Diagrams']",
                "topic_difficulty": "Easy",
                "subfield": "x",
            }
        )
        answers.append(answer if i % 7 else options[g])
    opens = [("42", "42"), ("3.5", "The value is 3.5"), ("['7', '7.0']", "7"), ("cat", "Cat"), ("12", "")]
    for j, (gold, answer) in enumerate(opens):
        docs.append(
            {
                "id": f"validation_Math_{100 + j}",
                "question": f"Open {j} <image 1>?",
                "options": "[]",
                "answer": gold,
                "question_type": "open",
                "explanation": "",
                "img_type": "['Diagrams']",
                "topic_difficulty": "Easy",
                "subfield": "x",
            }
        )
        answers.append(answer)
    return {"task": "mmmu_val", "split": "validation", "docs": docs, "answers": answers}


def mmstar() -> Case:
    cats = [
        ("coarse perception", "image scene"),
        ("math", "geometry"),
        ("math", "numeric"),
        ("logical reasoning", "code"),
    ]
    docs, answers = [], []
    for i, (g, answer) in enumerate(_mcq_grid()):
        category, l2 = cats[i % len(cats)]
        docs.append(
            {
                "index": i,
                "question": "What is shown?\nOptions: A: red, B: blue, C: green, D: cat",
                "answer": LETTERS[g],
                "category": category,
                "l2_category": l2,
                "meta_info": {"source": "x", "split": "val", "image_path": "x.png"},
            }
        )
        answers.append(answer)
    return {"task": "mmstar", "split": "val", "docs": docs, "answers": answers}


def mmau_test_mini() -> Case:
    docs, answers = [], []
    for i, (g, answer) in enumerate(_mcq_grid()):
        options = ["Dog barking", "Car horn", "Piano", "Rain"]
        gold = options[g]
        if i % 5 == 1:
            gold = gold.upper() + " "  # published golds compare after strip().lower()
        docs.append(
            {
                "id": f"q{i}",
                "question": "Which sound is heard?",
                "choices": json.dumps(options),
                "answer": gold,
                "task": ["sound", "music", "speech"][i % 3],
                "dataset": "x",
                "category": "x",
                "sub-category": "x",
                "difficulty": "easy",
            }
        )
        answers.append(answer if i % 9 else options[g])
    return {"task": "mmau_test_mini", "split": "test_mini", "docs": docs, "answers": answers}


def mvbench_action_sequence() -> Case:
    docs, answers = [], []
    candidates = ["Opened the door.", "Took the cup.", "Sat on the bed.", "Threw the bag."]
    for i, (g, answer) in enumerate(_mcq_grid()):
        docs.append(
            {
                "video": f"clip{i}.mp4",
                "question": "What did the person do first?",
                "candidates": candidates,
                "answer": candidates[g],
            }
        )
        answers.append(answer)
    return {"task": "mvbench_action_sequence", "split": "train", "docs": docs, "answers": answers}


def mathvista_testmini_format() -> Case:
    rows: list[tuple[dict[str, Any], str]] = []
    mc = {"choices": ["135°", "145°", "155°", "165°"], "question_type": "multi_choice", "answer_type": "text"}
    for g, answer in _mcq_grid():
        rows.append(({**mc, "answer": mc["choices"][g], "precision": None}, answer))
    ints = [("7", "7"), ("7", "The answer is 7"), ("12", "12.0"), ("3", ""), ("5", "five")]
    for gold, answer in ints:
        rows.append(
            (
                {
                    "choices": None,
                    "question_type": "free_form",
                    "answer_type": "integer",
                    "answer": gold,
                    "precision": None,
                },
                answer,
            )
        )
    floats = [("1.5", "1.5", 1.0), ("2.25", "2.25", 2.0), ("0.3", "0.30", 1.0)]
    for gold, answer, precision in floats:
        rows.append(
            (
                {
                    "choices": None,
                    "question_type": "free_form",
                    "answer_type": "float",
                    "answer": gold,
                    "precision": precision,
                },
                answer,
            )
        )
    docs, answers = [], []
    for i, (fields, answer) in enumerate(rows):
        doc = {
            "pid": str(i + 1),
            "question": f"Question {i}?",
            "image": f"images/{i + 1}.jpg",
            "unit": None,
            "query": f"Question {i}?",
            "metadata": {
                "split": "testmini",
                "source": "x",
                "task": ["figure question answering", "math word problem"][i % 2],
                "context": "x",
                "category": "math-targeted-vqa",
                "grade": "x",
                "language": "english",
                "skills": ["arithmetic reasoning"],
                "img_width": 16,
                "img_height": 16,
            },
            **fields,
        }
        docs.append(doc)
        answers.append(answer)
    return {"task": "mathvista_testmini_format", "split": "testmini", "docs": docs, "answers": answers}


CASES: dict[str, Callable[[], Case]] = {
    "mmmu_val": mmmu_val,
    "mmstar": mmstar,
    "mathvista_testmini_format": mathvista_testmini_format,
    "mmau_test_mini": mmau_test_mini,
    "mvbench_action_sequence": mvbench_action_sequence,
}


def build(names: list[str] | None = None, seed: int = 0) -> list[Case]:
    cases = []
    for name in names or list(CASES):
        case = CASES[name]()
        case["seed"] = seed
        json.dumps(case)  # every case is JSON-ready
        cases.append(case)
    return cases
