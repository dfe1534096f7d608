"""The demo model answers images of any size: its processor resizes them to the 112 px it was
trained on (lmms_eval/demo/tiny_vlm/TRAINING.md), so 64 px and 300 px renderings of the benchmark
score about as well as the 112 px originals, and far above chance."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from lmms_eval.demo import TINY_VLM_DIR
from lmms_eval.demo.shapes import CHANCE, SKILLS, read_jsonl, render, score

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(n) for n in ("torch", "transformers")), reason="needs the hf extra"
)


@pytest.mark.parametrize("size", [(64, 64), (300, 300), (300, 200)])
def test_the_demo_model_answers_other_image_sizes(size: tuple[int, int]) -> None:
    import torch
    import transformers

    from lmms_eval.models.hf.compat import load_processor

    processor = load_processor(str(TINY_VLM_DIR))
    model: Any = transformers.AutoModelForImageTextToText.from_pretrained(str(TINY_VLM_DIR)).eval()
    docs = read_jsonl()[::5]  # 40 documents, every skill
    prompts = [
        processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": doc["question"]}]}],
            add_generation_prompt=True,
            tokenize=False,
        )
        for doc in docs
    ]
    images = [[render(doc).resize(size)] for doc in docs]
    inputs = processor(text=prompts, images=images, padding=True, return_tensors="pt")
    if size[0] == size[1]:  # a square image becomes exactly the training size: 16 x 16 patches of 7 px
        assert inputs["image_grid_thw"][0].tolist() == [1, 16, 16]
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    answers = processor.batch_decode(output[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert all(answer.strip() for answer in answers), answers
    accuracy = sum(score(answer, doc["answer"]) for answer, doc in zip(answers, docs)) / len(docs)
    chance = sum(CHANCE[skill] for skill in SKILLS) / len(SKILLS)
    assert accuracy >= chance + 0.3, (size, accuracy)  # before the resize: 0.075 at 64 px
