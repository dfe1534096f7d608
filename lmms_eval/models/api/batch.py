"""Provider batch APIs (``batch=true``): a task's requests sent as one batch, at the batch price.

:func:`run_batch` is the provider-neutral part: it submits the requests (or finds the batch a
previous run submitted for exactly these requests), polls until the batch ends, logging progress,
and returns the raw result of each request by its ``custom_id``. A provider is a
:class:`BatchProvider`: :class:`OpenAIBatches` (the OpenAI Batch API: upload a JSONL file, create a
batch, poll it, download its output and error files) or the ``claude`` backend's Anthropic Message
Batches. Every call to the provider goes through the shared retry loop
(:mod:`lmms_eval.models.api.retry`).

**Resuming.** The id of a submitted batch is kept (through :class:`StateStore`, the response cache
of a run with ``--use_cache``) under a digest of the batch's requests. A run that stops after
submitting (Ctrl-C, a crash, ``batch_max_wait_s`` reached) leaves the batch running at the
provider; running the same command again with the same cache finds its id and collects its
results instead of paying for a second batch. Without ``--use_cache`` a batch cannot be resumed.

The backends turn each raw result into an answer with the same code as their online path, so a
task scores the same either way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from lmms_eval.models.api.retry import Gate, RequestFailedError, RetryPolicy, call_with_retries

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_POLL_S = 30.0
DEFAULT_MAX_WAIT_S = 24 * 3600.0
# the most requests one batch takes (OpenAI: 50,000; Anthropic: 100,000)
MAX_BATCH_REQUESTS = 50_000


@dataclass(frozen=True)
class BatchItem:
    """One request of a batch: the provider's request body under an id unique in the batch."""

    custom_id: str
    body: dict[str, Any]


@dataclass(frozen=True)
class BatchState:
    """Where a batch stands: ``status`` as the provider says it, ``done`` of ``total`` requests
    finished; ``ended`` (results can be collected) or ``failed`` (no results will come)."""

    status: str
    done: int
    total: int
    ended: bool
    failed: bool = False
    detail: str = ""


class BatchProvider(Protocol):
    """What :func:`run_batch` needs of a provider's batch API."""

    name: str

    def submit(self, items: Sequence[BatchItem]) -> str: ...

    def state(self, batch_id: str) -> BatchState: ...

    def results(self, batch_id: str) -> dict[str, Any]: ...


class StateStore(Protocol):
    """A few JSON values kept across runs (``KeptState`` of the response cache is one)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class BatchSettings:
    """``batch_poll_s``: seconds between polls; ``batch_max_wait_s``: how long a run waits for its
    batch before it records the requests as failed (the batch keeps running and a rerun collects it)."""

    poll_s: float = DEFAULT_POLL_S
    max_wait_s: float = DEFAULT_MAX_WAIT_S


def batch_digest(provider: str, items: Sequence[BatchItem]) -> str:
    """A digest of a batch's requests: the same requests give the same digest in any run."""
    hasher = hashlib.sha256(provider.encode("utf-8"))
    for item in items:
        line = json.dumps({"custom_id": item.custom_id, "body": item.body}, sort_keys=True, default=str)
        hasher.update(line.encode("utf-8"))
    return hasher.hexdigest()[:32]


def run_batch(
    provider: BatchProvider,
    items: Sequence[BatchItem],
    settings: BatchSettings,
    gate: Gate | None = None,
    store: StateStore | None = None,
) -> dict[str, Any]:
    """Submit ``items`` (or resume their batch) and wait for it; the raw results by ``custom_id``.

    Raises :class:`RequestFailedError` when the batch cannot be submitted, fails at the provider,
    is still running after ``settings.max_wait_s``, or the run is stopped while it waits (the
    batch then keeps running; a rerun with the same cache collects it).
    """
    key = f"batch:{batch_digest(provider.name, items)}"
    kept = store.get(key) if store is not None else None
    batch_id = kept.get("batch_id") if kept and not kept.get("failed") else None
    if isinstance(batch_id, str):
        logger.info("%s batch %s: resuming the batch a previous run submitted", provider.name, batch_id)
    else:
        reason = gate.admit() if gate is not None else None
        if reason is not None:
            raise RequestFailedError(reason, attempts=0, kind="not_sent")
        batch_id = provider.submit(items)
        logger.info("%s batch %s: submitted %d requests", provider.name, batch_id, len(items))
        if store is not None:
            store.put(key, {"batch_id": batch_id, "provider": provider.name, "requests": len(items)})
    state = _wait(provider, batch_id, settings, gate)
    if state.failed:
        if store is not None:
            store.put(key, {"batch_id": batch_id, "provider": provider.name, "failed": True})
        raise RequestFailedError(
            f"{provider.name} batch {batch_id} {state.status}: {state.detail}".rstrip(": ")
        )
    return provider.results(batch_id)


