"""Python clients of the HTTP evaluation server: :class:`EvalClient` (sync) and :class:`AsyncEvalClient`.

Both speak the server's JSON API and return its documents as plain dicts::

    client = EvalClient("http://127.0.0.1:8000")
    job = client.evaluate(model="dummy", tasks=["demo_qa"], limit=4)
    done = client.wait_for_job(job["job_id"], poll_interval=1.0, timeout=600)
    print(done["status"], done["result"])

The bearer token comes from ``token=`` or the ``LMMS_EVAL_SERVER_TOKEN`` environment variable. It is
sent only in the ``Authorization`` header and never appears in exceptions, log records or ``repr``.
An HTTP error raises :class:`EvalServerError` with a one-line message (status code and the server's
``detail``). Idempotent ``GET`` requests are retried a few times with a short backoff when the
connection fails; submissions, cancellations and merges are never retried.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from lmms_eval.errors import LmmsEvalError
from lmms_eval.secrets import REDACTED, redact_text, register_secret

logger = logging.getLogger(__name__)

TOKEN_ENV = "LMMS_EVAL_SERVER_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8000"
TERMINAL_STATES = frozenset({"completed", "failed", "cancelled"})
GET_RETRIES = 3
RETRY_BACKOFF_S = 0.2
_MAX_DETAIL_CHARS = 500
_CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout)


class EvalServerError(LmmsEvalError):
    """The eval server answered with an HTTP error, or could not be reached."""

    def __init__(self, message: str, status_code: int | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.detail = detail


def _detail(detail: bool) -> dict[str, str]:
    """The listing query: ``detail=1`` asks the server for its full listing (a plain list otherwise)."""
    return {"detail": "1"} if detail else {}


def _format_detail(detail: Any) -> str:
    """The server's ``detail`` as one line (FastAPI validation lists become ``loc: msg; ...``)."""
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if isinstance(item, Mapping) and "msg" in item:
                loc = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
                parts.append(f"{loc}: {item['msg']}" if loc else str(item["msg"]))
            else:
                parts.append(_format_detail(item))
        text = "; ".join(parts)
    elif isinstance(detail, str):
        text = detail
    else:
        text = json.dumps(detail, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL_CHARS else text[: _MAX_DETAIL_CHARS - 3] + "..."


class _ClientCore:
    """What the sync and async clients share: URL, headers, payloads and error translation."""

    def __init__(self, base_url: str, token: str | None, timeout: float) -> None:
        url = base_url.strip().rstrip("/")
        self.base_url = url if "://" in url else f"http://{url}"
        self.timeout = timeout
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._token = token.strip() if token and token.strip() else None
        if self._token:
            register_secret(self._token)

    def __repr__(self) -> str:
        token = "set" if self._token else "none"
        return f"{type(self).__name__}(base_url={self.base_url!r}, token={token}, timeout={self.timeout})"

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _scrub(self, text: str) -> str:
        if self._token:
            text = text.replace(self._token, REDACTED)
        return redact_text(text)

    def _connect_error(self, exc: Exception) -> EvalServerError:
        reason = self._scrub(" ".join(str(exc).split())) or type(exc).__name__
        return EvalServerError(
            f"cannot reach the eval server at {self.base_url} ({reason}): is the server running? "
            "start it with: lmms-eval serve"
        )

    def _timeout_error(self, method: str, path: str) -> EvalServerError:
        return EvalServerError(
            f"the eval server at {self.base_url} did not answer {method} {path} within {self.timeout:g}s"
        )

    def _check(self, response: httpx.Response, method: str, path: str) -> None:
        if response.status_code < 400:
            return
        try:
            body: Any = response.json()
            detail = body.get("detail", body) if isinstance(body, Mapping) else body
        except ValueError:
            detail = response.text or response.reason_phrase
        text = self._scrub(_format_detail(detail))
        hint = ""
        if response.status_code == 401:
            hint = f" (pass token= to the client or set {TOKEN_ENV})"
        raise EvalServerError(
            f"eval server {method} {path} failed: HTTP {response.status_code}: {text}{hint}",
            status_code=response.status_code,
            detail=text,
        )

    def _json(self, response: httpx.Response, method: str, path: str) -> Any:
        self._check(response, method, path)
        try:
            return response.json()
        except ValueError:
            raise EvalServerError(
                f"eval server {method} {path} returned a body that is not JSON (HTTP {response.status_code})"
            ) from None

    @staticmethod
    def _evaluate_payload(
        model: str,
        tasks: str | list[str],
        model_args: Mapping[str, Any] | str | None,
        options: Mapping[str, Any],
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": model,
            "tasks": list(tasks) if isinstance(tasks, tuple) else tasks,
        }
        if model_args is not None:
            payload["model_args"] = dict(model_args) if isinstance(model_args, Mapping) else model_args
        payload.update({k: v for k, v in options.items() if v is not None})
        return payload

    @staticmethod
    def _merge_payload(
        checkpoint_path: str | os.PathLike[str], output_path: str | os.PathLike[str], kw: Mapping[str, Any]
    ) -> dict[str, Any]:
        return {"checkpoint_path": os.fspath(checkpoint_path), "output_path": os.fspath(output_path), **kw}

    @staticmethod
    def _timed_out(job_id: str, status: str, timeout: float) -> TimeoutError:
        return TimeoutError(f"job {job_id} did not finish within {timeout:g}s (last status: {status})")


class EvalClient(_ClientCore):
    """Synchronous client of the eval server (an ``httpx.Client``; use it as a context manager)."""

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, timeout: float = 30.0) -> None:
        super().__init__(base_url, token, timeout)
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers(), timeout=timeout)

    def __enter__(self) -> EvalClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        attempts = GET_RETRIES + 1 if method == "GET" else 1
        for attempt in range(attempts):
            try:
                return self._http.request(method, path, **kwargs)
            except _CONNECT_ERRORS as exc:
                if attempt + 1 >= attempts:
                    raise self._connect_error(exc) from None
                logger.warning("eval server at %s unreachable, retrying %s %s", self.base_url, method, path)
                time.sleep(RETRY_BACKOFF_S * 2**attempt)
            except httpx.TimeoutException:
                raise self._timeout_error(method, path) from None
        raise AssertionError("unreachable")

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._json(self._send(method, path, **kwargs), method, path)

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def evaluate(
        self,
        model: str,
        tasks: str | list[str],
        model_args: Mapping[str, Any] | str | None = None,
        *,
        training_run: str | None = None,
        step: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Submit a job (returns at once with the queued job); ``options`` are run settings.

        ``training_run``, ``step`` and ``metadata`` tie the job to a training run: they are stored
        with the job, written into its results file and listed by :meth:`list_jobs`."""
        options = {**options, "training_run": training_run, "step": step}
        options["metadata"] = dict(metadata) if metadata is not None else None
        job = self._call("POST", "/evaluate", json=self._evaluate_payload(model, tasks, model_args, options))
        logger.info("submitted eval job %s (%s on %s)", job.get("job_id"), model, tasks)
        return job

    def get_job(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/jobs/{job_id}")

    def list_jobs(self, training_run: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """The jobs of one training run by step (each with its status and scores), or every job."""
        params: dict[str, Any] = {"limit": limit}
        if training_run is not None:
            params["training_run"] = training_run
        return self._call("GET", "/jobs", params=params)["jobs"]

    def wait_for_job(
        self, job_id: str, poll_interval: float = 5.0, timeout: float | None = None
    ) -> dict[str, Any]:
        """Poll until the job is completed, failed or cancelled; ``TimeoutError`` after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get_job(job_id)
            if job.get("status") in TERMINAL_STATES:
                return job
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._timed_out(job_id, str(job.get("status")), timeout or 0.0)
                time.sleep(min(poll_interval, remaining))
            else:
                time.sleep(poll_interval)

    def cancel_job(self, job_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"/jobs/{job_id}")

    def get_queue(self) -> Any:
        return self._call("GET", "/queue")

    def list_tasks(self, detail: bool = True) -> Any:
        """``{tasks, groups, tags}``; with ``detail=False`` the plain ``{tasks}`` list of names."""
        return self._call("GET", "/tasks", params=_detail(detail))

    def list_models(self, detail: bool = True) -> Any:
        """``{models: [{model_id, aliases, chat, simple}]}``; with ``detail=False`` model ids only."""
        return self._call("GET", "/models", params=_detail(detail))

    def logs(self, job_id: str) -> str:
        """The job's log so far, as text."""
        path = f"/jobs/{job_id}/logs"
        response = self._send("GET", path, headers={"Accept": "text/plain"})
        self._check(response, "GET", path)
        return response.text

    def follow_logs(self, job_id: str) -> Iterator[str]:
        """The job's log lines as they are written, until the job ends."""
        path = f"/jobs/{job_id}/logs"
        timeout = httpx.Timeout(self.timeout, read=None)
        try:
            with self._http.stream("GET", path, params={"follow": "true"}, timeout=timeout) as response:
                if response.status_code >= 400:
                    response.read()
                    self._check(response, "GET", path)
                yield from response.iter_lines()
        except _CONNECT_ERRORS as exc:
            raise self._connect_error(exc) from None

    def merge(
        self, checkpoint_path: str | os.PathLike[str], output_path: str | os.PathLike[str], **kw: Any
    ) -> dict[str, Any]:
        """Merge a sharded checkpoint into a Hugging Face folder on the server."""
        return self._call("POST", "/merge", json=self._merge_payload(checkpoint_path, output_path, kw))


class AsyncEvalClient(_ClientCore):
    """Asynchronous client of the eval server (an ``httpx.AsyncClient``; use ``async with``)."""

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, timeout: float = 30.0) -> None:
        super().__init__(base_url, token, timeout)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers(), timeout=timeout)

    async def __aenter__(self) -> AsyncEvalClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        attempts = GET_RETRIES + 1 if method == "GET" else 1
        for attempt in range(attempts):
            try:
                return await self._http.request(method, path, **kwargs)
            except _CONNECT_ERRORS as exc:
                if attempt + 1 >= attempts:
                    raise self._connect_error(exc) from None
                logger.warning("eval server at %s unreachable, retrying %s %s", self.base_url, method, path)
                await asyncio.sleep(RETRY_BACKOFF_S * 2**attempt)
            except httpx.TimeoutException:
                raise self._timeout_error(method, path) from None
        raise AssertionError("unreachable")

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._json(await self._send(method, path, **kwargs), method, path)

    async def health(self) -> dict[str, Any]:
        return await self._call("GET", "/health")

    async def evaluate(
        self,
        model: str,
        tasks: str | list[str],
        model_args: Mapping[str, Any] | str | None = None,
        *,
        training_run: str | None = None,
        step: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Submit a job (returns at once with the queued job); ``options`` are run settings.

        ``training_run``, ``step`` and ``metadata`` tie the job to a training run: they are stored
        with the job, written into its results file and listed by :meth:`list_jobs`."""
        options = {**options, "training_run": training_run, "step": step}
        options["metadata"] = dict(metadata) if metadata is not None else None
        payload = self._evaluate_payload(model, tasks, model_args, options)
        job = await self._call("POST", "/evaluate", json=payload)
        logger.info("submitted eval job %s (%s on %s)", job.get("job_id"), model, tasks)
        return job

    async def get_job(self, job_id: str) -> dict[str, Any]:
        return await self._call("GET", f"/jobs/{job_id}")

    async def list_jobs(self, training_run: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """The jobs of one training run by step (each with its status and scores), or every job."""
        params: dict[str, Any] = {"limit": limit}
        if training_run is not None:
            params["training_run"] = training_run
        return (await self._call("GET", "/jobs", params=params))["jobs"]

    async def wait_for_job(
        self, job_id: str, poll_interval: float = 5.0, timeout: float | None = None
    ) -> dict[str, Any]:
        """Poll until the job is completed, failed or cancelled; ``TimeoutError`` after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = await self.get_job(job_id)
            if job.get("status") in TERMINAL_STATES:
                return job
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._timed_out(job_id, str(job.get("status")), timeout or 0.0)
                await asyncio.sleep(min(poll_interval, remaining))
            else:
                await asyncio.sleep(poll_interval)

    async def cancel_job(self, job_id: str) -> dict[str, Any]:
        return await self._call("DELETE", f"/jobs/{job_id}")

    async def get_queue(self) -> Any:
        return await self._call("GET", "/queue")

    async def list_tasks(self, detail: bool = True) -> Any:
        """``{tasks, groups, tags}``; with ``detail=False`` the plain ``{tasks}`` list of names."""
        return await self._call("GET", "/tasks", params=_detail(detail))

    async def list_models(self, detail: bool = True) -> Any:
        """``{models: [{model_id, aliases, chat, simple}]}``; with ``detail=False`` model ids only."""
        return await self._call("GET", "/models", params=_detail(detail))

    async def logs(self, job_id: str) -> str:
        """The job's log so far, as text."""
        path = f"/jobs/{job_id}/logs"
        response = await self._send("GET", path, headers={"Accept": "text/plain"})
        self._check(response, "GET", path)
        return response.text

    async def follow_logs(self, job_id: str) -> AsyncIterator[str]:
        """The job's log lines as they are written, until the job ends."""
        path = f"/jobs/{job_id}/logs"
        timeout = httpx.Timeout(self.timeout, read=None)
        try:
            async with self._http.stream("GET", path, params={"follow": "true"}, timeout=timeout) as response:
                if response.status_code >= 400:
                    await response.aread()
                    self._check(response, "GET", path)
                async for line in response.aiter_lines():
                    yield line
        except _CONNECT_ERRORS as exc:
            raise self._connect_error(exc) from None

    async def merge(
        self, checkpoint_path: str | os.PathLike[str], output_path: str | os.PathLike[str], **kw: Any
    ) -> dict[str, Any]:
        """Merge a sharded checkpoint into a Hugging Face folder on the server."""
        return await self._call("POST", "/merge", json=self._merge_payload(checkpoint_path, output_path, kw))
