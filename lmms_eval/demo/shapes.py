"""A deterministic synthetic visual benchmark: coloured shapes drawn by code.

A document is a small JSON-able *spec*: the question, the answer, its ``category`` (the skill) and
the exact geometry of every object (``shape``, ``colour``, centre ``x``/``y`` and half-extent
``size`` in pixels). :func:`render` draws the spec with PIL (filled shapes with a 2-pixel black
outline on a grey background), without antialiasing and without any randomness, so one spec
always gives the same pixels and no image file needs to be stored.

Four skills, with the chance level of a uniform guess:

============  ==========================================  ============================  ======
category      question                                    answers                       chance
============  ==========================================  ============================  ======
``colour``    What colour is the shape?                   8 colour names                1/8
``shape``     What shape is it?                           circle, square, triangle      1/3
``count``     How many shapes are there?                  1, 2, 3, 4                    1/4
``position``  Which corner of the image is the shape in?  top left, ..., bottom right   1/4
============  ==========================================  ============================  ======

Each question is followed by a short answer-format instruction (see ``QUESTIONS``). Sizes: colour
and shape objects have a half-extent of 10-20 px, position objects 8-15 px (at least 4 px away
from the centre lines), count objects 6-11 px and at least 3 px apart.

The bundled benchmark (``lmms_eval/tasks/demo_shapes/demo_shapes.jsonl``) is
``generate_docs(50, BENCHMARK_SEED)``; training data for the demo model comes from other seeds and
never contains a benchmark spec (:func:`training_docs`). To regenerate the file after changing the
generator (which changes the benchmark: bump the task version), run
``python -c "from lmms_eval.demo.shapes import *; write_jsonl(benchmark_docs(), BENCHMARK_FILE)"``.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from PIL import Image, ImageDraw

IMAGE_SIZE = 112
BACKGROUND = (128, 128, 128)
OUTLINE = (0, 0, 0)  # every shape gets a dark outline, so its contour looks the same whatever its fill
OUTLINE_WIDTH = 2
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (230, 25, 25),
    "green": (30, 170, 40),
    "blue": (30, 60, 230),
    "yellow": (240, 220, 30),
    "purple": (140, 40, 180),
    "orange": (250, 140, 20),
    "black": (15, 15, 15),
    "white": (250, 250, 250),
}
SHAPES = ("circle", "square", "triangle")
COUNTS = ("1", "2", "3", "4")
QUADRANTS = ("top left", "top right", "bottom left", "bottom right")
SKILLS = ("colour", "shape", "count", "position")
QUESTIONS: dict[str, str] = {
    "colour": "What colour is the shape? Answer with one word.",
    "shape": "What shape is it? Answer with one word.",
    "count": "How many shapes are there? Answer with a number.",
    "position": "Which corner of the image is the shape in? "
    "Answer top left, top right, bottom left or bottom right.",
}
ANSWERS: dict[str, tuple[str, ...]] = {
    "colour": tuple(COLOURS),
    "shape": SHAPES,
    "count": COUNTS,
    "position": QUADRANTS,
}
CHANCE: dict[str, float] = {skill: 1.0 / len(options) for skill, options in ANSWERS.items()}

BENCHMARK_SEED = 20240501
BENCHMARK_PER_SKILL = 50
BENCHMARK_FILE = Path(__file__).resolve().parent.parent / "tasks" / "demo_shapes" / "demo_shapes.jsonl"

# geometry limits (pixels); every object stays GAP pixels away from the border and from other objects
_GAP = 3
_SINGLE_SIZE = (10, 20)
_POSITION_SIZE = (8, 15)
_COUNT_SIZE = (6, 11)
_CENTRE_MARGIN = 4  # a position object keeps this distance from the image's centre lines


class ShapeObject(TypedDict):
    shape: str
    colour: str
    x: int
    y: int
    size: int


class ShapeDoc(TypedDict):
    id: int
    category: str
    question: str
    answer: str
    objects: list[ShapeObject]


# ------------------------------------------------------------------------------------------------
# rendering


def render(spec: Mapping[str, Any]) -> Image.Image:
    """Draw ``spec["objects"]`` on a ``IMAGE_SIZE`` x ``IMAGE_SIZE`` grey RGB image."""
    image = Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for obj in spec["objects"]:
        x, y, s = int(obj["x"]), int(obj["y"]), int(obj["size"])
        fill = COLOURS[obj["colour"]]
        if obj["shape"] == "circle":
            draw.ellipse((x - s, y - s, x + s, y + s), fill=fill, outline=OUTLINE, width=OUTLINE_WIDTH)
        elif obj["shape"] == "square":
            draw.rectangle((x - s, y - s, x + s, y + s), fill=fill, outline=OUTLINE, width=OUTLINE_WIDTH)
        elif obj["shape"] == "triangle":
            corners = [(x, y - s), (x - s, y + s), (x + s, y + s)]
            draw.polygon(corners, fill=fill, outline=OUTLINE, width=OUTLINE_WIDTH)
        else:
            raise ValueError(f"unknown shape {obj['shape']!r}; expected one of {', '.join(SHAPES)}")
    return image


def quadrant_of(x: int, y: int) -> str:
    """The quadrant name of pixel ``(x, y)`` (the centre lines belong to no quadrant)."""
    half = IMAGE_SIZE / 2
    vertical = "top" if y < half else "bottom"
    horizontal = "left" if x < half else "right"
    return f"{vertical} {horizontal}"


# ------------------------------------------------------------------------------------------------
# spec generation


def _object(rng: random.Random, size: int, x: int, y: int, **fixed: str) -> ShapeObject:
    return ShapeObject(
        shape=fixed.get("shape") or rng.choice(SHAPES),
        colour=fixed.get("colour") or rng.choice(tuple(COLOURS)),
        x=x,
        y=y,
        size=size,
    )


def _free_object(rng: random.Random, size_range: tuple[int, int], **fixed: str) -> ShapeObject:
    size = rng.randint(*size_range)
    low, high = size + _GAP, IMAGE_SIZE - 1 - size - _GAP
    return _object(rng, size, rng.randint(low, high), rng.randint(low, high), **fixed)


def _quadrant_object(rng: random.Random, quadrant: str) -> ShapeObject:
    size = rng.randint(*_POSITION_SIZE)
    half = IMAGE_SIZE // 2
    near, far = size + _GAP, half - size - _CENTRE_MARGIN - 1
    vertical, horizontal = quadrant.split()
    x = rng.randint(near, far) if horizontal == "left" else IMAGE_SIZE - 1 - rng.randint(near, far)
    y = rng.randint(near, far) if vertical == "top" else IMAGE_SIZE - 1 - rng.randint(near, far)
    return _object(rng, size, x, y)


def _apart(a: ShapeObject, b: ShapeObject) -> bool:
    """Whether the bounding boxes of ``a`` and ``b`` are at least ``_GAP`` pixels apart."""
    reach = a["size"] + b["size"] + _GAP
    return abs(a["x"] - b["x"]) > reach or abs(a["y"] - b["y"]) > reach


def _separate_objects(rng: random.Random, count: int) -> list[ShapeObject]:
    while True:  # rejection sampling; 4 objects of size <= 11 fit easily, so this ends quickly
        objects: list[ShapeObject] = []
        for _ in range(200):
            candidate = _free_object(rng, _COUNT_SIZE)
            if all(_apart(candidate, other) for other in objects):
                objects.append(candidate)
                if len(objects) == count:
                    return objects


def make_doc(skill: str, answer: str, rng: random.Random, doc_id: int = 0) -> ShapeDoc:
    """One document of ``skill`` whose correct answer is ``answer``; geometry drawn from ``rng``."""
    if skill not in ANSWERS:
        raise ValueError(f"unknown skill {skill!r}; expected one of {', '.join(SKILLS)}")
    if answer not in ANSWERS[skill]:
        raise ValueError(f"{answer!r} is not an answer of skill {skill!r}")
    if skill == "colour":
        objects = [_free_object(rng, _SINGLE_SIZE, colour=answer)]
    elif skill == "shape":
        objects = [_free_object(rng, _SINGLE_SIZE, shape=answer)]
    elif skill == "count":
        objects = _separate_objects(rng, int(answer))
    else:
        objects = [_quadrant_object(rng, answer)]
    return ShapeDoc(id=doc_id, category=skill, question=QUESTIONS[skill], answer=answer, objects=objects)


def generate_docs(
    per_skill: int, seed: int, skills: Sequence[str] = SKILLS, start_id: int = 0
) -> list[ShapeDoc]:
    """``per_skill`` documents of each skill with answers balanced within each skill.

    Within a skill the answers cycle through all options before being shuffled, so every answer is
    (as nearly as possible) equally frequent. The same arguments always give the same documents.
    """
    rng = random.Random(seed)
    docs: list[ShapeDoc] = []
    for skill in skills:
        options = ANSWERS[skill]
        answers = [options[i % len(options)] for i in range(per_skill)]
        rng.shuffle(answers)
        for answer in answers:
            docs.append(make_doc(skill, answer, rng, start_id + len(docs)))
    return docs


def benchmark_docs() -> list[ShapeDoc]:
    """The bundled benchmark, regenerated: ``generate_docs(BENCHMARK_PER_SKILL, BENCHMARK_SEED)``."""
    return generate_docs(BENCHMARK_PER_SKILL, BENCHMARK_SEED)


def spec_key(doc: Mapping[str, Any]) -> str:
    """A canonical string of what a document shows and asks (its id left out)."""
    return json.dumps([doc["category"], doc["objects"]], sort_keys=True)


def training_docs(
    seed: int,
    exclude: Iterable[Mapping[str, Any]] = (),
    skill_weights: Mapping[str, float] | None = None,
) -> Iterator[ShapeDoc]:
    """An endless, seeded stream of random documents (uniform answer within each skill).

    Skills are drawn with ``skill_weights`` (uniform by default). Documents whose
    :func:`spec_key` matches one in ``exclude`` (pass the benchmark) are skipped.
    """
    rng = random.Random(seed)
    banned = {spec_key(doc) for doc in exclude}
    weights = skill_weights or dict.fromkeys(SKILLS, 1.0)
    unknown = set(weights) - set(SKILLS)
    if unknown:
        raise ValueError(f"unknown skills {sorted(unknown)}; expected some of {', '.join(SKILLS)}")
    names, values = list(weights), [float(weights[name]) for name in weights]
    doc_id = 0
    while True:
        skill = rng.choices(names, values)[0]
        doc = make_doc(skill, rng.choice(ANSWERS[skill]), rng, doc_id)
        if spec_key(doc) in banned:
            continue
        doc_id += 1
        yield doc


# ------------------------------------------------------------------------------------------------
# files


def write_jsonl(docs: Iterable[Mapping[str, Any]], path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps(doc, separators=(", ", ": ")) + "\n")


def read_jsonl(path: str | Path = BENCHMARK_FILE) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# ------------------------------------------------------------------------------------------------
# scoring

_NUMBER_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
                 "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10"}  # fmt: skip
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}]")


def normalise_answer(text: str) -> str:
    """Lowercase, punctuation to spaces, single spaces, number words (zero to ten) as digits."""
    words = _PUNCTUATION.sub(" ", str(text).lower()).split()
    return " ".join(_NUMBER_WORDS.get(word, word) for word in words)


def score(prediction: str, answer: str) -> float:
    """1.0 when the normalised prediction equals the normalised answer, else 0.0."""
    return 1.0 if normalise_answer(prediction) == normalise_answer(answer) else 0.0


__all__ = [
    "ANSWERS",
    "BACKGROUND",
    "BENCHMARK_FILE",
    "BENCHMARK_PER_SKILL",
    "BENCHMARK_SEED",
    "CHANCE",
    "COLOURS",
    "COUNTS",
    "IMAGE_SIZE",
    "OUTLINE",
    "OUTLINE_WIDTH",
    "QUADRANTS",
    "QUESTIONS",
    "SHAPES",
    "SKILLS",
    "ShapeDoc",
    "ShapeObject",
    "benchmark_docs",
    "generate_docs",
    "make_doc",
    "normalise_answer",
    "quadrant_of",
    "read_jsonl",
    "render",
    "score",
    "spec_key",
    "training_docs",
    "write_jsonl",
]
