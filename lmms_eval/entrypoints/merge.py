"""Merge a sharded ``torch.distributed.checkpoint`` (DCP / FSDP2) checkpoint into a Hugging Face folder.

``merge_checkpoint(checkpoint, output, base_model)`` reads the ``.metadata`` file and ``*.distcp``
shards written by ``dcp.save`` (no process group needed), keeps the model's tensors, strips the
wrapper prefixes that FSDP, DDP and ``torch.compile`` add (``module.``, ``_orig_mod.``,
``_fsdp_wrapped_module.``, ``_checkpoint_wrapped_module.``, an outer ``{"model": {...}}``), checks
the key set and shapes against the architecture named in the base model's ``config.json``, and
writes ``model.safetensors`` next to the config, tokenizer and processor files, so that
``--model huggingface --model_args pretrained=<output>`` loads it. torch and transformers are
imported inside the functions (the ``hf`` extra).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lmms_eval.errors import ConfigError, LmmsEvalError

logger = logging.getLogger(__name__)

__all__ = ["merge_checkpoint"]

# path segments that wrappers insert into parameter names; removed wherever they appear
WRAPPER_SEGMENTS = ("_orig_mod", "module", "_fsdp_wrapped_module", "_checkpoint_wrapped_module")
# top-level entries of a training state dict that hold the model (the rest is optimizer, step, ...)
MODEL_ENTRIES = ("model", "state_dict", "model_state_dict", "module")
# files never copied from the base model / checkpoint folder (weights and DCP shards)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".distcp", ".ckpt", ".h5", ".msgpack")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
DEMO_NAME = "demo"
SHOWN = 5


def merge_checkpoint(checkpoint_path: str, output_path: str, base_model: str | None = None) -> str:
    """Write a Hugging Face checkpoint folder merged from a DCP checkpoint; return the output folder.

    ``base_model`` is a local folder (or ``demo``) holding ``config.json`` and the tokenizer /
    processor files; without it they must be in ``checkpoint_path`` itself.
    """
    checkpoint = _checkpoint_folder(checkpoint_path)
    source = _config_folder(checkpoint, base_model)
    output = _output_folder(output_path)
    state = select_model_state(load_dcp_state_dict(checkpoint), str(checkpoint))
    required, optional = expected_shapes(source)
    tensors = match_keys(state, required, f"{checkpoint} (base model {source})", optional)
    output.mkdir(parents=True, exist_ok=True)
    _copy_support_files(source, output)
    write_safetensors(tensors, output / "model.safetensors")
    logger.info("merged %d tensors from %s into %s", len(tensors), checkpoint, output)
    return str(output)


# -- folders ----------------------------------------------------------------------------------------


def _checkpoint_folder(path: str) -> Path:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"checkpoint {path}: folder does not exist")
    if not (folder / ".metadata").is_file():
        raise ConfigError(
            f"checkpoint {path}: no .metadata file; expected a torch.distributed.checkpoint folder "
            "(.metadata + *.distcp written by dcp.save)"
        )
    return folder


def _config_folder(checkpoint: Path, base_model: str | None) -> Path:
    if base_model is None:
        if not (checkpoint / "config.json").is_file():
            raise ConfigError(
                f"checkpoint {checkpoint}: no config.json; pass base_model=<folder of the model that was trained>"
            )
        return checkpoint
    if base_model == DEMO_NAME:
        folder = Path(__file__).resolve().parents[1] / "demo" / "tiny_vlm"
    else:
        folder = Path(base_model).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"base_model {base_model}: folder does not exist (pass a local model folder)")
    if not (folder / "config.json").is_file():
        raise ConfigError(f"base_model {base_model}: no config.json in the folder")
    return folder


def _output_folder(path: str) -> Path:
    folder = Path(path).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"output {path}: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()):
        raise ConfigError(f"output {path}: folder is not empty; choose a new or empty folder")
    return folder


def _copy_support_files(source: Path, output: Path) -> None:
    """Copy config, generation, tokenizer, processor and chat-template files (not weights)."""
    for item in sorted(source.iterdir()):
        if not item.is_file() or item.name.startswith("."):
            continue
        if item.name.endswith(WEIGHT_SUFFIXES) or item.name in WEIGHT_INDEXES:
            continue
        shutil.copy2(item, output / item.name)


# -- state dict -------------------------------------------------------------------------------------


def load_dcp_state_dict(checkpoint: Path) -> dict[str, Any]:
    """The full (unsharded) state dict of a DCP folder, loaded in this process without a process group."""
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    with tempfile.TemporaryDirectory(prefix="lmms_eval_merge_") as tmp:
        target = Path(tmp) / "state.pt"
        try:
            dcp_to_torch_save(str(checkpoint), str(target))
            state = torch.load(target, map_location="cpu", weights_only=True)
        except Exception as exc:
            raise LmmsEvalError(
                f"checkpoint {checkpoint}: cannot read the DCP shards ({_one_line(exc)})"
            ) from exc
    if not isinstance(state, dict):
        raise LmmsEvalError(f"checkpoint {checkpoint}: expected a state dict, got {type(state).__name__}")
    return state


def select_model_state(state: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The model's tensors, flattened to dotted names, from a (possibly nested) training state dict."""
    import torch

    for entry in MODEL_ENTRIES:
        inner = state.get(entry)
        if isinstance(inner, Mapping) and _has_tensors(inner):
            state = inner
            break
    flat: dict[str, Any] = {}
    for key, value in _flatten(state, ""):
        if isinstance(value, torch.Tensor):
            flat[strip_wrapper_segments(key)] = value
    if not flat:
        raise LmmsEvalError(f"checkpoint {where}: holds no tensors")
    return flat


