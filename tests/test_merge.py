"""``merge_checkpoint``: a 2-rank FSDP2 ``dcp.save`` of the demo model merged back into an HF folder."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lmms_eval
from lmms_eval.demo import TINY_VLM_DIR
from lmms_eval.errors import ConfigError, LmmsEvalError
from lmms_eval.tasks import TaskManager

HAS_HF = all(importlib.util.find_spec(name) for name in ("torch", "transformers", "safetensors"))
pytestmark = pytest.mark.skipif(
    not (HAS_HF and (TINY_VLM_DIR / "model.safetensors").is_file()),
    reason="needs torch + transformers (the hf extra) and lmms_eval/demo/tiny_vlm",
)

# Each rank loads the demo model, shards it with FSDP2 (per decoder layer + root) on CPU / gloo and
# saves a training-style state dict: the model nested under "model" with DDP + torch.compile
# prefixes on every key, next to a non-tensor entry, as trainers write it.
SAVE_SCRIPT = """
import sys

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import transformers
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
model = transformers.AutoModelForImageTextToText.from_pretrained(sys.argv[1])
for layer in model.model.language_model.layers:
    fully_shard(layer)
fully_shard(model)
state = {"module._orig_mod." + key: value for key, value in model.state_dict().items()}
dcp.save({"model": state, "step": 7}, checkpoint_id=sys.argv[2])
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def dcp_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dcp")
    script, checkpoint = root / "save.py", root / "checkpoint"
    script.write_text(SAVE_SCRIPT)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [*command, str(script), str(TINY_VLM_DIR), str(checkpoint)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return checkpoint


def state_dict(folder: str | Path) -> dict[str, Any]:
    import transformers

    model: Any = transformers.AutoModelForImageTextToText.from_pretrained(str(folder))
    return dict(model.state_dict())


def test_sharded_checkpoint_merges_into_a_loadable_hf_folder(dcp_checkpoint: Path, tmp_path: Path) -> None:
    import torch

    from lmms_eval.entrypoints.merge import merge_checkpoint

    shards = sorted(p.name for p in dcp_checkpoint.iterdir())
    assert shards == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    merged = merge_checkpoint(str(dcp_checkpoint), str(tmp_path / "merged"), base_model=str(TINY_VLM_DIR))
    assert merged == str(tmp_path / "merged")
    names = {p.name for p in Path(merged).iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "processor_config.json"} <= names
    assert not any(name.endswith(".distcp") for name in names)

    original, restored = state_dict(TINY_VLM_DIR), state_dict(merged)
    assert original.keys() == restored.keys()
    for key, value in original.items():
        assert torch.equal(value, restored[key]), key

    results = lmms_eval.simple_evaluate(
        model="huggingface",
        model_args={"pretrained": merged},
        tasks=["demo_shapes"],
        limit=4,
        task_manager=TaskManager(),
        show_progress=False,
    )["results"]["demo_shapes"]
    assert 0.0 <= results["accuracy,none"] <= 1.0


def test_config_is_taken_from_the_checkpoint_folder_or_demo(dcp_checkpoint: Path, tmp_path: Path) -> None:
    from lmms_eval.entrypoints.merge import merge_checkpoint

    with_config = tmp_path / "with_config"
    shutil.copytree(dcp_checkpoint, with_config)
    shutil.copy(TINY_VLM_DIR / "config.json", with_config / "config.json")
    merged = Path(merge_checkpoint(str(with_config), str(tmp_path / "a")))
    assert sorted(p.name for p in merged.iterdir()) == ["config.json", "model.safetensors"]
    assert (
        Path(merge_checkpoint(str(dcp_checkpoint), str(tmp_path / "b"), "demo")) / "tokenizer.json"
    ).is_file()


def test_errors_name_the_path_and_the_problem(dcp_checkpoint: Path, tmp_path: Path) -> None:
    from lmms_eval.entrypoints.merge import merge_checkpoint

    with pytest.raises(ConfigError, match="nowhere: folder does not exist"):
        merge_checkpoint(str(tmp_path / "nowhere"), str(tmp_path / "out"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no \.metadata file"):
        merge_checkpoint(str(tmp_path / "empty"), str(tmp_path / "out"))
    with pytest.raises(ConfigError, match=r"no config\.json; pass base_model"):
        merge_checkpoint(str(dcp_checkpoint), str(tmp_path / "out"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ConfigError, match="full: folder is not empty"):
        merge_checkpoint(str(dcp_checkpoint), str(tmp_path / "full"), "demo")

    smaller = tmp_path / "smaller"
    smaller.mkdir()
    config = json.loads((TINY_VLM_DIR / "config.json").read_text())
    config["text_config"]["num_hidden_layers"] = 1
    config["text_config"]["layer_types"] = ["full_attention"]
    config["text_config"]["hidden_size"] = 64
    (smaller / "config.json").write_text(json.dumps(config))
    with pytest.raises(LmmsEvalError, match="does not match the base model architecture") as info:
        merge_checkpoint(str(dcp_checkpoint), str(tmp_path / "out"), str(smaller))
    message = str(info.value)
    assert "\n" not in message
    assert "unexpected keys (model.language_model.layers.1." in message
    assert "shape mismatches (" in message
    assert f"(base model {smaller})" in message
    assert not (tmp_path / "out").exists()
    config["architectures"] = ["NoSuchModel"]
    (smaller / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        ConfigError, match=r"config\.json: 'architectures' must name a transformers model class"
    ):
        merge_checkpoint(str(dcp_checkpoint), str(tmp_path / "out"), str(smaller))


def test_prefixes_nesting_and_tied_tensors(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    from lmms_eval.entrypoints.merge import (
        match_keys,
        select_model_state,
        strip_wrapper_segments,
        write_safetensors,
    )

    key = "module._orig_mod.model.layers.0._checkpoint_wrapped_module.mlp._fsdp_wrapped_module.weight"
    assert strip_wrapper_segments(key) == "model.layers.0.mlp.weight"
    weight = torch.arange(6.0).reshape(2, 3)
    nested = {"model": {"_orig_mod": {"lm_head": {"weight": weight}}}, "optim": {"state": {}}, "step": 3}
    assert select_model_state(nested, "ckpt") == {"lm_head.weight": weight}
    with pytest.raises(LmmsEvalError, match="ckpt: holds no tensors"):
        select_model_state({"step": 3}, "ckpt")

    wrapped = {"model.embed.weight": weight, "model.head.weight": weight}
    required, optional = {"embed.weight": (2, 3)}, {"head.weight": (2, 3)}
    assert match_keys(wrapped, required, "ckpt", optional).keys() == {"embed.weight", "head.weight"}
    with pytest.raises(LmmsEvalError, match=r"1 missing keys \(other.weight\)"):
        match_keys(wrapped, {"embed.weight": (2, 3), "other.weight": (1,)}, "ckpt", optional)

    tied = {"embed.weight": weight, "head.weight": weight, "t.weight": weight.t()}
    write_safetensors(tied, tmp_path / "model.safetensors")
    loaded = load_file(str(tmp_path / "model.safetensors"))
    assert all(torch.equal(loaded[name], value) for name, value in tied.items())
