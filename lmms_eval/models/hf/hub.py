"""Where a ``pretrained`` checkpoint is loaded from: a local folder, the local Hugging Face cache, or the Hub.

:func:`resolve_checkpoint` decides before anything heavy loads, so a checkpoint that cannot be had
fails in seconds with one line instead of minutes of download retries and a traceback:

1. an existing folder is loaded as it is;
2. a Hub id (``Org/Name``) whose snapshot is complete in the local cache (``HF_HUB_CACHE``, else
   ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``) is loaded from that snapshot folder, with no
   network access at all;
3. otherwise, with ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set, it fails at once; else the
   Hub (``HF_ENDPOINT``) is asked for the checkpoint's ``config.json`` with a short timeout
   (:data:`HUB_PROBE_TIMEOUT_S`). If the Hub has it, transformers downloads it as usual; if the Hub
   cannot be reached, or says the repository does not exist, is private or gated, the error says
   so and what to do.

:func:`loading_errors` turns the errors transformers and huggingface_hub raise while loading
(multi-line ``OSError`` messages) into one-line :class:`CheckpointError` s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lmms_eval.errors import LmmsEvalError

logger = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"
HUB_PROBE_TIMEOUT_S = 3.0
_TRUE = ("1", "on", "yes", "true")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


class CheckpointError(LmmsEvalError):
    """A ``pretrained`` checkpoint cannot be found, reached or loaded."""


@dataclass(frozen=True)
class Checkpoint:
    """A resolved checkpoint: ``path`` is what ``from_pretrained`` gets (a folder or a Hub id)."""

    name: str
    path: str
    source: Literal["local", "cache", "hub"]


# -- environment ---------------------------------------------------------------------------------------


def hub_cache_dir() -> str:
    """The Hugging Face Hub cache folder, read from the environment now (not at import time)."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return os.path.expanduser(explicit)
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "huggingface"
    )
    return os.path.join(os.path.expanduser(home), "hub")


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_offline() -> str | None:
    """The variable that puts the Hub offline, if one does."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in _TRUE:
            return name
    return None


def looks_like_hub_id(value: str) -> bool:
    """``Org/Name`` or ``Name``: not a path (no leading ``.``, ``/``, ``~``, no second ``/``)."""
    return bool(_HUB_ID.match(value)) and ".." not in value and not value.endswith(".")


# -- resolution ----------------------------------------------------------------------------------------


def resolve_checkpoint(pretrained: str, model: str) -> Checkpoint:
    """Where to load ``pretrained`` from (see the module doc); a one-line error if it cannot be had."""
    folder = os.path.expanduser(pretrained)
    if os.path.isdir(folder):
        return Checkpoint(pretrained, folder, "local")
    if not looks_like_hub_id(pretrained):
        raise CheckpointError(
            f"model '{model}': pretrained={pretrained!r} is neither an existing folder nor a Hub id like "
            "'Org/Name'; pass a folder holding config.json or a Hub model id"
        )
    cache = hub_cache_dir()
    snapshot = cached_snapshot(pretrained, cache)
    if snapshot is not None:
        logger.info("%s: loading %s from the local cache (%s)", model, pretrained, snapshot)
        return Checkpoint(pretrained, snapshot, "cache")
    offline = hub_offline()
    if offline:
        problem = HubProblem("offline", f"{offline} is set")
    else:
        problem = probe_hub(pretrained, hub_endpoint())
    if problem is not None:
        raise CheckpointError(hub_problem_message(problem, pretrained, model, cache))
    logger.info("%s: %s is not cached; downloading it from %s", model, pretrained, hub_endpoint())
    return Checkpoint(pretrained, pretrained, "hub")


def cached_snapshot(repo_id: str, cache_dir: str) -> str | None:
    """The snapshot folder of ``repo_id`` (``main``) in the cache, if it holds config and weights."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir)
    except (ValueError, OSError) as exc:  # an id huggingface_hub rejects, an unreadable cache
        logger.debug("cache lookup of %s failed: %s", repo_id, exc)
        return None
    if not isinstance(found, str):
        return None
    folder = Path(found).parent
    return str(folder) if snapshot_complete(folder) else None


def snapshot_complete(folder: Path) -> bool:
    """Whether ``folder`` holds weights: a single weights file, or an index and all its shards."""
    if any((folder / name).is_file() for name in _WEIGHT_FILES):
        return True
    for index in _WEIGHT_INDEXES:
        path = folder / index
        if path.is_file():
            try:
                shards = set(json.loads(path.read_text(encoding="utf-8")).get("weight_map", {}).values())
            except (OSError, ValueError, AttributeError):
                return False
            return bool(shards) and all((folder / shard).is_file() for shard in shards)
    return False


# -- the Hub ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HubProblem:
    """Why the Hub did not give the checkpoint: ``kind`` and a one-line ``detail``."""

    kind: Literal["offline", "unreachable", "not_found", "gated", "no_config", "http"]
    detail: str


