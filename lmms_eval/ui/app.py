"""The UI's FastAPI app: the JSON API under ``/api`` and the static front end.

Routes (all GET unless said):

* ``/api/info``; ``/api/runs``; ``/api/run?id=``; ``/api/breakdown?run=&task=`` (per category);
* ``/api/samples?run=&task=&offset=&limit=&status=&field=&value=&q=`` (a page); ``/api/facets``;
  ``/api/sample?run=&task=&line=`` (one sample, whole); ``/api/media?run=&task=&line=&n=``;
  ``/api/file?path=`` (a file of the logs folder);
* ``/api/compare?a=&b=``;
* ``/api/options``, ``POST /api/preview`` (the launch form);
* ``/api/server/...``: the eval server's ``models``, ``tasks``, ``queue``, ``POST evaluate``,
  ``jobs/{id}`` (GET, DELETE) and ``jobs/{id}/logs?follow=``, forwarded with its token.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles

from lmms_eval.errors import LmmsEvalError
from lmms_eval.results.encoding import dumps
from lmms_eval.ui import launch
from lmms_eval.ui.comparison import compare_view
from lmms_eval.ui.media import media_content, sample_row
from lmms_eval.ui.proxy import FORWARDED, EmbeddedServer, ServerLink, check_job_id
from lmms_eval.ui.runs import RunIndex, detail, summary
from lmms_eval.ui.samples import SamplesCache, breakdown, record_scores, status_of
from lmms_eval.ui.security import COOKIE, Refused, confine, token_matches

STATIC = Path(__file__).parent / "static"
MAX_PAGE = 500


@dataclass
class UiOptions:
    """How the UI runs: its logs folder, its eval server and its own token."""

    logs: Path
    server_url: str | None = None  # None: run an eval server in this process
    server_token: str | None = None
    token: str | None = None  # the UI's own token (required beyond loopback)
    state_dir: Path | None = None  # the in-process server's job store (default: its own default)


def reply(data: Any, status: int = 200) -> Response:
    """JSON without NaN (as the results files are written)."""
    return Response(dumps(data), status_code=status, media_type="application/json")


class Ui:
    """What the routes share."""

    def __init__(self, options: UiOptions) -> None:
        self.options = options
        self.root = options.logs.resolve()
        self.runs = RunIndex(self.root)
        self.samples = SamplesCache()
        self.embedded: EmbeddedServer | None = None
        self.link: ServerLink | None = (
            ServerLink(options.server_url, options.server_token, embedded=False)
            if options.server_url
            else None
        )

    def server(self) -> ServerLink:
        if self.link is None:
            raise Refused(503, "the eval server is not running yet; try again in a moment")
        return self.link


def _int(request: Request, name: str, default: int) -> int:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise Refused(422, f"{name} must be a whole number, got '{text[:40]}'") from None


def _param(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise Refused(422, f"the query parameter '{name}' is required")
    return value


def _run_routes(router: APIRouter, ui: Ui) -> None:
    @router.get("/api/info")
    def info() -> Response:
        server = ui.link.describe() if ui.link else {"mode": "same process", "url": None}
        return reply({"logs": str(ui.root), "server": server})

    @router.get("/api/runs")
    def runs() -> Response:
        return reply({"runs": [summary(run) for run in ui.runs.refresh()]})

    @router.get("/api/run")
    def run(request: Request) -> Response:
        return reply(detail(ui.runs.get(_param(request, "id"))))

    @router.get("/api/breakdown")
    def by_category(request: Request) -> Response:
        run = ui.runs.get(_param(request, "run"))
        task = _param(request, "task")
        metric = run.main_metric(task)
        facts = ui.samples.get(run.samples_file(task)).facts()
        return reply({"task": task, "metric": metric, "fields": breakdown(facts, metric)})

    @router.get("/api/compare")
    def compare(request: Request) -> Response:
        a, b = ui.runs.get(_param(request, "a")), ui.runs.get(_param(request, "b"))
        return reply(compare_view(a, b, ui.samples))

    @router.get("/api/file")
    def raw_file(request: Request) -> Response:
        return FileResponse(confine(ui.root, _param(request, "path")))


def _sample_routes(router: APIRouter, ui: Ui) -> None:
    @router.get("/api/samples")
    def samples(request: Request) -> Response:
        run = ui.runs.get(_param(request, "run"))
        task = _param(request, "task")
        indexed = ui.samples.get(run.samples_file(task))
        metric = run.main_metric(task)
        q = request.query_params
        selected = indexed.select(
            q.get("status", "all"), q.get("field", ""), q.get("value", ""), q.get("q", ""), metric
        )
        total = len(indexed) if selected is None else len(selected)
        offset = max(0, _int(request, "offset", 0))
        limit = min(MAX_PAGE, max(1, _int(request, "limit", 100)))
        lines = range(offset, min(total, offset + limit))
        wanted = list(lines) if selected is None else [selected[i] for i in lines]
        rows = []
        for line, text in indexed.raw(wanted):
            record = _record(text, indexed.path, line)
            status = status_of(bool(record.failed), record_scores(record), metric)
            rows.append(sample_row(task, line, record, status))
        return reply(
            {
                "task": task,
                "metric": metric,
                "total": total,
                "all": len(indexed),
                "offset": offset,
                "rows": rows,
            }
        )

    @router.get("/api/facets")
    def facets(request: Request) -> Response:
        run = ui.runs.get(_param(request, "run"))
        return reply({"facets": ui.samples.get(run.samples_file(_param(request, "task"))).facts().facets()})

    @router.get("/api/sample")
    def sample(request: Request) -> Response:
        run = ui.runs.get(_param(request, "run"))
        task = _param(request, "task")
        indexed = ui.samples.get(run.samples_file(task))
        line = _int(request, "line", 0)
        record = indexed.record(line)
        status = status_of(bool(record.failed), record_scores(record), run.main_metric(task))
        return reply(
            {
                "run": run.id,
                "task": task,
                "total": len(indexed),
                **sample_row(task, line, record, status, full=True),
            }
        )

    @router.get("/api/media")
    def media(request: Request) -> Response:
        run = ui.runs.get(_param(request, "run"))
        task = _param(request, "task")
        record = ui.samples.get(run.samples_file(task)).record(_int(request, "line", 0))
        content, kind = media_content(ui.root, run.files.folder, task, record.doc, _int(request, "n", 0))
        if isinstance(content, Path):
            return FileResponse(content, media_type=kind)
        return Response(content, media_type=kind, headers={"Cache-Control": "max-age=3600"})


def _record(text: bytes, path: Path, line: int) -> Any:
    from lmms_eval.results.samples import SampleRecord

    try:
        return SampleRecord.from_line(text.decode("utf-8"))
    except (ValueError, TypeError) as exc:
        raise Refused(
            422, f"{path.name}: line {line + 1} is not a samples record ({str(exc)[:200]})"
        ) from None


def _launch_routes(router: APIRouter, ui: Ui) -> None:
    @router.get("/api/options")
    def run_options() -> Response:
        server_only = [
            {
                "name": n,
                "flag": None,
                "kind": "text",
                "choices": None,
                "default": "",
                "help": h,
                "group": "eval server",
            }
            for n, h in launch.SERVER_ONLY.items()
        ]
        return reply({"options": launch.run_options() + server_only})

    @router.post("/api/preview")
    async def preview(request: Request) -> Response:
        values = await request.json()
        if not isinstance(values, dict):
            raise Refused(422, "the preview body must be a JSON object of option values")
        try:
            return reply(launch.preview(values))
        except LmmsEvalError as exc:
            raise Refused(422, str(exc)) from None

    @router.api_route("/api/server/{name}", methods=["GET", "POST"])
    async def forward(name: str, request: Request) -> Response:
        if (request.method, name) not in FORWARDED:
            raise Refused(404, f"'{request.method} {name}' is not forwarded to the eval server")
        body = await request.json() if request.method == "POST" else None
        status, data = await ui.server().call(request.method, name, body)
        return reply(data, status)

    @router.api_route("/api/server/jobs/{job_id}", methods=["GET", "DELETE"])
    async def job(job_id: str, request: Request) -> Response:
        status, data = await ui.server().call(request.method, f"jobs/{check_job_id(job_id)}")
        return reply(data, status)

    @router.get("/api/server/jobs/{job_id}/logs")
    def job_log(job_id: str, request: Request) -> StreamingResponse:
        follow = request.query_params.get("follow", "false").lower() in ("1", "true", "yes")
        stream = ui.server().log_stream(check_job_id(job_id), follow)
        return StreamingResponse(stream, media_type="text/plain; charset=utf-8")


def _guard(ui: Ui) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    """Beyond loopback: every request carries the UI's token (bearer header or cookie)."""
    token = ui.options.token

    async def check(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if token is None:
            return await call_next(request)
        given = request.query_params.get("token")
        if request.url.path == "/" and given is not None and token_matches(token, f"Bearer {given}", None):
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response
        if token_matches(token, request.headers.get("authorization"), request.cookies.get(COOKIE)):
            return await call_next(request)
        message = "this UI needs its token: open the address printed when it started (/?token=...) or send 'Authorization: Bearer <token>'"
        return JSONResponse({"detail": message}, status_code=401, headers={"WWW-Authenticate": "Bearer"})

    return check


def create_ui_app(options: UiOptions) -> FastAPI:
    """The UI app; without ``server_url`` its lifespan runs an eval server in this process."""
    ui = Ui(options)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if ui.link is None:
            ui.embedded = EmbeddedServer(ui.root, options.state_dir)
            ui.link = await asyncio.to_thread(ui.embedded.start)
        try:
            yield
        finally:
            if ui.embedded is not None:
                await asyncio.to_thread(ui.embedded.stop)

    app = FastAPI(title="lmms-eval UI", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.ui = ui

    @app.exception_handler(Refused)
    async def _refused(_request: Request, exc: Refused) -> Response:
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @app.exception_handler(LmmsEvalError)
    async def _error(_request: Request, exc: LmmsEvalError) -> Response:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    app.middleware("http")(_guard(ui))
    router = APIRouter()
    _run_routes(router, ui)
    _sample_routes(router, ui)
    _launch_routes(router, ui)
    app.include_router(router)

    @app.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
