"""``--cache_requests true|refresh|delete``: keep the built requests of a task between runs.

Building requests renders every prompt: ``doc_to_text`` templates or functions, few-shot sampling
and ``doc_to_choice``. With ``true`` the built requests of a task are stored as JSON and the next
run with the same settings loads them instead of rendering again; ``refresh`` rebuilds and
overwrites; ``delete`` removes the stored requests of the run's tasks and does not store new ones.

Only plain values are stored (context strings, generation kwargs, choices, doc ids, metadata). The
callables inside a request (``doc_to_visual``, ``doc_to_messages``, the loglikelihood target, the
multi-round ``doc_to_text``) cannot be serialised; the file records which one stood at which
position and they are bound again from the task on load, which costs nothing. The dataset is still
loaded (models read documents at inference time) and media are never stored.

A file is used only when everything that shapes the requests matches: the task fingerprint, chat
or simple requests, limit, offset, rank and world size, model-specific prompt kwargs, generation
kwargs, system instruction, few-shot seed, and a hash of the selected documents (without media).
Files live in ``$LM_HARNESS_CACHE_PATH``, else ``$LMMS_EVAL_HOME/requests``
(default ``~/.cache/lmms-eval/requests``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from functools import partial
from pathlib import Path
from typing import Any

from lmms_eval.api.doc_fields import BoundDocFunction, resolve_visual
from lmms_eval.api.instance import Instance
from lmms_eval.api.task import ConfigurableTask, _messages_adapter, _target_adapter, _visual_adapter
from lmms_eval.errors import ConfigError
from lmms_eval.utils import canonical_json, hash_string

logger = logging.getLogger(__name__)

REQUEST_CACHE_VERSION = 1
REQUEST_CACHE_MODES = ("true", "refresh", "delete")
REQUEST_CACHE_ENV = "LM_HARNESS_CACHE_PATH"

# (request type, argument position) -> the callable that stands there
_CALLABLE_ROLES: dict[tuple[str, int], str] = {
    ("generate_until", 0): "messages",
    ("generate_until", 2): "visual",
    ("generate_until_multi_round", 0): "messages",
    ("generate_until_multi_round", 2): "visual",
    ("generate_until_multi_round", 3): "text",
    ("loglikelihood", 0): "messages",
    ("loglikelihood", 1): "target",
    ("loglikelihood", 2): "visual",
}


def request_cache_dir() -> Path:
    env = os.environ.get(REQUEST_CACHE_ENV)
    if env:
        return Path(env).expanduser()
    from lmms_eval.utils import get_default_cache_dir

    return Path(get_default_cache_dir()) / "requests"


def parse_cache_requests(value: str | bool | None) -> str | None:
    """``true``/``refresh``/``delete`` (``None``, ``false`` or ``""``: off)."""
    if value is None or value is False:
        return None
    text = "true" if value is True else str(value).strip().lower()
    if text in ("", "false", "none", "0", "no"):
        return None
    if text not in REQUEST_CACHE_MODES:
        raise ConfigError(f"--cache_requests: expected true, refresh or delete, got {value!r}")
    return text


def _rebind(role: str, task: ConfigurableTask, doc_id: int) -> Any:
    """The callable ``construct_requests`` puts at a ``role`` position, bound again from the task."""
    if role == "messages":
        return BoundDocFunction(_messages_adapter(task, doc_id))
    if role == "target":
        return BoundDocFunction(_target_adapter(task))
    if role == "text":
        text = task.config.doc_to_text
        return BoundDocFunction(text, task.specific_kwargs) if callable(text) else None
    visual = partial(
        resolve_visual, task.config.doc_to_visual, kwargs=task.specific_kwargs, task=task.task_name
    )
    return BoundDocFunction(_visual_adapter(visual))


def _encode(request: Instance) -> dict[str, Any] | None:
    args: list[dict[str, Any]] = []
    for position, value in enumerate(request.args):
        if callable(value):
            role = _CALLABLE_ROLES.get((request.request_type, position))
            if role is None:
                return None
            args.append({"c": role})
        else:
            args.append({"v": value})
    return {"type": request.request_type, "idx": request.idx, "meta": request.metadata, "args": args}


def _decode(record: dict[str, Any], task: ConfigurableTask) -> Instance:
    meta = dict(record["meta"])
    doc_id = int(meta["doc_id"])
    args = tuple(_rebind(a["c"], task, doc_id) if "c" in a else a["v"] for a in record["args"])
    return Instance(record["type"], args, int(record["idx"]), meta)


class RequestCache:
    """Loads and stores the built requests of tasks (see the module docstring)."""

    def __init__(self, mode: str | bool, directory: str | os.PathLike[str] | None = None) -> None:
        parsed = parse_cache_requests(mode)
        if parsed is None:
            raise ConfigError(f"RequestCache: expected true, refresh or delete, got {mode!r}")
        self.mode = parsed
        self.directory = Path(directory).expanduser() if directory is not None else request_cache_dir()
        self.loaded: list[str] = []  # tasks whose requests came from a file
        self.stored: list[str] = []

    def _file(self, task: ConfigurableTask, chat: bool, selection: dict[str, Any]) -> Path:
        from lmms_eval.results.docs import doc_hash

        docs = task.scoring_docs
        ids = task.doc_ids(
            selection["limit"], selection["offset"], selection["rank"], selection["world_size"]
        )
        generation = task.generation_kwargs() if task.config.output_type.startswith("generate") else None
        key = hash_string(
            canonical_json(
                {
                    "v": REQUEST_CACHE_VERSION,
                    "task_fp": task.fingerprint(),
                    "chat": chat,
                    **selection,
                    "specific_kwargs": task.specific_kwargs,
                    "generation_kwargs": generation,
                    "system_instruction": task.system_instruction,
                    "fewshot_seed": task.fewshot_seed,
                    "docs": hash_string("".join(doc_hash(docs[i]) for i in ids)),
                }
            )
        )
        return self.directory / f"{_safe(task.task_name)}-{key[:20]}.json"

    def build(
        self,
        task: ConfigurableTask,
        chat: bool,
        limit: int | None = None,
        offset: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> list[Instance]:
        """The task's requests: from a stored file (mode ``true``), else built (and stored)."""

        def fresh() -> list[Instance]:
            return task.build_all_requests(
                chat=chat, limit=limit, offset=offset, rank=rank, world_size=world_size
            )

        if self.mode == "delete":
            for old in self.directory.glob(f"{_safe(task.task_name)}-*.json"):
                old.unlink(missing_ok=True)
            return fresh()
        selection = {"limit": limit, "offset": offset, "rank": rank, "world_size": world_size}
        path = self._file(task, chat, selection)
        if self.mode == "true":
            loaded = self._load(path, task)
            if loaded is not None:
                self.loaded.append(task.task_name)
                logger.info("task %s: %d requests loaded from %s", task.task_name, len(loaded), path)
                return loaded
        requests = fresh()
        self._store(path, requests, task.task_name)
        return requests

    def _load(self, path: Path, task: ConfigurableTask) -> list[Instance] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != REQUEST_CACHE_VERSION:
                return None
            return [_decode(record, task) for record in data["requests"]]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.warning("request cache %s is unreadable (%s); building the requests again", path, exc)
            return None

    def _store(self, path: Path, requests: list[Instance], task_name: str) -> None:
        records = [_encode(r) for r in requests]
        if any(r is None for r in records):
            logger.debug("request cache: %s has requests that cannot be stored", path.name)
            return
        try:
            text = json.dumps({"version": REQUEST_CACHE_VERSION, "requests": records}, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            logger.debug("request cache: %s not stored (%s)", path.name, exc)
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial_path = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            partial_path.write_text(text, encoding="utf-8")
            os.replace(partial_path, path)  # readers see the whole file or none
        except OSError as exc:
            logger.warning("request cache: cannot write %s (%s)", path, exc)
            return
        self.stored.append(task_name)

    def summary(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "path": str(self.directory),
            "loaded": list(self.loaded),
            "stored": list(self.stored),
        }


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "_", name)


__all__ = ["REQUEST_CACHE_MODES", "RequestCache", "parse_cache_requests", "request_cache_dir"]
