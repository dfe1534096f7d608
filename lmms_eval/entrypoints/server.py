"""The HTTP eval server: FastAPI routes over the job store and the scheduler."""

from __future__ import annotations

import asyncio
import hmac
import importlib
import importlib.util
import json
import logging
import math
import secrets as token_secrets
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

from lmms_eval.entrypoints.error_handler import CatchAll
from lmms_eval.entrypoints.paths import confine_request, confined
from lmms_eval.entrypoints.protocol import (
    TERMINAL,
    EvaluateRequest,
    JobInfo,
    JobList,
    JobScore,
    JobSummary,
    MergeRequest,
    Progress,
    QueueInfo,
)
from lmms_eval.entrypoints.scheduler import Scheduler
from lmms_eval.entrypoints.server_args import ServerArgs
from lmms_eval.entrypoints.store import JobRow, JobStore, StateLock, StoreError, StoreFullError
from lmms_eval.errors import ConfigError, LmmsEvalError, did_you_mean
from lmms_eval.http_guard import Answer, Auth, HttpGuard, allowed_names, check_token
from lmms_eval.secrets import redact, register_secret
from lmms_eval.settings import EvalSettings
from lmms_eval.utils import iso_timestamp

logger = logging.getLogger(__name__)


def read_result(output_path: str) -> dict[str, Any] | None:
    """The newest results document under a job's output folder, or None."""
    from lmms_eval.results import ResultsFile, find_runs

    runs = [r for r in find_runs(output_path) if r.results is not None]
    if not runs:
        return None
    newest = max(runs, key=lambda r: r.newness())
    assert newest.results is not None
    try:
        return redact(ResultsFile.load(newest.results).to_dict())
    except LmmsEvalError as exc:
        logger.warning("job results unreadable: %s", exc)
        return None


def iso_time(seconds: float | None) -> str | None:
    """A Unix time as the published server's ISO 8601 string (UTC); ``None`` stays ``None``."""
    return None if seconds is None else iso_timestamp(datetime.fromtimestamp(seconds, timezone.utc))


def job_summary(row: JobRow) -> JobSummary:
    """A line of ``GET /jobs``: the job's state, training step and (once completed) scores."""
    request = redact(row.request)
    scores: list[JobScore] = []
    result = read_result(row.output_path) if row.status == "completed" else None
    if result is not None:
        from lmms_eval.results import ResultsFile

        for task, entry in ResultsFile.from_dict(result).tasks():
            scores.extend(
                JobScore(
                    task=task,
                    metric=m.metric,
                    filter=m.filter,
                    **{k: _finite(getattr(m, k)) for k in ("value", "stderr", "ci_lower", "ci_upper")},
                )
                for m in entry.metrics()
            )
    error_lines = (row.error or "").strip().splitlines()
    return JobSummary(
        job_id=row.job_id,
        status=row.status,  # type: ignore[arg-type]
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        model=request.get("model"),
        tasks=request.get("tasks"),
        training_run=row.training_run,
        step=row.step,
        metadata=row.metadata,
        error=error_lines[-1] if error_lines else None,
        scores=scores,
    )


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


class _Index:
    """Task and model listings, computed once in a thread and served from memory."""

    def __init__(self) -> None:
        self.tasks: dict[str, Any] | None = None
        self.ready = threading.Event()

    def build(self) -> None:
        try:
            from lmms_eval.tasks import TaskManager

            manager = TaskManager()
            self.tasks = {
                "tasks": manager.all_subtasks,
                "groups": manager.all_groups,
                "tags": manager.all_tags,
            }
        except Exception as exc:
            logger.error("task index failed: %s", exc)
            self.tasks = {"tasks": [], "groups": [], "tags": [], "error": str(exc)}
        finally:
            self.ready.set()


def _models() -> list[dict[str, Any]]:
    from lmms_eval.models import ensure_registry

    return [
        {
            "model_id": m.model_id,
            "aliases": list(m.aliases),
            "chat": bool(m.chat_class_path),
            "simple": bool(m.simple_class_path),
        }
        for m in ensure_registry().manifests()
    ]


