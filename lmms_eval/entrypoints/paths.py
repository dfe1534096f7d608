"""Where the files a request names may lie: every path in a request is confined to a server root.

| request field | root (``ServerArgs``) |
|---|---|
| ``output_path``, ``baseline`` | ``output_root`` |
| ``use_cache`` | ``cache_dir`` |
| ``include_path`` (each folder), ``dataset_root``, a chat template file | ``data_root`` |
| model paths in ``model_args`` (``pretrained``, ``model``, ...) | ``checkpoint_root`` (or ``output_root``, where ``/merge`` writes) |

A relative path is relative to its root. A model argument that names no folder under
``checkpoint_root`` and does not look like a path (``Qwen/Qwen2-VL-2B-Instruct``) is a Hub id and
is passed on unchanged. Anything that resolves outside its root (``..``, absolute paths, symbolic
links) is refused with a 422 that names the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi import HTTPException

from lmms_eval.entrypoints.server_args import ServerArgs
from lmms_eval.utils import parse_arg_string, path_within

# model_args keys whose value may be a local folder or file
MODEL_PATH_KEYS = frozenset(
    {
        *("pretrained", "model", "model_path", "model_name_or_path", "checkpoint"),
        *("tokenizer", "processor", "lora", "adapter", "peft", "chat_template"),
    }
)
_PATH_PREFIXES = ("/", "./", "../", "~", ".\\", "..\\")


def confined(root: Path, value: str | None, default: Path, field: str = "path", *also: Path) -> Path:
    """``value`` resolved under ``root`` (relative paths are relative to it); outside is a 422.

    An absolute ``value`` may also lie in one of the folders ``also``.
    """
    resolved = path_within(root, value or default)
    if resolved is None and value and Path(value).expanduser().is_absolute():
        resolved = next((r for r in (path_within(a, value) for a in also) if r is not None), None)
    if resolved is None:
        where = " or ".join(str(folder.resolve()) for folder in (root, *also))
        raise HTTPException(422, f"{field}: '{value}' is outside the server's folder {where}")
    return resolved


def looks_like_path(value: str) -> bool:
    return value.startswith(_PATH_PREFIXES) or value in (".", "..") or value.endswith(".jinja")


def _model_value(args: ServerArgs, key: str, value: str) -> str:
    root = args.checkpoint_path()
    candidate = Path(value).expanduser()
    if (not candidate.is_absolute() and (root / candidate).exists()) or looks_like_path(value):
        # merged checkpoints are written under output_root: models load from there too
        return str(confined(root, value, Path("."), f"model_args.{key}", args.output_path()))
    return value  # a Hub id


def _model_args(args: ServerArgs, given: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not given:
        return None
    parsed = parse_arg_string(given)
    for key, value in parsed.items():
        if key in MODEL_PATH_KEYS and isinstance(value, str) and value:
            parsed[key] = _model_value(args, key, value)
    return parsed


def confine_request(args: ServerArgs, job_id: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The request's keywords with every path resolved inside its root (or a 422)."""
    out = dict(given)
    out["output_path"] = str(
        confined(args.output_path(), given.get("output_path"), Path(job_id), "output_path")
    )
    out["use_cache"] = str(
        confined(args.cache_path(), given.get("use_cache"), args.cache_path(), "use_cache")
    )
    if given.get("baseline"):
        out["baseline"] = str(confined(args.output_path(), given["baseline"], Path("."), "baseline"))
    data = args.data_path()
    if given.get("include_path"):
        folders = [p.strip() for p in str(given["include_path"]).split(",") if p.strip()]
        out["include_path"] = ",".join(str(confined(data, p, Path("."), "include_path")) for p in folders)
    if given.get("dataset_root"):
        out["dataset_root"] = str(confined(data, given["dataset_root"], Path("."), "dataset_root"))
    template = given.get("apply_chat_template")
    if isinstance(template, str) and looks_like_path(template):
        out["apply_chat_template"] = str(confined(data, template, Path("."), "apply_chat_template"))
    model_args = _model_args(args, given.get("model_args"))
    if model_args is not None:
        out["model_args"] = model_args
    return out
