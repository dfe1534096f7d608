"""The UI's FastAPI app: the JSON API under ``/api`` and the static front end.

Routes (all GET unless said):

* ``/api/info``; ``/api/runs``; ``/api/run?id=``; ``/api/breakdown?run=&task=`` (per category);
* ``/api/samples?run=&task=&offset=&limit=&status=&field=&value=&q=`` (a page); ``/api/facets``;
  ``/api/sample?run=&task=&line=`` (one sample, whole); ``/api/media?run=&task=&line=&n=``;
  ``/api/file?path=`` (a file of the logs folder);
* ``/api/compare?a=&b=``;
* ``/api/leaderboard?baseline=&correction=``, ``/api/leaderboard/export?format=md|csv&runs=&tasks=``;
  ``/api/training-runs``, ``/api/training?name=`` (with the eval server's jobs of that run);
* ``/api/options``, ``POST /api/preview`` (the launch form);
* ``/api/server/...``: the eval server's ``models``, ``tasks``, ``queue``, ``POST evaluate``,
  ``jobs/{id}`` (GET, DELETE) and ``jobs/{id}/logs?follow=``, forwarded with its token.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lmms_eval.errors import LmmsEvalError
from lmms_eval.http_guard import Answer, Auth, HttpGuard, allowed_names
from lmms_eval.results.encoding import dumps
from lmms_eval.ui import board, launch
from lmms_eval.ui.comparison import compare_view
from lmms_eval.ui.media import media_content, sample_row, served_type
from lmms_eval.ui.proxy import FORWARDED, EmbeddedServer, ServerLink, check_job_id
from lmms_eval.ui.runs import RunIndex, detail, summary
from lmms_eval.ui.samples import SamplesCache, breakdown, page_row, record_scores, status_of
from lmms_eval.ui.security import COOKIE, Refused, confine, token_matches

STATIC = Path(__file__).parent / "static"
MAX_PAGE = 500
MAX_BODY = 1_000_000  # the launch form's values, far below


@dataclass
class UiOptions:
    """How the UI runs: its logs folder, its eval server and its own token."""

    logs: Path
    server_url: str | None = None  # None: run an eval server in this process
    server_token: str | None = None
    token: str | None = None  # the UI's own token (required beyond loopback)
    state_dir: Path | None = None  # the in-process server's job store (default: its own default)
    host: str = "127.0.0.1"  # the bound address: a Host the UI answers, with loopback names
    allowed_hosts: tuple[str, ...] = ()  # more Host names the UI answers (--allowed_hosts)


def reply(data: Any, status: int = 200) -> Response:
    """JSON without NaN (as the results files are written)."""
    return Response(dumps(data), status_code=status, media_type="application/json")


#: the page's policy: scripts and styles only from the UI's own files (no inline script, handler or
#: style attribute), nothing embedded, no framing; files from the logs folder get ``sandbox`` instead
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class SecurityHeaders:
    """Plain ASGI wrapper: every UI response carries :data:`SECURITY_HEADERS` unless it set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


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
        runs = [summary(run) for run in ui.runs.refresh()]
        return reply({"runs": runs, "skipped": ui.runs.skipped})

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
        return logs_file(confine(ui.root, _param(request, "path")))


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
        rows = [page_row(task, indexed.path, line, text, metric) for line, text in indexed.raw(wanted)]
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
            return logs_file(content)
        headers = {"Cache-Control": "max-age=3600", **FILE_HEADERS, "Content-Disposition": "inline"}
        return Response(content, media_type=kind, headers=headers)


#: headers of every file served from the logs folder: no sniffing, no script, no same-origin powers
FILE_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"}


def logs_file(path: Path) -> FileResponse:
    """A file of the logs folder: its media type from its extension (:func:`served_type`), shown
    inline only when it is an image, audio or video, else downloaded as an attachment."""
    kind, inline = served_type(path)
    return FileResponse(
        path,
        media_type=kind,
        headers=FILE_HEADERS,
        filename=path.name,
        content_disposition_type="inline" if inline else "attachment",
    )


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
        values = await _json_body(request)
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
        body = await _json_body(request) if request.method == "POST" else None
        query = request.url.query  # e.g. ``detail=1`` for the full task and model listings
        status, data = await ui.server().call(request.method, f"{name}?{query}" if query else name, body)
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


def _split(value: str | None) -> list[str]:
    return [v for v in (value or "").split(",") if v]


