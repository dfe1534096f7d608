"""``--dataset_root``: run Hub tasks on local copies of their datasets without editing YAML.

A task's Hub id ``owner/name`` (with its ``dataset_name`` config) is looked up under the root as

1. ``ROOT/owner/name`` (``lmms-lab/X`` and ``lmms-lab-encoder/X`` stand in for each other: the
   published package moved its image datasets from the first to the second), then
2. ``ROOT/name``.

Inside that folder, with a config the ``<config>/`` subfolder is used when it exists. The folder is
either written by ``save_to_disk`` (``dataset_dict.json`` / ``state.json``), or holds data files whose
names start with the split: ``test.parquet``, ``validation.jsonl``, or the Hub's own layout
(``data/test-00000-of-00002.parquet``, ``<config>/dev-00000-of-00001.parquet``), so a snapshot
downloaded with ``huggingface-cli download --repo-type dataset`` works as it is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator

from lmms_eval.errors import DatasetError, did_you_mean

logger = logging.getLogger(__name__)

ENV_VAR = "LMMS_EVAL_DATASET_ROOT"
DATA_EXTENSIONS = {
    ".parquet": "parquet",
    ".jsonl": "json",
    ".json": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".arrow": "arrow",
}
# owners that hold the same datasets under different names
_OWNER_ALIASES = (("lmms-lab", "lmms-lab-encoder"),)
_SPLIT_OF_FILE = re.compile(r"^([^-.]+)")


def resolve_root(dataset_root: str | None) -> str | None:
    """The dataset root in effect: the argument, else ``$LMMS_EVAL_DATASET_ROOT``, else None."""
    root = dataset_root or os.environ.get(ENV_VAR) or None
    if root is None:
        return None
    root = os.path.abspath(os.path.expanduser(root))
    if not os.path.isdir(root):
        raise DatasetError(f"--dataset_root '{root}' is not a folder")
    return root


@contextlib.contextmanager
def exported_root(root: str | None) -> Iterator[None]:
    """``root`` as ``$LMMS_EVAL_DATASET_ROOT`` while the block runs: task helpers that find files
    themselves (the video tasks' ``doc_to_visual``) read it there. A run and ``tasks validate``
    both resolve media inside this block, so they accept the same local copies."""
    if not root:
        yield
        return
    before = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = root
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = before


def _candidates(root: str, dataset_path: str) -> Iterator[str]:
    yield os.path.join(root, dataset_path)
    owner, _, name = dataset_path.partition("/")
    if name:
        for pair in _OWNER_ALIASES:
            if owner in pair:
                for other in pair:
                    if other != owner:
                        yield os.path.join(root, other, name)
        yield os.path.join(root, name)


def find_local_copy(root: str, dataset_path: str) -> str | None:
    """The folder under ``root`` that holds ``dataset_path``, or None."""
    for candidate in _candidates(root, dataset_path):
        if os.path.isdir(candidate):
            return candidate
    return None


def searched(root: str, dataset_path: str) -> list[str]:
    return list(dict.fromkeys(_candidates(root, dataset_path)))


def config_folder(folder: str, config: str | None, task_name: str) -> str:
    """``folder/<config>`` when it exists; ``folder`` for no config or a flat copy of one config."""
    if not config:
        return folder
    sub = os.path.join(folder, config)
    if os.path.isdir(sub):
        return sub
    subdirs = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)) and d != "data")
    if subdirs:  # a copy of a dataset with several configs, but not this one
        raise DatasetError(
            f"task '{task_name}': config '{config}' is not in the local dataset '{folder}' "
            f"(configs: {', '.join(subdirs)}).{did_you_mean(config, subdirs)}"
        )
    return folder


def data_files_by_split(folder: str) -> tuple[str, dict[str, list[str]]]:
    """``(builder, {split: files})`` for the data files of a local dataset folder.

    Files directly in ``folder`` and in its ``data/`` subfolder count; the split is the file name up
    to the first ``-`` or ``.``. All files must be of one format.
    """
    found: dict[str, list[str]] = {}
    builders: set[str] = set()
    for where in (folder, os.path.join(folder, "data")):
        if not os.path.isdir(where):
            continue
        for name in sorted(os.listdir(where)):
            path = os.path.join(where, name)
            ext = os.path.splitext(name)[1].lower()
            if not os.path.isfile(path) or ext not in DATA_EXTENSIONS:
                continue
            match = _SPLIT_OF_FILE.match(name)
            if match is None:
                continue
            builders.add(DATA_EXTENSIONS[ext])
            found.setdefault(match.group(1), []).append(path)
    if not found:
        raise DatasetError(
            f"local dataset folder '{folder}' has no data files: expected a save_to_disk folder or files "
            f"named '<split>.<ext>' / '<split>-00000-of-00001.<ext>' ({', '.join(DATA_EXTENSIONS)})"
        )
    if len(builders) > 1:
        raise DatasetError(
            f"local dataset folder '{folder}' mixes data file formats ({', '.join(sorted(builders))}); "
            "keep one format per dataset"
        )
    return builders.pop(), found
