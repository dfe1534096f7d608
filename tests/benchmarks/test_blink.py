"""blink: the published letter rule, multi-image documents, the group over the 14 subtasks."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

from lmms_eval.scoring import blink

NOTE = "Note: You only need to respond with {} without providing any additional information.\n"


# each checked against the published package (4 options unless said)
@pytest.mark.parametrize(
    ("response", "n", "letter"),
    [
        ("B", 4, "B"),
        ("(b)", 4, "B"),
        ("C.", 4, "C"),
        ("c\n Answer: B", 4, "C"),  # a one-letter first line wins
        ("The answer is (c)", 4, "C"),
        ("Answer: The answer is C", 4, "C"),
        ("BanswerA (answer e", 5, "E"),  # the last answer statement
        ("answer is Cat", 4, "A"),  # no statement: the first character
        ("answer: e", 4, "A"),  # e is no option here
        ("A A (B)", 2, "B"),  # a letter in parentheses
        ("Because", 4, "B"),
        ("  d", 4, "D"),
        ("I think B", 4, ""),
        ("**B**", 4, ""),
        ("[B]", 4, ""),
        ("C", 2, ""),
    ],
)
def test_published_letter(response: str, n: int, letter: str) -> None:
    assert blink.published_letter(response, n) == letter


def _features() -> Any:
    import datasets

    text = datasets.Value("string")
    images = {f"image_{k}": datasets.Image() for k in range(1, 5)}
    return datasets.Features(
        {
            "idx": text,
            "sub_task": text,
            **images,
            "choices": datasets.Sequence(text),
            "prompt": text,
            "answer": text,
        }
    )


PROMPT = "Which image is the odd one?\nSelect from the following choices.\n(A) the first image\n(B) the second image"
CONFIGS = [
    "Art_Style",
    "Counting",
    "Forensic_Detection",
    "Functional_Correspondence",
    "IQ_Test",
    "Jigsaw",
    "Multi-view_Reasoning",
    "Object_Localization",
    "Relative_Depth",
    "Relative_Reflectance",
    "Semantic_Correspondence",
    "Spatial_Relation",
    "Visual_Correspondence",
    "Visual_Similarity",
]
# per subtask config: (gold, answer, image count); the others get one right answer on one image
DOCS = {config: [("(A)", "A", 1)] for config in CONFIGS}
DOCS["Art_Style"] = [("(A)", "A", 3), ("(B)", "**B**", 3)]  # published 1/2, strict 2/2
DOCS["Counting"] = [("(B)", "I think B", 1)]  # published 0/1, strict 1/1


@pytest.fixture
def blink_data(hub_dataset: Any) -> None:
    for config, docs in DOCS.items():
        rows = []
        for i, (gold, _, count) in enumerate(docs):
            images = {
                f"image_{k}": solid_image((k * 40, i * 40, 0)) if k <= count else None for k in range(1, 5)
            }
            rows.append(
                {
                    "idx": f"val_{config}_{i}",
                    "sub_task": config,
                    **images,
                    "choices": ["the first image", "the second image"],
                    "prompt": PROMPT,
                    "answer": gold,
                }
            )
        hub_dataset("BLINK-Benchmark/BLINK", "val", rows, _features(), config=config)


def _answer(task: str, doc: dict[str, Any]) -> str:
    config, index = doc["idx"][4:].rsplit("_", 1)
    return DOCS[config][int(index)][1]


def test_run(blink_data: None, run_benchmark: Any) -> None:
    model = ScriptedModel(_answer)
    out = run_benchmark("blink", _answer, model=model)
    results, group = out["results"], out["groups"]["blink"]
    subtasks = [name for name in results if name.startswith("blink_")]
    assert len(subtasks) == 14
    assert results["blink_art_style"]["blink_acc,none"] == pytest.approx(0.5)
    assert results["blink_art_style"]["blink_acc_strict,none"] == pytest.approx(1.0)
    assert results["blink_counting"]["blink_acc,none"] == pytest.approx(0.0)
    # the group: the mean over the subtasks, each weighing the same (as published)
    assert group["blink_acc,none"] == pytest.approx((0.5 + 0 + 12) / 14)
    assert group["blink_acc_strict,none"] == pytest.approx(1.0)
    content = model.seen["blink_art_style"][1][0]["content"]
    assert [c["url"].getpixel((0, 0)) for c in content[:-1]] == [(40, 40, 0), (80, 40, 0), (120, 40, 0)]
    assert content[-1] == {"type": "text", "text": NOTE.format("A, B") + PROMPT}
