"""A fingerprint of what a model *is*, so a retrained checkpoint at the same path never reuses answers.

:func:`model_content_fingerprint` looks at the model args (never at the network):

* a model class may offer ``content_fingerprint()`` on its instance; a string it returns is used
  (hashed) and nothing else is looked at;
* every other string arg whose value is an existing local file or folder (``pretrained=/ckpt``,
  ``logs=`` of ``from_log``, ...; ``pretrained=demo`` is the bundled checkpoint folder, as
  :func:`~lmms_eval.models.hf.backend.resolve_pretrained` loads it) adds, per file, its relative
  path and size plus a sha256 of its content when it is small (:data:`SMALL_FILE_BYTES`, up to
  :data:`HASH_BUDGET_BYTES` per arg) or else its ``mtime_ns``. Folders are walked
  :data:`MAX_DEPTH` levels deep, hidden entries skipped, at most :data:`MAX_FILES` files: stat
  calls only for large files, so weights are never read;
* a string arg that names a Hub id present in the local Hugging Face cache adds the commit its
  ``refs/<revision or main>`` points to;
* args that change speed, not answers (``batch_size``, ``device``), secrets (``api_key``, ...)
  and download or output folders (:data:`PATH_ARGS_IGNORED`) are never looked at, so rotating an
  API key keeps the cache.

The result is a 16-hex-digit hash (``""`` when nothing was found: an API model known by name),
with the names of the args it came from.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_eval.secrets import is_secret_name
from lmms_eval.utils import canonical_json, hash_string

logger = logging.getLogger(__name__)

MAX_DEPTH = 3  # a folder, its sub-folders and theirs
MAX_FILES = 2000
SMALL_FILE_BYTES = 1 << 20  # hashed; larger files are described by size and mtime_ns
HASH_BUDGET_BYTES = 32 << 20
# model args that hold a speed setting or a folder to write to or download into, not the model
PATH_ARGS_IGNORED = frozenset(
    {
        "batch_size",
        "max_batch_size",
        "device",
        "cache_dir",
        "download_dir",
        "hf_cache_dir",
        "output_dir",
        "output_path",
        "log_dir",
        "tmp_dir",
        "save_dir",
        "video_cache_dir",
    }
)


@dataclass(frozen=True)
class ContentFingerprint:
    """``value``: a 16-hex-digit hash, ``""`` when there was nothing to look at; ``sources``: what it covers."""

    value: str = ""
    sources: tuple[str, ...] = ()


def given_fingerprint(value: str, source: str) -> ContentFingerprint:
    """A fingerprint handed over by a model or a caller, in the same 16-hex-digit form."""
    return ContentFingerprint(hash_string(value)[:16], (source,)) if value else ContentFingerprint()


def offers_fingerprint(lm: Any) -> bool:
    """Whether a model instance has its own ``content_fingerprint()``."""
    return callable(getattr(lm, "content_fingerprint", None))


def model_content_fingerprint(model_args: Mapping[str, Any] | None, lm: Any = None) -> ContentFingerprint:
    """The content fingerprint of a model (see the module docstring)."""
    if offers_fingerprint(lm):
        value = lm.content_fingerprint()
        if isinstance(value, str) and value:
            return given_fingerprint(value, "model")
    args = dict(model_args or {})
    parts: dict[str, Any] = {}
    for name in sorted(args):
        value = args[name]
        if (
            name in PATH_ARGS_IGNORED
            or is_secret_name(name)
            or not isinstance(value, str)
            or not value.strip()
        ):
            continue
        part = _local_part(name, value) or _hub_part(value, args)
        if part is not None:
            parts[name] = part
    if not parts:
        return ContentFingerprint()
    return ContentFingerprint(hash_string(canonical_json(parts))[:16], tuple(parts))


# -- local files ------------------------------------------------------------------------------------


def _local_part(name: str, value: str) -> dict[str, Any] | None:
    path = Path(os.path.expanduser(value.strip()))
    if name == "pretrained" and value.strip() == "demo":  # what resolve_pretrained loads
        from lmms_eval.models.hf.backend import DEMO_FOLDER

        path = DEMO_FOLDER
    try:
        if path.is_file():
            return {"file": _describe(path, path.name, _Budget())}
        if path.is_dir():
            return {"folder": _describe_folder(path)}
    except OSError as exc:  # unreadable: the key changes (a miss), never a wrong hit
        return {"error": f"{type(exc).__name__}: {exc}"}
    return None


class _Budget:
    """How many bytes of small files may still be hashed."""

    def __init__(self) -> None:
        self.left = HASH_BUDGET_BYTES


def _describe(path: Path, relative: str, budget: _Budget) -> list[Any]:
    info = path.stat()
    if info.st_size <= SMALL_FILE_BYTES and info.st_size <= budget.left:
        budget.left -= info.st_size
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 16), b""):
                digest.update(block)
        return [relative, info.st_size, "sha256", digest.hexdigest()]
    return [relative, info.st_size, "mtime_ns", info.st_mtime_ns]


def _describe_folder(folder: Path) -> list[Any]:
    files: list[Any] = []
    budget = _Budget()
    for root, dirs, names in os.walk(folder):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth + 1 < MAX_DEPTH else []
        for name in sorted(n for n in names if not n.startswith(".")):
            if len(files) >= MAX_FILES:
                logger.info(
                    "response cache: %s has more than %d files; the model fingerprint covers the first %d",
                    folder,
                    MAX_FILES,
                    MAX_FILES,
                )
                return [*files, "truncated"]
            path = Path(root) / name
            try:
                files.append(_describe(path, path.relative_to(folder).as_posix(), budget))
            except OSError:  # a dangling link, a file removed meanwhile
                files.append([path.relative_to(folder).as_posix(), "unreadable"])
    return files


# -- the local Hugging Face cache ------------------------------------------------------------------------


def _hub_part(value: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    from lmms_eval.models.hf.hub import hub_cache_dir, looks_like_hub_id

    repo = value.strip()
    if not looks_like_hub_id(repo):
        return None
    revision = str(args.get("revision") or "main")
    if ".." in revision:
        return None
    folders = [Path(hub_cache_dir())]
    if isinstance(args.get("cache_dir"), str):
        folders.insert(0, Path(os.path.expanduser(args["cache_dir"])))
    for cache in folders:
        ref = cache / f"models--{repo.replace('/', '--')}" / "refs" / revision
        try:
            commit = ref.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if commit:
            return {"hub_commit": commit}
    return None


__all__ = [
    "HASH_BUDGET_BYTES",
    "MAX_DEPTH",
    "MAX_FILES",
    "PATH_ARGS_IGNORED",
    "SMALL_FILE_BYTES",
    "ContentFingerprint",
    "given_fingerprint",
    "model_content_fingerprint",
    "offers_fingerprint",
]
