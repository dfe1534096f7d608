"""Parity cases of the wave-4 video and audio benchmarks (same shape as ``cases.py``): synthetic
docs in the published schema (media columns left out) and scripted answers that probe the
normalisers, parsers and letter rules where they could differ."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Case = dict[str, Any]

EN = [
    ("Hello, World!", "hello world"),
    ("The colour of the sea is blue.", "The color of the see is blue"),
    ("He bought twenty-one apples.", "He bought 21 apples and pears"),
    ("Where is the station?", "<|en|>Where's station"),
    ("Mr. Smith's car (red) costs $5.", "mister smith car costs five dollars"),
]
CMN = [
    ("你好，世界！", "你好世界"),
    ("我有三个苹果。", "我有3个苹果"),
    ("這是一個測試", "这是一个测试"),
    ("我爱 Python 编程", "我爱pithon编程"),
    ("今天是2020年，温度25%。", "今天是二零二零年温度百分之二十五"),
]
YUE = [
    ("你好，世界！", "你好世界"),
    ("我有三個蘋果。", "我有3个苹果"),
    ("這是一個測試", "这是一个测试"),
    ("佢哋喺度食緊飯", "佢地喺度食紧饭"),
    ("今日係2020年", "今日系二零二零年"),
]
LANGUAGE = {
    "fleurs_en": ("English", EN),
    "fleurs_cmn_hans_cn": ("Mandarin Chinese", CMN),
    "fleurs_yue_hant_hk": ("Cantonese Chinese", YUE),
}


def _case(task: str, split: str, docs: list[dict[str, Any]], answers: list[str]) -> Case:
    return {"task": task, "split": split, "docs": docs, "answers": answers}


def _fleurs(task: str) -> Case:
    language, pairs = LANGUAGE[task]
    docs = [
        {"transcription": g, "language": language, "path": f"{i}.wav", "id": i}
        for i, (g, _) in enumerate(pairs)
    ]
    return _case(task, "test", docs, [p for _, p in pairs])


def gigaspeech_test() -> Case:
    pairs = [
        ("HELLO <COMMA> WORLD <PERIOD>", "Hello, world."),
        ("I'M GONNA GO <QUESTIONMARK>", "I am going to go"),
        ("THE COLOUR <MUSIC> IS RED", "the color is blue"),
    ]
    return _case("gigaspeech_test", "test", [{"gt": g} for g, _ in pairs], [p for _, p in pairs])


def tedlium_dev_test() -> Case:
    pairs = [("hello <unk> world", "hello world"), ("that 's it", "that was it"), ("i 'm here", "I am here.")]
    docs = [{"gt": g, "source": "talk", "task": "asr_en"} for g, _ in pairs]
    return _case("tedlium_dev_test", "val", docs, [p for _, p in pairs])


def covost2_en_zh_test() -> Case:
    pairs = [
        ("你好，世界。今天天气很好。", "你好世界。今天天气好。"),
        ("猫坐在垫子上。", "一只猫坐在垫子上"),
        ("他买了21个苹果（红色）。", "他买了二十一个苹果红色"),
        ("我非常喜欢绿茶。", "我非常喜欢红茶"),
    ]
    return _case("covost2_en_zh_test", "test", [{"translation": g} for g, _ in pairs], [p for _, p in pairs])


def covost2_zh_en_test() -> Case:
    pairs = [
        ("Hello world. The weather is nice today.", "Hello, world! Weather is nice today."),
        ("He bought twenty-one apples, don't you think?", "he bought 21 apples do not you think"),
        ("The cat sat on the mat.", "A cat sat on the mat."),
        ("The colour (red) is nice; it's mine.", "the color red is nice it is mine"),
    ]
    return _case("covost2_zh_en_test", "test", [{"gt": g} for g, _ in pairs], [p for _, p in pairs])


def vocalsound_test() -> Case:
    rows = [
        ("Laughter", "Laughter."),
        ("Throat clearing", "Someone is clearing their throat"),
        ("Sigh", "sighing"),
        ("Cough", "It is laughter, not a cough"),
        ("Sneeze", "a sniff"),
        ("Laughter", "laugh"),
        ("Sniff", "SNIFF"),
    ]
    docs = [{"answer": g, "age_group": "adult", "spk_id": f"m{i:04d}"} for i, (g, _) in enumerate(rows)]
    return _case("vocalsound_test", "test", docs, [a for _, a in rows])


CHARADES_ANSWERS = [
    "The event happens in the 0.0 - 6.9 seconds.",
    "2.5 - 8.1",
    "[2.5, 8.1]",
    "2.5-8.1s",
    "from 3 to 10 seconds",
    "The event happens in 1.2s - 7s",
    "none",
    "0:05 - 0:10",
    "10.0 - 5.0",
    "1.0 - 6.0 and 8 - 9",
    "The event happens in the 30.0 - 40.0 seconds.",
    "-1 - 5",
    "00:00:02.5 - 00:00:08",
]


def temporal_grounding_charades() -> Case:
    docs = [
        {
            "video": f"v{i}.mp4",
            "caption": f"a person opens a door {i}",
            "timestamp": [0.0, 6.9],
            "duration": 30.0,
        }
        for i in range(len(CHARADES_ANSWERS))
    ]
    return _case("temporal_grounding_charades", "test", docs, CHARADES_ANSWERS)


VSI = [
    ("object_counting", "4", "5"),
    ("object_counting", "10", "The answer is 7."),
    ("object_counting", "5", "6"),
    ("object_counting", "4", "four"),
    ("object_abs_distance", "2.5", "3.0"),
    ("object_abs_distance", "1.2", "about 1.1 m"),
    ("object_size_estimation", "120", "100"),
    ("room_size_estimation", "20.0", "abc"),
    ("room_size_estimation", "15.5", "15"),
    ("object_rel_distance", "A", "A."),
    ("object_rel_direction_easy", "B", "b"),
    ("object_rel_direction_easy", "B", "(B)"),
    ("object_rel_direction_medium", "C", "C"),
    ("object_rel_direction_hard", "A", "B"),
    ("route_planning", "D", "D. go left"),
    ("route_planning", "A", "Answer: A"),
    ("obj_appearance_order", "A", "(A)"),
    ("obj_appearance_order", "B", "B"),
]


def vsibench() -> Case:
    docs = [
        {
            "id": i,
            "dataset": "scannet",
            "scene_name": f"scene{i}",
            "question": f"Q{i}?",
            "question_type": qt,
            "options": None if g[0].isdigit() else ["A. w", "B. x", "C. y", "D. z"],
            "ground_truth": g,
        }
        for i, (qt, g, _) in enumerate(VSI)
    ]
    return _case("vsibench", "test", docs, [a for *_, a in VSI])


LETTER_ANSWERS = [
    ("B", "B"),
    ("(B) dog", "B"),
    ("b", "B"),
    ("A and B", "A"),
    ("Definitely C", "C"),
    ("Answer: D", "A"),
    ("The answer is B", "B"),
    ("", "C"),
    ("xB", "B"),
    ("DNA is A", "A"),
]


def lvbench() -> Case:
    docs = [
        {"video_path": "v.mp4", "question": f"Q{i}?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": g}
        for i, (_, g) in enumerate(LETTER_ANSWERS)
    ]
    return _case("lvbench", "train", docs, [a for a, _ in LETTER_ANSWERS])


MMMU_STYLE = [
    ("B", "B"),
    ("(B) dog", "B"),
    ("The correct option is (C).", "C"),
    ("Option B", "B"),
    ("B) right", "B"),
    ("I think A", "D"),
    ("", "A"),
    ("b", "B"),
    ("Answer: C", "C"),
    ("Bananas", "A"),
]


def worldsense() -> Case:
    docs = [
        {
            "index": i,
            "video_path": "v.mp4",
            "question": f"Q{i}?",
            "candidates": ["A. a dog", "B. a man", "C. a bird", "D. a car"],
            "answer": g,
            "task_type": "t",
            "task_domain": "d",
            "duration": "<1min",
            "audio_class": ["speech"],
        }
        for i, (_, g) in enumerate(MMMU_STYLE)
    ]
    return _case("worldsense", "test", docs, [a for a, _ in MMMU_STYLE])


def tomato() -> Case:
    docs = [
        {
            "id": str(i),
            "video_path": "v.mp4",
            "question": f"Q{i}?",
            "options": ["a dog", "a man", "a bird", "a car"],
            "answer": "ABCD".index(g),
            "reason_type": "count",
            "demonstration_type": "human",
        }
        for i, (_, g) in enumerate(MMMU_STYLE)
    ]
    return _case("tomato", "test", docs, [a for a, _ in MMMU_STYLE])


def video_mmmu_adaptation() -> Case:
    rows = [
        ("multiple-choice", "B", "(B) Baroque"),
        ("multiple-choice", "A", "C"),
        ("multiple-choice", "B", "B"),
        ("open", "42", "The answer is 42."),
        ("open", "7", "It is 8"),
        ("multiple-choice", "C", "Pop art is the style of this work, clearly"),
    ]
    docs = [
        {
            "id": f"Adaptation_Art_{i}",
            "question": f"Q{i}?",
            "options": ["Cubism", "Baroque", "Pop art"] if qt == "multiple-choice" else [],
            "question_type": qt,
            "answer": g,
        }
        for i, (qt, g, _) in enumerate(rows)
    ]
    return _case("video_mmmu_adaptation", "test", docs, [a for *_, a in rows])


MC_Q = "Which way?\nA. left\nB. right\nC. up"
TEMPCOMPASS = {
    "tempcompass_multi_choice": [
        (MC_Q, "B. right", a, d)
        for a, d in [
            ("B", "speed"),
            ("(B)", "speed"),
            ("B)", "direction"),
            ("Option B", "direction"),
            ("B. right", "order"),
            ("b. right", "action"),
            ("A", "attribute_change"),
        ]
    ],
    "tempcompass_yes_no": [
        ("Is it?", g, a, d)
        for g, a, d in [
            ("yes", "Yes.", "speed"),
            ("yes", "Yes and no", "speed"),
            ("no", "Nope", "order"),
            ("no", "not sure", "order"),
            ("yes", "I think so", "action"),
            ("no", "YES", "direction"),
        ]
    ],
    "tempcompass_caption_matching": [
        (
            "Q?\nCaption A: a car moves left\nCaption B: a car moves right",
            "Caption B: a car moves right",
            a,
            d,
        )
        for a, d in [
            ("Caption B", "speed"),
            ("B", "speed"),
            ("(B)", "order"),
            ("a car moves right", "order"),
            ("caption b", "direction"),
            ("Caption A: a car moves left", "direction"),
        ]
    ],
}


def _tempcompass(task: str) -> Case:
    rows = TEMPCOMPASS[task]
    docs = [
        {"video_id": f"v{i}", "question": q, "answer": g, "dim": d} for i, (q, g, _, d) in enumerate(rows)
    ]
    return _case(task, "test", docs, [a for _, _, a, _ in rows])


def mmvu_val() -> Case:
    choices = {"A": "cat", "B": "dog", "C": "bird", "D": "", "E": ""}
    rows = [
        ("multiple-choice", "B", a)
        for a in ["B", "The answer is (A)", "B and A", "I pick b", "hot dog", "cat", "b.", "A dog", ""]
    ]
    rows += [
        ("open-ended", g, a)
        for g, a in [
            ("Paris", "The capital is Paris."),
            ("3.5", "3.50"),
            ("Paris", "Lyon"),
            ("42", "forty two"),
        ]
    ]
    docs = [
        {
            "id": str(i),
            "video_path": f"videos/{'Biology' if i % 2 else 'Art'}/{i}.mp4",
            "question": f"Q{i}?",
            "question_type": qt,
            "choices": choices if qt == "multiple-choice" else {},
            "answer": g,
        }
        for i, (qt, g, _) in enumerate(rows)
    ]
    return _case("mmvu_val", "validation", docs, [a for *_, a in rows])


CASES: dict[str, Callable[[], Case]] = {
    "fleurs_en": lambda: _fleurs("fleurs_en"),
    "fleurs_cmn_hans_cn": lambda: _fleurs("fleurs_cmn_hans_cn"),
    "fleurs_yue_hant_hk": lambda: _fleurs("fleurs_yue_hant_hk"),
    "gigaspeech_test": gigaspeech_test,
    "tedlium_dev_test": tedlium_dev_test,
    "covost2_en_zh_test": covost2_en_zh_test,
    "covost2_zh_en_test": covost2_zh_en_test,
    "vocalsound_test": vocalsound_test,
    "temporal_grounding_charades": temporal_grounding_charades,
    "vsibench": vsibench,
    "lvbench": lvbench,
    "worldsense": worldsense,
    "tomato": tomato,
    "video_mmmu_adaptation": video_mmmu_adaptation,
    "tempcompass_multi_choice": lambda: _tempcompass("tempcompass_multi_choice"),
    "tempcompass_yes_no": lambda: _tempcompass("tempcompass_yes_no"),
    "tempcompass_caption_matching": lambda: _tempcompass("tempcompass_caption_matching"),
    "mmvu_val": mmvu_val,
}


def build(names: list[str] | None = None, seed: int = 0) -> list[Case]:
    return [{**CASES[name](), "seed": seed} for name in names or list(CASES)]