def resolve_token(args: ServerArgs) -> str | None:
    """The configured token; beyond loopback without one, a new token printed once to stderr."""
    token = args.configured_token()
    if token is None and not args.is_loopback():
        token = token_secrets.token_urlsafe(32)
        print(f"lmms-eval serve: no token configured; use this bearer token:\n    {token}", file=sys.stderr)
    if token:
        register_secret(token)
    return token


def _validation_message(exc: RequestValidationError) -> str:
    error = exc.errors()[0]
    loc = [str(p) for p in error.get("loc", ()) if p != "body"]
    name = ".".join(loc) or "body"
    if error.get("type") == "extra_forbidden":
        known = list(EvaluateRequest.model_fields)
        return f"{name}: unknown field.{did_you_mean(loc[-1], known)}"
    return f"{name}: {error.get('msg', 'invalid')}"


class Service:
    """What the routes share: arguments, store, scheduler, index.

    It holds the state folder's lock from construction to :meth:`close`: a second server on the
    same folder, or a damaged job store, raises :class:`StateError` here (one line)."""

    def __init__(self, args: ServerArgs, token: str | None) -> None:
        self.args = args
        self.token = token
        self.lock = StateLock(args.state_path())
        self.lock.acquire(args.host, args.port)
        try:
            self.store = JobStore(args.state_path() / "jobs.db")
            self.scheduler = Scheduler(args, self.store)
        except BaseException:
            self.lock.release()
            raise
        self.index = _Index()
        self.models: list[dict[str, Any]] | None = None

    def close(self) -> None:
        """Stop the jobs (their temporary folders removed), close the store, release the folder."""
        try:
            self.scheduler.stop()
            self.store.close()
        finally:
            self.lock.release()

    def health(self) -> tuple[int, dict[str, Any]]:
        """``/health``: 503 while the job store cannot be read; ``degraded`` while its disk is full."""
        try:
            counts = self.store.counts()
        except StoreError as exc:
            return 503, {"status": "error", "detail": str(exc)}
        if self.store.full:
            return 200, {"status": "degraded", "detail": self.store.full, "jobs": counts}
        # "healthy" is the published word (its client checks it); our client accepts "ok" too
        return 200, {"status": "healthy", "jobs": counts, "queue_size": counts.get("queued", 0)}

    def job_info(self, row: JobRow) -> JobInfo:
        result = read_result(row.output_path) if row.status == "completed" else None
        return JobInfo(
            job_id=row.job_id,
            status=row.status,  # type: ignore[arg-type]
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
            request=redact(row.request),
            result=result,
            error=row.error,
            progress=self.progress(row),
            position=self.store.position(row.job_id) if row.status == "queued" else None,
            position_in_queue=self.store.position(row.job_id) if row.status == "queued" else None,
            completed_at=iso_time(row.finished_at),
            training_run=row.training_run,
            step=row.step,
            metadata=row.metadata,
            executor_job_id=row.executor_job_id,
        )

    def progress(self, row: JobRow) -> Progress | None:
        if row.status == "queued":
            return None
        reported = self.scheduler.progress(row.job_id)
        try:
            return Progress.model_validate(reported) if reported else None
        except ValueError:
            return None

    def row(self, job_id: str) -> JobRow:
        row = self.store.get(job_id)
        if row is None:
            raise HTTPException(404, f"no job '{job_id}'")
        return row

    def submit(self, body: EvaluateRequest) -> JobInfo:
        job_id = uuid.uuid4().hex[:16]
        refusal = self.scheduler.refusal(body.num_gpus)
        if refusal:
            raise HTTPException(422, refusal)
        keywords = confine_request(self.args, job_id, body.settings_keywords())
        try:
            EvalSettings.from_keywords("request", **keywords)
        except ConfigError as exc:
            raise HTTPException(422, str(exc)) from None
        register_secret_values(keywords)
        out = keywords["output_path"]
        try:
            queued = self.store.insert(
                job_id, keywords, body.num_gpus, out, self.args.max_queued, body.training()
            )
        except StoreFullError as exc:
            raise HTTPException(507, f"the job was not queued: {exc}") from None
        if not queued:
            raise HTTPException(429, f"the queue is full ({self.args.max_queued} jobs); try later")
        self.scheduler.wake()
        return self.job_info(self.row(job_id))


