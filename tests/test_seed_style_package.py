"""A task package and a model written only against the seeds' documented interface run unchanged.

The package below follows the seed guides literally: a chat model subclassing ``lmms`` that unpacks
the 5-element chat ``Instance.args`` and reads media through ``ChatMessages``, registered through the
legacy ``LMMS_EVAL_PLUGINS`` variable, and an image task YAML with ``!function`` utils,
``lmms_eval_specific_kwargs`` and a custom aggregation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (20, 40, 210)}

MODEL = """
from typing import List, Optional, Tuple, Union

from loguru import logger as eval_logger

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from lmms_eval.api.registry import register_model
from lmms_eval.protocol import ChatMessages

NAMES = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (20, 40, 210)}


@register_model("colour_model")
class ColourModel(lmms):
    is_simple = False

    def __init__(self, pretrained: str = "org/colour", device: Optional[str] = "cpu",
                 batch_size: Optional[Union[int, str]] = 1, **kwargs) -> None:
        super().__init__()
        self.batch_size_per_gpu = int(batch_size)
        self._device = device
        self._rank = 0
        self._world_size = 1

    def generate_until(self, requests: List[Instance]) -> List[str]:
        results = []
        for request in requests:
            doc_to_messages, gen_kwargs, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            raw_messages = doc_to_messages(doc)
            messages = ChatMessages(messages=raw_messages)
            images, videos, audios = messages.extract_media()
            hf_messages = messages.to_hf_messages()
            assert hf_messages[0]["content"][0]["type"] == "image"
            pixel = images[0].convert("RGB").getpixel((2, 2))
            best = min(NAMES, key=lambda n: sum((a - b) ** 2 for a, b in zip(NAMES[n], pixel)))
            results.append(best)
        eval_logger.info("answered {} requests", len(results))
        return results

    def loglikelihood(self, requests: List[Instance]) -> List[Tuple[float, bool]]:
        raise NotImplementedError("loglikelihood not implemented")

    def generate_until_multi_round(self, requests: List[Instance]) -> List[str]:
        raise NotImplementedError("generate_until_multi_round not implemented")
"""

UTILS = """
from loguru import logger as eval_logger


def my_doc_to_visual(doc):
    if doc.get("image") is not None:
        return [doc["image"].convert("RGB")]
    return []


def my_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}{kwargs.get('post_prompt', '')}"


def my_doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    visuals = my_doc_to_visual(doc)
    text = my_doc_to_text(doc, lmms_eval_specific_kwargs)
    messages = [{"role": "user", "content": []}]
    for visual in visuals:
        messages[0]["content"].append({"type": "image", "url": visual})
    messages[0]["content"].append({"type": "text", "text": text})
    return messages


def my_process_results(doc, results):
    prediction = results[0].strip()
    return {"accuracy": 1.0 if prediction.lower() == str(doc["answer"]).lower() else 0.0}


def my_aggregate(results):
    return sum(results) / len(results)
"""

YAML = """task: "colour_task"
dataset_path: parquet
dataset_kwargs:
  token: True
  data_files:
    test: data/test.parquet
test_split: test
output_type: generate_until
doc_to_messages: !function utils.my_doc_to_messages
doc_to_visual: !function utils.my_doc_to_visual
doc_to_text: !function utils.my_doc_to_text
doc_to_target: "answer"
generation_kwargs:
  max_new_tokens: 16
  temperature: 0
  top_p: 1.0
  do_sample: false
process_results: !function utils.my_process_results
metric_list:
  - metric: accuracy
    aggregation: !function utils.my_aggregate
    higher_is_better: true
lmms_eval_specific_kwargs:
  default:
    pre_prompt: ""
    post_prompt: "\\nAnswer with the colour name."
  qwen3_vl:
    format: "qwen3_vl"
    pre_prompt: "Question: "
metadata:
  - version: 0.0
"""


@pytest.fixture
def package(tmp_path: Path) -> Path:
    datasets = pytest.importorskip("datasets")
    from PIL import Image

    root = tmp_path / "site"
    pkg = root / "colourbench"
    (pkg / "models").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models" / "__init__.py").write_text('AVAILABLE_MODELS = {"colour_model": "ColourModel"}\n')
    (pkg / "models" / "colour_model.py").write_text(textwrap.dedent(MODEL))
    task_dir = pkg / "tasks" / "colour_task"
    (task_dir / "data").mkdir(parents=True)
    (task_dir / "colour_task.yaml").write_text(YAML)
    (task_dir / "utils.py").write_text(textwrap.dedent(UTILS))
    names = ["red", "green", "blue", "red", "blue", "green", "green", "red"]
    answers = [*names[:-2], "blue", "blue"]  # the last two answers are deliberately wrong
    images = [Image.new("RGB", (8, 8), COLOURS[n]) for n in names]
    ds = datasets.Dataset.from_dict(
        {"image": images, "question": ["What colour is the picture?"] * len(names), "answer": answers},
        features=datasets.Features(
            {
                "image": datasets.Image(),
                "question": datasets.Value("string"),
                "answer": datasets.Value("string"),
            }
        ),
    )
    ds.to_parquet(str(task_dir / "data" / "test.parquet"))
    return root


def test_seed_style_package_runs_unchanged(package: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(package) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "LMMS_EVAL_PLUGINS": "colourbench",
    }
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "lmms_eval", "--model", "colour_model", "--tasks", "colour_task",
         "--output_path", str(out), "--log_samples", "--verbosity", "WARNING"],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    results = json.loads(next(out.rglob("*_results.json")).read_text())
    assert results["results"]["colour_task"]["accuracy,none"] == pytest.approx(6 / 8)
    assert "colourbench.models.colour_model" in results["config"]["model_backend"]
    samples = [json.loads(x) for x in next(out.rglob("*_samples_colour_task.jsonl")).read_text().splitlines()]
    assert [s["resps"][0][0] for s in samples][:3] == ["red", "green", "blue"]
    assert samples[0]["input"].endswith("Answer with the colour name.")