def probe_hub(repo_id: str, endpoint: str, timeout: float = HUB_PROBE_TIMEOUT_S) -> HubProblem | None:
    """Ask the Hub for ``repo_id``'s ``config.json`` (metadata only); ``None`` if it is there.

    The request runs in a daemon thread that is given up after ``timeout`` plus a second, so a name
    lookup that hangs cannot hold the run.
    """
    outcome: list[BaseException | None] = []

    def ask() -> None:
        from huggingface_hub import get_hf_file_metadata, hf_hub_url

        try:
            get_hf_file_metadata(hf_hub_url(repo_id, "config.json", endpoint=endpoint), timeout=timeout)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=ask, name="lmms-eval-hub-probe", daemon=True)
    worker.start()
    worker.join(timeout + 1.0)
    if not outcome:
        return HubProblem("unreachable", f"no answer within {timeout + 1.0:g} s")
    error = outcome[0]
    return None if error is None else classify_hub_error(error)


def classify_hub_error(error: BaseException) -> HubProblem:
    """The :class:`HubProblem` of an exception raised by a Hub request."""
    from huggingface_hub import errors

    remote_missing: Any = getattr(errors, "RemoteEntryNotFoundError", errors.EntryNotFoundError)
    if isinstance(error, errors.GatedRepoError):
        return HubProblem("gated", _first_line(error))
    if isinstance(error, (errors.RepositoryNotFoundError, errors.RevisionNotFoundError)):
        return HubProblem("not_found", _first_line(error))
    if isinstance(error, remote_missing) and not isinstance(error, errors.LocalEntryNotFoundError):
        return HubProblem("no_config", _first_line(error))
    if isinstance(error, errors.HfHubHTTPError):
        response: Any = getattr(error, "response", None)
        status = getattr(response, "status_code", None)
        return HubProblem("http", f"HTTP {status}" if status else _first_line(error))
    reason = _first_line(error) or type(error).__name__
    return HubProblem("unreachable", re.sub(r"^\[Errno -?\d+\] ", "", reason))


def hub_problem_message(problem: HubProblem, repo_id: str, model: str, cache: str) -> str:
    """The one-line error for ``problem``."""
    endpoint = hub_endpoint()
    head = f"model '{model}': checkpoint '{repo_id}'"
    login = "log in (hf auth login, or set HF_TOKEN)"
    if problem.kind == "not_found":
        return (
            f"{head} was not found on the Hub ({endpoint}): it does not exist, or it is private; "
            f"check the id, or {login} if it is private"
        )
    if problem.kind == "gated":
        return f"{head} is gated on the Hub; accept its terms at {endpoint}/{repo_id} and {login}"
    if problem.kind == "no_config":
        return (
            f"{head} has no config.json on the Hub ({endpoint}), so it is not a transformers "
            "checkpoint; pass a transformers model id or a local folder"
        )
    not_cached = f"{head} is not in the local Hugging Face cache ({cache})"
    fix = f"download it first (hf download {repo_id}) or pass pretrained=<local folder>"
    if problem.kind == "offline":
        return f"{not_cached} and {problem.detail}; {fix}"
    if problem.kind == "http":
        return f"{not_cached}, and the Hub ({endpoint}) answered {problem.detail}; {fix}"
    return f"{not_cached} and the Hub ({endpoint}) cannot be reached ({problem.detail}); {fix}"


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else ""


# -- loading ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def loading_errors(checkpoint: Checkpoint, model: str) -> Iterator[None]:
    """Re-raise what ``from_pretrained`` raises for missing or unreachable files as one line.

    transformers and huggingface_hub report these as ``OSError`` subclasses with messages of several
    lines; anything else (a bug, an unsupported architecture) goes through unchanged.
    """
    try:
        yield
    except LmmsEvalError:
        raise
    except OSError as exc:
        problem = classify_hub_error(exc)
        if problem.kind in ("not_found", "gated", "no_config"):
            raise CheckpointError(
                hub_problem_message(problem, checkpoint.name, model, hub_cache_dir())
            ) from exc
        where = "" if checkpoint.path == checkpoint.name else f" (from {checkpoint.path})"
        raise CheckpointError(
            f"model '{model}': could not load checkpoint '{checkpoint.name}'{where}: "
            f"{_first_line(exc) or type(exc).__name__}"
        ) from exc


__all__ = [
    "HUB_PROBE_TIMEOUT_S",
    "Checkpoint",
    "CheckpointError",
    "HubProblem",
    "cached_snapshot",
    "classify_hub_error",
    "hub_cache_dir",
    "hub_endpoint",
    "hub_offline",
    "loading_errors",
    "looks_like_hub_id",
    "probe_hub",
    "resolve_checkpoint",
]