def register_secret_values(keywords: dict[str, Any]) -> None:
    from lmms_eval.secrets import register_secrets_from

    args = keywords.get("model_args")
    if isinstance(args, dict):
        register_secrets_from(args)


def _auth(token: str) -> Auth:
    """The bearer-token check the guard runs before a body is read."""
    expected = token.encode()

    def check(headers: Mapping[str, str], _scope: Any) -> Answer | None:
        header = headers.get("authorization", "")
        given = header[7:] if header.lower().startswith("bearer ") else ""
        if hmac.compare_digest(given.encode(), expected):
            return None
        return Answer(401, "missing or wrong bearer token", (("WWW-Authenticate", "Bearer"),))

    return check


async def _follow_log(service: Service, job_id: str, follow: bool) -> AsyncIterator[bytes]:
    path = service.scheduler.log_path(job_id)
    offset = 0
    while True:
        if path.exists():
            with path.open("rb") as f:
                f.seek(offset)
                chunk = f.read()
            offset += len(chunk)
            if chunk:
                yield chunk
        row = service.store.get(job_id)
        if not follow or row is None or row.status in TERMINAL:
            if row is None or not path.exists() or path.stat().st_size <= offset:
                return
            continue
        await asyncio.sleep(0.2)


async def _events(service: Service, job_id: str) -> AsyncIterator[str]:
    """Server-sent events: ``status`` when the status changes, ``progress`` when only progress does."""
    last: str | None = None
    last_status: str | None = None
    while True:
        row = service.store.get(job_id)
        if row is None:
            return
        payload: dict[str, Any] = {"job_id": job_id, "status": row.status, "started_at": row.started_at}
        progress = service.progress(row)
        if progress is not None:
            payload["progress"] = progress.model_dump()
        if row.status in TERMINAL:
            payload["error"] = row.error
        text = json.dumps(payload)
        if text != last:
            kind = "status" if row.status != last_status else "progress"
            yield f"event: {kind}\ndata: {text}\n\n"
            last, last_status = text, row.status
        if row.status in TERMINAL:
            return
        await asyncio.sleep(0.25)


def _job_routes(router: APIRouter, service: Service) -> None:
    @router.post("/evaluate", response_model=JobInfo)
    async def evaluate(body: EvaluateRequest) -> JobInfo:
        # about 1 ms (validation and one SQLite insert): answered on the loop, no thread hand-off
        return service.submit(body)

    @router.get("/jobs", response_model=JobList)
    def list_jobs(
        training_run: str | None = None, limit: int = Query(default=1000, ge=1, le=10000)
    ) -> JobList:
        """The jobs of one training run by step (``?training_run=``), or every job kept."""
        rows = service.store.list_training(training_run, limit)
        return JobList(jobs=[job_summary(row) for row in rows])

    @router.get("/jobs/{job_id}", response_model=JobInfo)
    def get_job(job_id: str) -> JobInfo:
        return service.job_info(service.row(job_id))

    @router.delete("/jobs/{job_id}", response_model=JobInfo)
    def cancel_job(job_id: str) -> JobInfo:
        row = service.row(job_id)
        if not service.scheduler.cancel(job_id):
            raise HTTPException(
                409, f"job '{job_id}' is {row.status}; only queued or running jobs can be cancelled"
            )
        return service.job_info(service.row(job_id))

    @router.get("/jobs/{job_id}/logs", response_class=PlainTextResponse)
    def job_logs(job_id: str, follow: bool = False) -> StreamingResponse:
        service.row(job_id)
        return StreamingResponse(_follow_log(service, job_id, follow), media_type="text/plain")

    @router.get("/jobs/{job_id}/events")
    def job_events(job_id: str) -> StreamingResponse:
        service.row(job_id)
        return StreamingResponse(_events(service, job_id), media_type="text/event-stream")

    @router.get("/queue", response_model=QueueInfo)
    def queue() -> QueueInfo:
        return QueueInfo(
            queued=[r.job_id for r in service.store.list("queued")],
            running=[r.job_id for r in service.store.list("running")],
            counts=service.store.counts(),
        )


