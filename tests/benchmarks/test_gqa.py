"""gqa: questions joined to images of another config by imageId; exact_match ignoring case/punctuation."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ScriptedModel, solid_image

POST = "\nAnswer the question using a single word or phrase."
REPO = "lmms-lab-encoder/GQA"
COLOURS = {"n1": (255, 0, 0), "n2": (0, 255, 0), "n3": (0, 0, 255)}


def _question_features() -> Any:
    import datasets

    text = datasets.Value("string")
    return datasets.Features(
        {
            "id": text,
            "imageId": text,
            "question": text,
            "answer": text,
            "fullAnswer": text,
            "isBalanced": datasets.Value("bool"),
            "groups": {"global": text, "local": text},
            "entailed": datasets.List(text),
            "equivalent": datasets.List(text),
            "types": {"structural": text, "semantic": text, "detailed": text},
            "annotations": {"answer": text, "question": text, "fullAnswer": text},
            "semantic": datasets.List(
                {"operation": text, "argument": text, "dependencies": datasets.List(datasets.Value("int32"))}
            ),
            "semanticStr": text,
        }
    )


def _image_features() -> Any:
    import datasets

    return datasets.Features({"id": datasets.Value("string"), "image": datasets.Image()})


# question id, imageId, question, answer, scripted output, correct?
ROWS = [
    ("q0", "n2", "Is the sky blue?", "yes", "Yes.", True),  # case and punctuation ignored
    ("q1", "n1", "Which side is the cup on?", "left", "left side", False),
    ("q2", "n2", "What color is the car?", "red", "RED", True),  # shares image n2 with q0
    ("q3", "n3", "What is the man holding?", "umbrella", "an umbrella", False),
]


def _question(row: tuple[Any, ...]) -> dict[str, Any]:
    qid, image_id, question, answer, _, _ = row
    return {
        "id": qid,
        "imageId": image_id,
        "question": question,
        "answer": answer,
        "fullAnswer": f"The answer is {answer}.",
        "isBalanced": True,
        "groups": {"global": "", "local": "10c-sky"},
        "entailed": [],
        "equivalent": [qid],
        "types": {"structural": "verify", "semantic": "attr", "detailed": "verifyAttr"},
        "annotations": {"answer": "", "question": "", "fullAnswer": ""},
        "semantic": [{"operation": "select", "argument": "sky", "dependencies": []}],
        "semanticStr": "select: sky",
    }


@pytest.fixture
def gqa_data(hub_dataset: Any) -> None:
    questions = [_question(row) for row in ROWS]
    hub_dataset(REPO, "testdev", questions, _question_features(), config="testdev_balanced_instructions")
    # images in another order than first use, plus one no question refers to
    images = [{"id": i, "image": solid_image(COLOURS[i])} for i in ("n3", "n1", "n2")]
    images.append({"id": "unused", "image": solid_image((9, 9, 9))})
    hub_dataset(REPO, "testdev", images, _image_features(), config="testdev_balanced_images")


def _answer(task: str, doc: dict[str, Any]) -> str:
    return next(row[4] for row in ROWS if row[0] == doc["id"])


def test_exact_match_and_determinism(gqa_data: None, run_benchmark: Any) -> None:
    results = run_benchmark("gqa", _answer)
    scores = results["results"]["gqa"]
    assert scores["exact_match,none"] == pytest.approx(0.5)  # q0 and q2 of 4
    assert results["n-samples"]["gqa"]["effective"] == 4
    again = run_benchmark("gqa", _answer)["results"]["gqa"]
    assert again["exact_match,none"] == scores["exact_match,none"]


def test_images_are_joined_on_image_id(gqa_data: None, run_benchmark: Any) -> None:
    chat = ScriptedModel(_answer, chat=True)
    run_benchmark("gqa", _answer, model=chat)
    for doc_id, row in enumerate(ROWS):
        [message] = chat.seen["gqa"][doc_id]
        image, text = message["content"]
        assert image["url"].getpixel((0, 0)) == COLOURS[row[1]]
        assert text == {"type": "text", "text": row[2] + POST}

    simple = ScriptedModel(_answer, chat=False)
    run_benchmark("gqa", _answer, model=simple, limit=2)
    prompt, visuals = simple.seen["gqa"][1]
    assert prompt == "Which side is the cup on?" + POST
    assert len(visuals) == 1 and visuals[0].getpixel((0, 0)) == COLOURS["n1"]


def test_join_is_lazy_and_scoring_docs_carry_no_image(gqa_data: None, dataset_root: Any) -> None:
    import datasets

    from lmms_eval.data.load import without_media
    from lmms_eval.tasks.gqa.utils import process_docs

    def read(config: str) -> Any:
        files = str(dataset_root / REPO / config / "testdev-00000-of-00001.parquet")
        return datasets.Dataset.from_parquet(files)

    docs = process_docs(read("testdev_balanced_instructions"), load_config=lambda c, s: read(c))
    assert docs["image_row"] == [2, 1, 2, 0]  # rows of n2, n1, n2, n3 in the images config
    assert docs[3]["image"].getpixel((0, 0)) == COLOURS["n3"]
    scoring = without_media(docs)
    assert "image" not in scoring[0] and scoring[0]["answer"] == "yes"


def test_question_without_image_is_an_error(hub_dataset: Any, run_benchmark: Any) -> None:
    from lmms_eval.errors import LmmsEvalError  # found by pre-flight, before the model loads

    hub_dataset(
        REPO, "testdev", [_question(ROWS[0])], _question_features(), config="testdev_balanced_instructions"
    )
    images = [{"id": "other", "image": solid_image()}]
    hub_dataset(REPO, "testdev", images, _image_features(), config="testdev_balanced_images")
    with pytest.raises(LmmsEvalError, match=r"imageId 'n2'.*testdev_balanced_images"):
        run_benchmark("gqa", _answer)
