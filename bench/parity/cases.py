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


def _letter_grid_case(task: str, split: str, make_doc: Callable[[int, int], dict[str, Any]]) -> Case:
    """A case with every tricky answer for every gold letter; ``make_doc(i, gold_index)``."""
    docs, answers = [], []
    for i, (g, answer) in enumerate(_mcq_grid()):
        docs.append(make_doc(i, g))
        answers.append(answer)
    return {"task": task, "split": split, "docs": docs, "answers": answers}


OPTION_TEXTS = ["red", "blue", "green", "a cat"]


def realworldqa() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        gold = LETTERS[g] if i % 6 else OPTION_TEXTS[g]  # a few golds are free text
        return {"question": f"Q{i}?\nA. red\nB. blue\nC. green\nD. a cat", "answer": gold}

    return _letter_grid_case("realworldqa", "test", doc)


def videomme() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        return {
            "video_id": f"{i:03d}",
            "duration": ["short", "medium", "long"][i % 3],
            "domain": ["Knowledge", "Sports Competition"][i % 2],
            "sub_category": ["Humanity & History", "Football"][i % 2],
            "url": "x",
            "videoID": f"v{i}",
            "question_id": f"{i:03d}-1",
            "task_type": ["Counting Problem", "Object Recognition"][i % 2],
            "question": f"Q{i}?",
            "options": [f"{c}. {t}" for c, t in zip(LETTERS, OPTION_TEXTS)],
            "answer": LETTERS[g],
        }

    return _letter_grid_case("videomme", "test", doc)


def mlvu_dev() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        options = "\n".join(f"({c}) {t}" for c, t in zip(LETTERS, OPTION_TEXTS))
        return {
            "video_name": f"v{i}.mp4",
            "question": f"Q{i}?\n{options}",
            "answer": LETTERS[g],
            # every task type present: the published mean counts absent types as 0
            "task_type": ["plotQA", "needle", "ego", "count", "order", "anomaly_reco", "topic_reasoning"][
                i % 7
            ],
            "question_type": "x",
        }

    return _letter_grid_case("mlvu_dev", "test", doc)


def perceptiontest_val_mc() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        return {
            "video_name": f"v{i}",
            "question_id": f"q{i}",
            "question": f"Q{i}?",
            "options": OPTION_TEXTS[:3],
            "answer_id": str(g % 3),
            "area": ["memory", "physics"][i % 2],
            "reasoning": ["descriptive", "predictive"][i % 2],
            "tag": [],
        }

    case = _letter_grid_case("perceptiontest_val_mc", "validation", doc)
    case["docs"] = [d for d, g in zip(case["docs"], [g for g, _ in _mcq_grid()]) if g < 3]
    case["answers"] = [a for a, (g, _) in zip(case["answers"], _mcq_grid()) if g < 3]
    return case


def seedbench() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        return {
            "question": f"Q{i}?",
            "choice_a": "red",
            "choice_b": "blue",
            "choice_c": "green",
            "choice_d": "a cat",
            "answer": LETTERS[g],
            "data_type": ["image", "video"][i % 2],
            "question_id": str(i),
            "question_type_id": 1,
            "data_id": str(i),
            "segment": None,
        }

    return _letter_grid_case("seedbench", "test", doc)


def ai2d() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        return {"question": f"Q{i}?", "options": OPTION_TEXTS, "answer": str(g)}

    return _letter_grid_case("ai2d", "test", doc)


def scienceqa_img() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        return {"question": f"Q{i}?", "choices": OPTION_TEXTS, "answer": g, "hint": "", "image": None}

    return _letter_grid_case("scienceqa_img", "test", doc)


def mmbench_en_dev() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        return {
            "index": i,
            "question": f"Q{i}?",
            "hint": "nan",
            "A": "red",
            "B": "blue",
            "C": "green",
            "D": "a cat",
            "answer": LETTERS[g],
            "category": ["attribute_recognition", "ocr"][i % 2],
            "L2-category": ["finegrained_perception", "coarse_perception"][i % 2],
            "source": "x",
            "split": "dev",
            "comment": "nan",
        }

    return _letter_grid_case("mmbench_en_dev", "dev", doc)


def egoschema_subset() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        return {
            "video_idx": f"v{i}",
            "question_idx": str(i),
            "question": f"Q{i}?",
            "option": [f"{c}. {t}" for c, t in zip("ABCDE", [*OPTION_TEXTS, "a dog"])],
            "answer": str(g),
        }

    return _letter_grid_case("egoschema_subset", "test", doc)


def longvideobench_val_v() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        options = {f"option{k}": t for k, t in enumerate([*OPTION_TEXTS, "a dog"])}
        return {
            "video_id": f"v{i}",
            "video_path": f"v{i}.mp4",
            "subtitle_path": f"v{i}.json",
            "question": f"Q{i}?",
            "question_wo_referring_query": f"Q{i}?",
            "correct_choice": g,
            "duration_group": [15, 60, 600][i % 3],
            "question_category": ["S2E", "T3O"][i % 2],
            "duration": 10.0,
            "starting_timestamp_for_subtitles": 0,
            "view_count": 0,
            "topic_category": "x",
            "level": "x",
            "id": f"id{i}",
            **options,
        }

    return _letter_grid_case("longvideobench_val_v", "test", doc)


def nextqa_mc_test() -> Case:
    def doc(i: int, g: int) -> dict[str, Any]:
        options = {f"a{k}": t for k, t in enumerate([*OPTION_TEXTS, "a dog"])}
        return {
            "video": f"v{i}",
            "frame_count": 100,
            "width": 16,
            "height": 16,
            "question": f"Q{i}?",
            "answer": g,
            "qid": i,
            "type": ["CW", "TN", "DC"][i % 3],
            **options,
        }

    return _letter_grid_case("nextqa_mc_test", "test", doc)


CASES: dict[str, Callable[[], Case]] = {
    "mmmu_val": mmmu_val,
    "mmstar": mmstar,
    "mathvista_testmini_format": mathvista_testmini_format,
    "mmau_test_mini": mmau_test_mini,
    "mvbench_action_sequence": mvbench_action_sequence,
    "realworldqa": realworldqa,
    "videomme": videomme,
    "mlvu_dev": mlvu_dev,
    "perceptiontest_val_mc": perceptiontest_val_mc,
    "seedbench": seedbench,
    "ai2d": ai2d,
    "scienceqa_img": scienceqa_img,
    "mmbench_en_dev": mmbench_en_dev,
    "egoschema_subset": egoschema_subset,
    "longvideobench_val_v": longvideobench_val_v,
    "nextqa_mc_test": nextqa_mc_test,
}


def build(names: list[str] | None = None, seed: int = 0) -> list[Case]:
    cases = []
    for name in names or list(CASES):
        case = CASES[name]()
        case["seed"] = seed
        json.dumps(case)  # every case is JSON-ready
        cases.append(case)
    return cases