def _has_tensors(value: Mapping[str, Any]) -> bool:
    import torch

    return any(
        isinstance(v, torch.Tensor) or (isinstance(v, Mapping) and _has_tensors(v)) for v in value.values()
    )


def _flatten(value: Mapping[str, Any], prefix: str) -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for key, inner in value.items():
        name = f"{prefix}{key}"
        if isinstance(inner, Mapping):
            items.extend(_flatten(inner, name + "."))
        else:
            items.append((name, inner))
    return items


def strip_wrapper_segments(key: str) -> str:
    """``module._orig_mod.model.layers.0._checkpoint_wrapped_module.mlp.weight`` -> ``model.layers.0.mlp.weight``."""
    return ".".join(part for part in key.split(".") if part not in WRAPPER_SEGMENTS)


def match_keys(
    state: dict[str, Any],
    required: Mapping[str, tuple[int, ...]],
    where: str,
    optional: Mapping[str, tuple[int, ...]] | None = None,
) -> dict[str, Any]:
    """Rename ``state`` to the architecture's keys (dropping an outer ``model.`` when that fits better).

    ``optional`` names keys that may be present but are not required (tied weights). Raises a
    one-line error naming the first missing / unexpected keys and shape mismatches.
    """
    known = {**(optional or {}), **required}
    candidates = [state]
    if all(key.startswith("model.") for key in state):
        candidates.append({key.removeprefix("model."): value for key, value in state.items()})
    best = max(candidates, key=lambda c: len(known.keys() & c.keys()))
    missing = sorted(set(required) - set(best))
    unexpected = sorted(set(best) - set(known))
    shapes = [
        f"{key} {tuple(best[key].shape)} vs {known[key]}"
        for key in sorted(known.keys() & best.keys())
        if tuple(best[key].shape) != known[key]
    ]
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing keys ({_first(missing)})")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected keys ({_first(unexpected)})")
    if shapes:
        problems.append(f"{len(shapes)} shape mismatches ({_first(shapes)})")
    if problems:
        raise LmmsEvalError(
            f"checkpoint {where}: does not match the base model architecture: {'; '.join(problems)}"
        )
    return best


def _first(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (", ..." if len(names) > SHOWN else "")


def expected_shapes(source: Path) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """(required, optional) tensor shapes of the config's model, built on the meta device.

    Required: parameters (each tied group once, under its first name) and persistent buffers.
    Optional: the other names of tied parameters, which a checkpoint may or may not carry.
    """
    import torch

    model = _build_meta_model(source)
    required = {name: tuple(param.shape) for name, param in model.named_parameters()}
    optional = {
        name: tuple(param.shape)
        for name, param in model.named_parameters(remove_duplicate=False)
        if name not in required
    }
    state_keys = set(model.state_dict().keys())
    for name, buffer in model.named_buffers():
        if name in state_keys and isinstance(buffer, torch.Tensor):
            required[name] = tuple(buffer.shape)
    return required, optional


def _build_meta_model(source: Path) -> Any:
    """The model class named by ``config.json`` (``architectures[0]``), with no memory allocated."""
    import torch
    import transformers

    try:
        config = transformers.AutoConfig.from_pretrained(str(source))
    except Exception as exc:
        raise ConfigError(
            f"{source / 'config.json'}: cannot be read by transformers ({_one_line(exc)})"
        ) from exc
    architectures = list(getattr(config, "architectures", None) or [])
    model_class = getattr(transformers, architectures[0], None) if architectures else None
    if model_class is None:
        raise ConfigError(
            f"{source / 'config.json'}: 'architectures' must name a transformers model class, "
            f"got {architectures or 'nothing'}"
        )
    with torch.device("meta"):
        model = model_class._from_config(config)
    return model


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- writing ----------------------------------------------------------------------------------------


def write_safetensors(tensors: Mapping[str, Any], target: Path) -> None:
    """``safetensors`` refuses shared storage and non-contiguous tensors: clone the later twins."""
    import torch
    from safetensors.torch import save_file

    seen: set[int] = set()
    plain: dict[str, Any] = {}
    for name in sorted(tensors):
        tensor = tensors[name].detach().cpu()
        if tensor.untyped_storage().data_ptr() in seen or not tensor.is_contiguous():
            tensor = tensor.clone(memory_format=torch.contiguous_format)
        seen.add(tensor.untyped_storage().data_ptr())
        plain[name] = tensor
    save_file(plain, str(target), metadata={"format": "pt"})