def _wait(provider: BatchProvider, batch_id: str, settings: BatchSettings, gate: Gate | None) -> BatchState:
    """Poll until the batch ends or fails, logging progress when it changes."""
    started = time.monotonic()
    last: tuple[str, int] | None = None
    while True:
        state = provider.state(batch_id)
        if (state.status, state.done) != last:
            last = (state.status, state.done)
            logger.info(
                "%s batch %s: %s, %d of %d requests done",
                provider.name,
                batch_id,
                state.status,
                state.done,
                state.total,
            )
        if state.ended or state.failed:
            return state
        if time.monotonic() - started >= settings.max_wait_s:
            raise RequestFailedError(
                f"{provider.name} batch {batch_id} still {state.status} after {settings.max_wait_s:g} s "
                "(batch_max_wait_s); it keeps running: rerun with the same --use_cache to collect it"
            )
        slept = gate.sleep(settings.poll_s) if gate is not None else _sleep(settings.poll_s)
        if not slept:
            raise RequestFailedError(
                f"not collected: the run was stopped; {provider.name} batch {batch_id} keeps running "
                "(rerun with the same --use_cache to collect it)",
                attempts=0,
                kind="not_sent",
            )


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return True


def retried(call: Callable[[], T], policy: RetryPolicy, to_error: Callable[[Exception], Any]) -> T:
    """``call()`` through the shared retry loop; ``to_error`` turns its exceptions into
    :class:`~lmms_eval.models.api.retry.AttemptError` (or raises them on)."""

    def attempt() -> Any:
        try:
            return call()
        except Exception as exc:
            return to_error(exc)

    return call_with_retries(attempt, policy).value


# -- the OpenAI Batch API -----------------------------------------------------------------------------------


class ApiCaller(Protocol):
    """What :class:`OpenAIBatches` needs of the HTTP client (``ChatCompletionClient.call_api``)."""

    def call_api(
        self,
        method: str,
        path: str,
        json_body: dict[str, Any] | None = None,
        files: dict[str, Any] | None = None,
        data: dict[str, str] | None = None,
    ) -> bytes: ...


OPENAI_ENDED = frozenset({"completed", "expired", "cancelled"})
OPENAI_FAILED = frozenset({"failed"})


class OpenAIBatches:
    """The OpenAI Batch API over the ``openai`` backend's HTTP client: ``POST /files`` (purpose
    ``batch``), ``POST /batches``, ``GET /batches/{id}``, ``GET /files/{id}/content``. Results are
    the lines of the output and error files (``{"custom_id", "response": {"status_code", "body"},
    "error"}``)."""

    name = "openai"

    def __init__(self, client: ApiCaller, endpoint: str = "/v1/chat/completions") -> None:
        self.client = client
        self.endpoint = endpoint

    def submit(self, items: Sequence[BatchItem]) -> str:
        lines = [
            json.dumps({"custom_id": i.custom_id, "method": "POST", "url": self.endpoint, "body": i.body})
            for i in items
        ]
        content = ("\n".join(lines) + "\n").encode("utf-8")
        uploaded = self._json(
            "POST",
            "files",
            files={"file": ("batch.jsonl", content, "application/jsonl")},
            data={"purpose": "batch"},
        )
        body = {"input_file_id": uploaded["id"], "endpoint": self.endpoint, "completion_window": "24h"}
        return str(self._json("POST", "batches", json_body=body)["id"])

    def state(self, batch_id: str) -> BatchState:
        batch = self._json("GET", f"batches/{batch_id}")
        counts = batch.get("request_counts") or {}
        status = str(batch.get("status"))
        errors = (batch.get("errors") or {}).get("data") or []
        detail = "; ".join(str(e.get("message", e)) for e in errors if isinstance(e, dict))
        return BatchState(
            status=status,
            done=int(counts.get("completed") or 0) + int(counts.get("failed") or 0),
            total=int(counts.get("total") or 0),
            ended=status in OPENAI_ENDED,
            failed=status in OPENAI_FAILED,
            detail=detail,
        )

    def results(self, batch_id: str) -> dict[str, Any]:
        batch = self._json("GET", f"batches/{batch_id}")
        found: dict[str, Any] = {}
        for file_key in ("error_file_id", "output_file_id"):  # output lines win
            file_id = batch.get(file_key)
            if not file_id:
                continue
            content = self.client.call_api("GET", f"files/{file_id}/content")
            for line in content.decode("utf-8", "replace").splitlines():
                try:
                    record = json.loads(line) if line.strip() else None
                except ValueError:
                    record = None  # its request is answered as missing from the batch
                if isinstance(record, dict):
                    found[str(record.get("custom_id"))] = record
        return found

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            data = json.loads(self.client.call_api(method, path, **kwargs) or b"{}")
        except ValueError:
            raise RequestFailedError(f"malformed JSON in the answer of {method} {path}") from None
        if not isinstance(data, dict):
            raise RequestFailedError(f"malformed answer of {method} {path}: {str(data)[:100]}")
        return data


__all__ = [
    "MAX_BATCH_REQUESTS",
    "BatchItem",
    "BatchProvider",
    "BatchSettings",
    "BatchState",
    "OpenAIBatches",
    "StateStore",
    "batch_digest",
    "retried",
    "run_batch",
]
