"""The bundled ``demo_shapes`` benchmark: generator, pixels vs answers, task scoring, demo model."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lmms_eval
from lmms_eval.demo import TINY_VLM_DIR
from lmms_eval.demo.shapes import (
    ANSWERS,
    BACKGROUND,
    CHANCE,
    COLOURS,
    IMAGE_SIZE,
    OUTLINE,
    SKILLS,
    benchmark_docs,
    generate_docs,
    make_doc,
    normalise_answer,
    quadrant_of,
    read_jsonl,
    render,
    score,
    spec_key,
    training_docs,
)
from lmms_eval.tasks import TaskManager

DOCS = read_jsonl()
METRICS = ["accuracy", *(f"{skill}_accuracy" for skill in SKILLS)]


def pixel_hash(doc: Mapping[str, Any]) -> str:
    return hashlib.sha256(render(doc).tobytes()).hexdigest()


def blobs(doc: Mapping[str, Any]) -> list[list[tuple[int, int]]]:
    """8-connected components of the non-background pixels, as lists of (x, y)."""
    pixels = np.asarray(render(doc))
    foreground = np.any(pixels != np.array(BACKGROUND, dtype=np.uint8), axis=2)
    seen = np.zeros_like(foreground)
    components: list[list[tuple[int, int]]] = []
    for y0, x0 in zip(*np.nonzero(foreground)):
        if seen[y0, x0]:
            continue
        seen[y0, x0] = True
        stack, component = [(int(x0), int(y0))], []
        while stack:
            x, y = stack.pop()
            component.append((x, y))
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    nx, ny = x + dx, y + dy
                    if (
                        0 <= nx < IMAGE_SIZE
                        and 0 <= ny < IMAGE_SIZE
                        and foreground[ny, nx]
                        and not seen[ny, nx]
                    ):
                        seen[ny, nx] = True
                        stack.append((nx, ny))
        components.append(component)
    return components


def fill_ratio(component: list[tuple[int, int]]) -> float:
    xs, ys = [x for x, _ in component], [y for _, y in component]
    return len(component) / ((max(xs) - min(xs) + 1) * (max(ys) - min(ys) + 1))


# ------------------------------------------------------------------------------------------------
# generator


def test_rendering_is_deterministic_across_calls_and_processes() -> None:
    sample = DOCS[::37]
    first = [pixel_hash(doc) for doc in sample]
    assert [pixel_hash(doc) for doc in reversed(sample)] == first[::-1]
    assert len(set(first)) == len(first)  # different specs, different pixels
    code = (
        "import hashlib, json, sys\n"
        "from lmms_eval.demo.shapes import render\n"
        "docs = json.loads(sys.stdin.read())\n"
        "print(json.dumps([hashlib.sha256(render(d).tobytes()).hexdigest() for d in docs]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(sample), capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == first
    image = render(DOCS[0])
    assert image.mode == "RGB" and image.size == (IMAGE_SIZE, IMAGE_SIZE) == (112, 112)


def test_squares_have_exact_pixel_counts() -> None:
    doc = {"objects": [{"shape": "square", "colour": "red", "x": 30, "y": 40, "size": 5}]}
    pixels = np.asarray(render(doc))
    red = np.all(pixels == np.array(COLOURS["red"], dtype=np.uint8), axis=2)
    outline = np.all(pixels == np.array(OUTLINE, dtype=np.uint8), axis=2)
    assert outline.sum() == 11 * 11 - 7 * 7 and red.sum() == 7 * 7  # a 2-pixel outline around the fill
    assert outline[35:46, 25:36].sum() + red[35:46, 25:36].sum() == 11 * 11
    assert red[37:44, 27:34].all()


def test_bundled_documents_are_the_generator_output() -> None:
    assert json.loads(json.dumps(benchmark_docs())) == DOCS
    assert benchmark_docs() == benchmark_docs()
    assert generate_docs(5, 1) != generate_docs(5, 2)


def test_benchmark_is_balanced() -> None:
    assert [doc["id"] for doc in DOCS] == list(range(200))
    by_skill = Counter(doc["category"] for doc in DOCS)
    assert by_skill == dict.fromkeys(SKILLS, 50)
    for skill in SKILLS:
        counts = Counter(doc["answer"] for doc in DOCS if doc["category"] == skill)
        assert set(counts) == set(ANSWERS[skill])
        assert max(counts.values()) - min(counts.values()) <= 1
    assert CHANCE == {"colour": 1 / 8, "shape": 1 / 3, "count": 1 / 4, "position": 1 / 4}


@pytest.mark.parametrize("skill", SKILLS)
def test_answers_agree_with_the_pixels(skill: str) -> None:
    for doc in (d for d in DOCS if d["category"] == skill):
        components = blobs(doc)
        if skill == "count":
            assert len(components) == int(doc["answer"]), doc
            continue
        assert len(components) == 1, doc
        component = components[0]
        if skill == "colour":  # the fill colour plus the dark outline; the fill dominates
            pixels = np.asarray(render(doc)).reshape(-1, 3)
            colours = Counter(tuple(int(v) for v in p) for p in pixels)
            del colours[BACKGROUND]
            assert set(colours) == {COLOURS[doc["answer"]], OUTLINE}, doc
            assert colours.most_common(1)[0][0] == COLOURS[doc["answer"]], doc
        elif skill == "shape":
            ratio = fill_ratio(component)
            guess = "square" if ratio > 0.95 else "circle" if ratio > 0.7 else "triangle"
            assert guess == doc["answer"], (doc, ratio)
        else:
            assert {quadrant_of(x, y) for x, y in component} == {doc["answer"]}, doc
            assert all(abs(x - IMAGE_SIZE / 2) >= 4 and abs(y - IMAGE_SIZE / 2) >= 4 for x, y in component)


def test_make_doc_rejects_unknown_skills_and_answers() -> None:
    import random

    with pytest.raises(ValueError, match="unknown skill"):
        make_doc("size", "big", random.Random(0))
    with pytest.raises(ValueError, match="not an answer"):
        make_doc("colour", "grey", random.Random(0))
    with pytest.raises(ValueError, match="unknown shape"):
        render({"objects": [{"shape": "star", "colour": "red", "x": 50, "y": 50, "size": 5}]})


def test_training_stream_is_seeded_and_never_yields_benchmark_specs() -> None:
    first = [doc for _, doc in zip(range(300), training_docs(7, exclude=DOCS))]
    again = [doc for _, doc in zip(range(300), training_docs(7, exclude=DOCS))]
    assert first == again
    assert {doc["category"] for doc in first} == set(SKILLS)
    banned = {spec_key(doc) for doc in DOCS}
    assert not any(spec_key(doc) in banned for doc in first)
    # an excluded spec is skipped: ban the first document of a stream and it disappears
    stream = training_docs(3)
    head = [next(stream) for _ in range(3)]
    filtered = training_docs(3, exclude=head[:1])
    assert spec_key(next(filtered)) == spec_key(head[1])
    # skill weights steer the mix
    only_counts = [doc for _, doc in zip(range(50), training_docs(3, skill_weights={"count": 1.0}))]
    assert {doc["category"] for doc in only_counts} == {"count"}
    mix = Counter(
        doc["category"]
        for _, doc in zip(range(2000), training_docs(3, skill_weights={"shape": 3, "colour": 1}))
    )
    assert set(mix) == {"shape", "colour"} and 2.5 < mix["shape"] / mix["colour"] < 3.5
    with pytest.raises(ValueError, match="unknown skills"):
        next(training_docs(3, skill_weights={"size": 1.0}))


@pytest.mark.parametrize(
    ("prediction", "answer", "expected"),
    [
        ("Red.", "red", 1.0),
        ("  RED  ", "red", 1.0),
        ("three", "3", 1.0),
        ("Three.", "3", 1.0),
        ("top-left", "top left", 1.0),
        ("Bottom  right!", "bottom right", 1.0),
        ("red square", "red", 0.0),
        ("4", "3", 0.0),
        ("", "red", 0.0),
    ],
)
def test_normalised_exact_match(prediction: str, answer: str, expected: float) -> None:
    assert score(prediction, answer) == expected
    assert normalise_answer("The 2 Shapes, ten!") == "the 2 shapes 10"


# ------------------------------------------------------------------------------------------------
# the task through the framework


def test_task_is_bundled_and_draws_the_images() -> None:
    manager = TaskManager()
    assert "demo_shapes" in manager.all_tasks
    task: Any = manager.load_task_or_group(["demo_shapes"])["demo_shapes"]
    docs = task.eval_docs
    assert len(docs) == 200
    visuals = task.doc_to_visual(docs[123])
    assert len(visuals) == 1
    assert visuals[0].tobytes() == render(DOCS[123]).tobytes()
    assert task.doc_to_text(docs[0]) == DOCS[0]["question"]
    assert task.doc_to_target(docs[0]) == DOCS[0]["answer"]
    parts = task.build_messages(docs[0])[0]["content"]
    assert [part["type"] for part in parts] == ["image", "text"]


def evaluate(model_args: str, **kwargs: Any) -> dict[str, Any]:
    results = lmms_eval.simple_evaluate(
        model="dummy",
        model_args=model_args,
        tasks=["demo_shapes"],
        task_manager=TaskManager(),
        show_progress=False,
        **kwargs,
    )
    return results["results"]["demo_shapes"]


def test_oracle_scores_one_everywhere_and_a_fixed_wrong_answer_zero() -> None:
    right = evaluate("answer_field=answer")
    wrong = evaluate("response=purple triangle")
    for metric in METRICS:
        assert right[f"{metric},none"] == 1.0
        assert wrong[f"{metric},none"] == 0.0
        for result in (right, wrong):
            assert result[f"{metric}_stderr,none"] == 0.0
            assert f"{metric}_ci_lower,none" in result and f"{metric}_ci_upper,none" in result
    assert right["samples"] == 200


def test_per_category_scores_and_error_bars(tmp_path: Path) -> None:
    # answer correctly (with varied surface forms) on a known subset, wrongly elsewhere
    records, scores = [], {skill: [] for skill in SKILLS}
    for doc in DOCS:
        correct = doc["id"] % 3 != 0 if doc["category"] != "position" else doc["id"] % 5 == 0
        answer = doc["answer"]
        if doc["category"] == "count":
            answer = ["one", "two", "three", "four"][int(answer) - 1]
        response = f"{answer.upper()}." if correct else "green circle"
        records.append({"task": "demo_shapes", "doc_id": doc["id"], "response": response})
        scores[doc["category"]].append(1.0 if correct else 0.0)
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    result = evaluate(f"responses={path}")
    everything = [value for values in scores.values() for value in values]
    expected = {"accuracy": everything, **{f"{skill}_accuracy": scores[skill] for skill in SKILLS}}
    for metric, values in expected.items():
        assert result[f"{metric},none"] == pytest.approx(statistics.fmean(values))
        stderr = statistics.stdev(values) / math.sqrt(len(values))
        assert result[f"{metric}_stderr,none"] == pytest.approx(stderr)
        assert (
            result[f"{metric}_ci_lower,none"] < result[f"{metric},none"] < result[f"{metric}_ci_upper,none"]
        )
    assert result["position_accuracy,none"] == pytest.approx(0.2)


# ------------------------------------------------------------------------------------------------
# the trained demo model (only when the hf extra is installed and the checkpoint is present)

HAS_HF = all(importlib.util.find_spec(name) for name in ("torch", "transformers"))
needs_model = pytest.mark.skipif(
    not (HAS_HF and (TINY_VLM_DIR / "model.safetensors").is_file()),
    reason="needs torch + transformers (the hf extra) and lmms_eval/demo/tiny_vlm",
)


@needs_model
def test_trained_demo_model_answers_the_benchmark() -> None:
    import torch
    import transformers

    from lmms_eval.models.hf.compat import load_processor

    processor = load_processor(str(TINY_VLM_DIR))
    model: Any = transformers.AutoModelForImageTextToText.from_pretrained(str(TINY_VLM_DIR)).eval()
    docs = [doc for skill in SKILLS for doc in [d for d in DOCS if d["category"] == skill][:10]]
    texts = [
        processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": doc["question"]}]}],
            add_generation_prompt=True,
            tokenize=False,
        )
        for doc in docs
    ]
    inputs = processor(text=texts, images=[[render(doc)] for doc in docs], padding=True, return_tensors="pt")
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    answers = processor.batch_decode(output[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    correct = dict.fromkeys(SKILLS, 0.0)
    for doc, answer in zip(docs, answers):
        assert normalise_answer(answer) in {normalise_answer(a) for a in ANSWERS[doc["category"]]}, answer
        correct[doc["category"]] += score(answer, doc["answer"]) / 10
    assert sum(correct.values()) / len(SKILLS) >= 0.6, correct
    for skill in SKILLS:
        assert correct[skill] > CHANCE[skill], correct


@needs_model
@pytest.mark.skipif(
    importlib.util.find_spec("lmms_eval.models.chat.huggingface") is None,
    reason="needs the huggingface backend",
)
def test_demo_model_through_the_huggingface_backend() -> None:
    results = lmms_eval.simple_evaluate(
        model="huggingface",
        model_args=f"pretrained={TINY_VLM_DIR}",
        tasks=["demo_shapes"],
        batch_size=16,
        task_manager=TaskManager(),
        show_progress=False,
    )["results"]["demo_shapes"]
    assert results["accuracy,none"] >= 0.7, results
    for skill in SKILLS:
        value, stderr = results[f"{skill}_accuracy,none"], results[f"{skill}_accuracy_stderr,none"]
        assert value > CHANCE[skill] + 0.2, (skill, results)
        assert 0.0 <= stderr < 0.1