def _info_routes(router: APIRouter, service: Service) -> None:
    # Plain lists of names by default (what the published client reads); ``?detail=1`` gives ours:
    # tasks with their groups and tags, models with their aliases and interfaces.
    @router.get("/tasks")
    async def tasks(detail: bool = False) -> dict[str, Any]:
        if not service.index.ready.is_set():
            await asyncio.to_thread(service.index.ready.wait, 120)
        listing = service.index.tasks or {}
        return listing if detail else {"tasks": listing.get("tasks", [])}

    @router.get("/models")
    async def models(detail: bool = False) -> dict[str, Any]:
        if service.models is None:
            service.models = await asyncio.to_thread(_models)
        if detail:
            return {"models": service.models}
        return {"models": [m["model_id"] for m in service.models]}

    @router.post("/merge")
    async def merge(body: MergeRequest) -> dict[str, Any]:
        checkpoint = confined(
            service.args.checkpoint_path(), body.checkpoint_path, Path("."), "checkpoint_path"
        )
        default = Path("merged") / (checkpoint.name or "checkpoint")
        output = confined(service.args.output_path(), body.output_path, default, "output_path")
        name = "lmms_eval.entrypoints.merge"
        if importlib.util.find_spec(name) is None:
            raise HTTPException(501, "checkpoint merging is not available in this version")
        module = importlib.import_module(name)
        try:
            merged = await asyncio.to_thread(module.merge_checkpoint, str(checkpoint), str(output))
        except LmmsEvalError as exc:
            raise HTTPException(422, str(exc)) from None
        return {"output_path": str(merged if merged is not None else output)}


def create_app(args: ServerArgs, token: str | None = None) -> FastAPI:
    """The FastAPI app; the scheduler runs while the app's lifespan lasts."""
    service = Service(args, check_token(token, "token") if token is not None else resolve_token(args))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(target=service.index.build, name="lmms-eval-task-index", daemon=True).start()
        service.scheduler.start()
        try:
            yield
        finally:
            service.close()

    app = FastAPI(title="lmms-eval server", lifespan=lifespan)
    app.state.service = service
    app.add_middleware(CatchAll)  # innermost: a route's exception is a redacted 422 or a generic 500

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_message(exc)}, status_code=422)

    @app.exception_handler(StoreError)
    async def _store_failed(_request: Request, exc: StoreError) -> JSONResponse:
        # logged by the store (once a minute at most); 507 while its disk is full
        status = 507 if isinstance(exc, StoreFullError) else 503
        return JSONResponse({"detail": str(exc)}, status_code=status, headers={"Retry-After": "30"})

    @app.get("/health")
    def health() -> JSONResponse:
        status, body = service.health()
        return JSONResponse(body, status_code=status)

    router = APIRouter()
    _job_routes(router, service)
    _info_routes(router, service)
    app.include_router(router)
    # last, so that it runs first: Host, cross-site, token (all but /health; /docs and
    # /openapi.json included), then the body limit, before routing and before the body is read
    app.add_middleware(
        HttpGuard,
        hosts=allowed_names(args.host, args.allowed_hosts),
        max_body=args.max_body_bytes,
        auth=_auth(service.token) if service.token else None,
        public=("/health",),
    )
    return app


def launch_server(args: ServerArgs) -> None:
    """Serve until interrupted (blocking)."""
    import uvicorn

    app = create_app(args)
    logger.info("lmms-eval server on http://%s:%d (docs at /docs)", args.host, args.port)
    if args.host in ("0.0.0.0", "::", "") and not args.allowed_hosts:
        logger.warning(
            "bound to %s: only requests whose Host is localhost, a loopback address or one of "
            "--allowed_hosts are answered; list the names clients use (e.g. --allowed_hosts gpu-box)",
            args.host or "all interfaces",
        )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