async def _training_jobs(ui: Ui, name: str) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The eval server's jobs of training run ``name`` (None and why, when it cannot say)."""
    if ui.link is None:
        return None, "the eval server is not running yet"
    try:
        status, data = await ui.link.call("GET", "jobs?" + urlencode({"training_run": name}))
    except Refused as exc:
        return None, exc.message
    if status != 200 or not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        detail = data.get("detail") if isinstance(data, dict) else None
        return None, f"the eval server answered HTTP {status}" + (f": {detail}" if detail else "")
    return data["jobs"], None


def _board_routes(router: APIRouter, ui: Ui) -> None:
    """The leaderboard (``/api/leaderboard``, its ``/export?format=md|csv``) and training runs
    (``/api/training-runs``, ``/api/training?name=``)."""

    @router.get("/api/leaderboard")
    def leaderboard(request: Request) -> Response:
        q = request.query_params
        return reply(
            board.leaderboard(ui.runs.refresh(), q.get("baseline"), q.get("correction", "holm")).to_dict()
        )

    @router.get("/api/leaderboard/export")
    def leaderboard_export(request: Request) -> Response:
        q = request.query_params
        fmt = q.get("format", "md")
        table = board.leaderboard(ui.runs.refresh(), q.get("baseline"), q.get("correction", "holm"))
        text = board.export(table, fmt, _split(q.get("runs")), _split(q.get("tasks")))
        kind = "text/markdown" if fmt == "md" else "text/csv"
        disposition = f'attachment; filename="leaderboard.{fmt}"'
        return Response(
            text, media_type=f"{kind}; charset=utf-8", headers={"Content-Disposition": disposition}
        )

    @router.get("/api/training-runs")
    def training_runs() -> Response:
        return reply({"runs": board.training_runs(ui.runs.refresh())})

    @router.get("/api/training")
    async def training(request: Request) -> Response:
        name = _param(request, "name")
        jobs, note = await _training_jobs(ui, name)
        runs = await asyncio.to_thread(ui.runs.refresh)
        return reply(board.training_view(runs, name, jobs) | {"server_note": note})


def _guard(token: str) -> Auth:
    """Beyond loopback: every request carries the UI's token (bearer header or cookie); ``/?token=``
    with the right token answers a redirect that sets the cookie (HttpOnly, SameSite=Strict)."""
    cookie = SimpleCookie()
    cookie[COOKIE] = token
    set_cookie = f"{cookie[COOKIE].OutputString()}; HttpOnly; SameSite=Strict; Path=/"
    login = Answer(303, "signed in", (("Location", "/"), ("Set-Cookie", set_cookie)))
    refused = Answer(
        401,
        "this UI needs its token: open the address printed when it started (/?token=...) or send "
        "'Authorization: Bearer <token>'",
        (("WWW-Authenticate", "Bearer"),),
    )

    def check(headers: Mapping[str, str], scope: Any) -> Answer | None:
        if scope["path"] == "/" and scope.get("query_string"):
            given = parse_qs(scope["query_string"].decode("latin-1")).get("token")
            if given and token_matches(token, f"Bearer {given[-1]}", None):
                return login
        cookies = cookie_parser(headers.get("cookie", ""))
        if token_matches(token, headers.get("authorization"), cookies.get(COOKIE)):
            return None
        return refused

    return check


async def _json_body(request: Request) -> Any:
    """The request's JSON body (the guard admits only ``application/json``; checked again here)."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise Refused(415, "send the body as Content-Type: application/json")
    try:
        return json.loads(await request.body())
    except ValueError as exc:
        raise Refused(422, f"the body is not JSON ({str(exc)[:120]})") from None


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
    app.add_middleware(SecurityHeaders)  # CSP, nosniff, no referrer on every response of the UI

    @app.exception_handler(Refused)
    async def _refused(_request: Request, exc: Refused) -> Response:
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @app.exception_handler(LmmsEvalError)
    async def _error(_request: Request, exc: LmmsEvalError) -> Response:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    router = APIRouter()
    _run_routes(router, ui)
    _sample_routes(router, ui)
    _launch_routes(router, ui)
    _board_routes(router, ui)
    app.include_router(router)

    @app.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    # last, so that it runs first: Host, cross-site, token, then the body limit, before routing
    app.add_middleware(
        HttpGuard,
        hosts=allowed_names(options.host, options.allowed_hosts),
        max_body=MAX_BODY,
        auth=_guard(options.token) if options.token else None,
    )
    return app
