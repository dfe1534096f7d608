"""A fault-injecting OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

It speaks ``POST /v1/chat/completions`` (and ``/chat/completions``) over HTTP/1.1 with keep-alive,
answers deterministically from the request (by default the last user text reversed; pass a
``responder`` to answer otherwise), truncates the answer to ``max_tokens`` /
``max_completion_tokens`` words (``finish_reason: "length"``) and reports usage (whitespace words;
85 prompt tokens per image; 7 reasoning tokens when the request used ``max_completion_tokens``).
It ignores ``stop``, so that clients' own stop handling is observable.

Faults are programmed per test with :meth:`OpenAIServer.add_fault`; each applies to requests whose
last user text contains ``match`` (any request when ``None``), ``times`` times (always when
``None``), first matching fault first:

* ``status``: answer ``status`` with an OpenAI-style error body and an optional ``Retry-After``;
* ``drop``: close the connection without a response;
* ``timeout``: wait ``delay_s`` before answering (longer than the client's timeout);
* ``delay``: extra latency, then a normal answer;
* ``malformed``: a 200 response whose body is truncated JSON;
* ``no_choices``: a 200 response with ``"choices": []``;
* ``refusal``: a 200 response whose message has ``content: null`` and ``refusal: message``;
* ``filtered``: a 200 response with ``content: null`` and ``finish_reason: "content_filter"``.

Load-level modes (constructor arguments, and command-line options of the same names):

* ``max_concurrency=N``: answer 429 to any request that arrives while N are in flight;
* ``rate_limit=R`` (``--rate-limit``): a token bucket that admits R requests per second, with
  room for a burst of ``rate_burst`` (default R, one second's worth); a request that finds it empty
  is answered 429 at once with ``Retry-After`` set to the seconds until the next token (decimal);
* ``fault_every=K`` with ``fault_steps`` (``--fault-every 7 --fault-steps 429:0.2,500``): every K-th
  distinct request (by last user text, in the order first seen: the 1st, the (K+1)-th, ...) is
  answered with the steps in order on its successive attempts (``429:0.2`` is HTTP 429 with
  ``Retry-After: 0.2``, ``500`` a bare HTTP 500), then normally.

Everything received is recorded (:attr:`OpenAIServer.requests`, :attr:`max_in_flight`).

``python tests/openai_server.py --latency 0.2`` serves until its stdin closes and prints
``READY <port>`` once it listens; ``GET /stats`` returns the request count, the peak number of
requests in flight and the count of each answered status (``?reset=1`` resets them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

FaultKind = Literal["status", "drop", "timeout", "delay", "malformed", "no_choices", "refusal", "filtered"]
Responder = Callable[[dict[str, Any]], str]
FaultStep = tuple[int, str | None]  # (status, Retry-After or None)
IMAGE_TOKENS = 85
REASONING_TOKENS = 7


@dataclass
class Fault:
    kind: FaultKind
    match: str | None = None
    times: int | None = 1
    status: int = 500
    retry_after: str | None = None
    delay_s: float = 5.0
    message: str = "injected fault"
    hits: int = 0

    def applies(self, text: str) -> bool:
        return (self.times is None or self.hits < self.times) and (self.match is None or self.match in text)


@dataclass
class ReceivedRequest:
    path: str
    payload: dict[str, Any]
    headers: dict[str, str]
    arrived: float
    in_flight: int
    status: int | None = None  # None: the connection was dropped
    fault: FaultKind | None = None
    finished: float | None = None


def parse_fault_steps(text: str) -> list[FaultStep]:
    """``"429:0.2,500"`` -> ``[(429, "0.2"), (500, None)]``."""
    steps: list[FaultStep] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        status, _, retry_after = item.partition(":")
        steps.append((int(status), retry_after or None))
    return steps


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved up; thread-safe."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        if rate <= 0:
            raise ValueError(f"rate_limit must be > 0, got {rate}")
        self.rate = float(rate)
        self.burst = max(1.0, float(burst if burst is not None else rate))
        self._tokens = self.burst
        self._at = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> float:
        """0.0 when a token was taken, else the seconds until the next token."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return 0.0
            return (1.0 - self._tokens) / self.rate


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def last_user_text(payload: dict[str, Any]) -> str:
    users = [m for m in payload.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return message_text(users[-1]) if users else ""


def reverse_responder(payload: dict[str, Any]) -> str:
    """The default answer: the last user text reversed."""
    return last_user_text(payload)[::-1]


def image_parts(payload: dict[str, Any]) -> list[str]:
    """The ``image_url`` URLs of all messages, in order."""
    urls: list[str] = []
    for message in payload.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            urls.extend(
                str(p["image_url"]["url"])
                for p in content
                if isinstance(p, dict) and p.get("type") == "image_url"
            )
    return urls


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def __init__(self, address: tuple[str, int], app: OpenAIServer) -> None:
        self.app = app
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer  # pyright: ignore[reportIncompatibleVariableOverride]

    def setup(self) -> None:
        super().setup()
        self.server.app._track(self.connection, True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.app._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/stats"):
            self.server.app._send_json(self, 200, self.server.app._stats(reset="reset=1" in self.path))
        else:
            self.server.app._handle_get(self)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.server.app._handle(self, raw)


class OpenAIServer:
    """The server; use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        latency_s: float = 0.0,
        responder: Responder | None = None,
        max_concurrency: int | None = None,
        rate_limit_retry_after: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        record: bool = True,
        rate_limit: float | None = None,
        rate_burst: float | None = None,
        fault_every: int | None = None,
        fault_steps: list[FaultStep] | None = None,
    ) -> None:
        self.latency_s = latency_s
        self.responder: Responder = responder or reverse_responder
        self.max_concurrency = max_concurrency
        self.rate_limit_retry_after = rate_limit_retry_after
        self.bucket = TokenBucket(rate_limit, rate_burst) if rate_limit else None
        self.fault_every = fault_every
        self.fault_steps: list[FaultStep] = list(fault_steps or [])
        self._seen: dict[str, int] = {}  # last user text -> the order it was first seen in
        self._attempts: dict[str, int] = {}  # last user text -> attempts so far
        self.record = record
        self.faults: list[Fault] = []
        self.requests: list[ReceivedRequest] = []
        self.count = 0
        self.statuses: dict[int, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd = _HTTPServer((host, port), self)
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> OpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="openai-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # wake handler threads idling on keep-alive connections
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- programming and inspecting ---------------------------------------------------------------------

    def add_fault(
        self,
        kind: FaultKind,
        *,
        match: str | None = None,
        times: int | None = 1,
        status: int = 500,
        retry_after: str | None = None,
        delay_s: float = 5.0,
        message: str = "injected fault",
    ) -> Fault:
        fault = Fault(kind, match, times, status, retry_after, delay_s, message)
        with self._lock:
            self.faults.append(fault)
        return fault

    def reset(self) -> None:
        with self._lock:
            self.faults.clear()
            self.requests.clear()
            self.count = 0
            self.statuses.clear()
            self._seen.clear()
            self._attempts.clear()
            self.max_in_flight = self.in_flight

    @property
    def payloads(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.payload for r in self.requests]

    def requests_matching(self, text: str) -> list[ReceivedRequest]:
        with self._lock:
            return [r for r in self.requests if text in last_user_text(r.payload)]

    # -- serving ----------------------------------------------------------------------------------------

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _stats(self, reset: bool) -> dict[str, Any]:
        with self._lock:
            stats: dict[str, Any] = {
                "requests": self.count,
                "max_in_flight": self.max_in_flight,
                "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            }
            if reset:
                self.count = 0
                self.max_in_flight = self.in_flight
                self.requests.clear()
                self.statuses.clear()
                self._seen.clear()
                self._attempts.clear()
            return stats

    def _scripted_step(self, text: str) -> FaultStep | None:
        """The ``fault_steps`` step for this attempt of a ``fault_every`` request, if any."""
        if not self.fault_every or not self.fault_steps:
            return None
        with self._lock:
            order = self._seen.setdefault(text, len(self._seen))
            attempt = self._attempts.get(text, 0)
            self._attempts[text] = attempt + 1
        if order % self.fault_every != 0 or attempt >= len(self.fault_steps):
            return None
        return self.fault_steps[attempt]

    @contextlib.contextmanager
    def _admitted(self, record: ReceivedRequest) -> Iterator[int]:
        with self._lock:
            self.in_flight += 1
            self.count += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            record.in_flight = self.in_flight
            if self.record:
                self.requests.append(record)
        try:
            yield record.in_flight
        finally:
            with self._lock:
                self.in_flight -= 1
            record.finished = time.monotonic()

    def _take_fault(self, text: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.applies(text):
                    fault.hits += 1
                    return fault
        return None

    def _handle_get(self, handler: _Handler) -> None:
        """GET routes besides ``/stats`` (none here; subclasses add theirs)."""
        self._send_json(handler, 404, {"error": {"message": f"no route {handler.path}"}})

    def _handle(self, handler: _Handler, raw: bytes) -> None:
        try:
            payload = json.loads(raw)
        except ValueError:
            self._send_json(handler, 400, {"error": {"message": "request body is not JSON"}})
            return
        if not handler.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(handler, 404, {"error": {"message": f"no route {handler.path}"}})
            return
        headers = {k.lower(): v for k, v in handler.headers.items()}
        record = ReceivedRequest(handler.path, payload, headers, time.monotonic(), 0)
        with self._admitted(record) as in_flight:
            record.status = self._answer(handler, payload, in_flight, record)
            with self._lock:
                key = -1 if record.status is None else record.status
                self.statuses[key] = self.statuses.get(key, 0) + 1

    def _answer(
        self, handler: _Handler, payload: dict[str, Any], in_flight: int, record: ReceivedRequest
    ) -> int | None:
        if self.max_concurrency is not None and in_flight > self.max_concurrency:
            extra = {"Retry-After": self.rate_limit_retry_after} if self.rate_limit_retry_after else {}
            self._send_error(handler, 429, "Rate limit reached: too many requests in flight", extra)
            return 429
        if self.bucket is not None:
            wait = self.bucket.take()
            if wait > 0:
                extra = {"Retry-After": f"{wait:.3f}"}
                self._send_error(handler, 429, f"Rate limit reached: {self.bucket.rate:g} requests/s", extra)
                return 429
        text = last_user_text(payload)
        step = self._scripted_step(text)
        if step is not None:
            status, retry_after = step
            extra = {"Retry-After": retry_after} if retry_after is not None else {}
            self._send_error(handler, status, f"scripted fault {status}", extra)
            return status
        fault = self._take_fault(text)
        record.fault = fault.kind if fault else None
        return self._respond(handler, payload, fault)

    def _respond(self, handler: _Handler, payload: dict[str, Any], fault: Fault | None) -> int | None:
        kind = fault.kind if fault else None
        if fault is not None and kind == "status":
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._send_error(handler, fault.status, fault.message, extra)
            return fault.status
        if kind == "drop":
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return None
        delay = self.latency_s + (
            fault.delay_s if fault is not None and kind in ("timeout", "delay") else 0.0
        )
        if delay > 0 and self._stopping.wait(delay):
            return None
        if kind == "malformed":
            self._send_bytes(handler, 200, b'{"id": "chatcmpl-broken", "choices": [{"message": ')
        elif kind == "no_choices":
            self._send_json(
                handler, 200, {"id": "chatcmpl-empty", "object": "chat.completion", "choices": []}
            )
        elif fault is not None and kind in ("refusal", "filtered"):
            body = self._completion(payload)
            choice = body["choices"][0]
            choice["message"]["content"] = None
            if kind == "refusal":
                choice["message"]["refusal"] = fault.message
            else:
                choice["finish_reason"] = "content_filter"
            self._send_json(handler, 200, body)
        else:
            self._send_json(handler, 200, self._completion(payload))
        return 200

    def _completion(self, payload: dict[str, Any]) -> dict[str, Any]:
        answer = self.responder(payload)
        reasoning = "max_completion_tokens" in payload
        limit = payload.get("max_completion_tokens") or payload.get("max_tokens")
        words = answer.split(" ")
        finish = "stop"
        if isinstance(limit, int) and len(words) > limit:
            answer, finish = " ".join(words[:limit]), "length"
        prompt_words = sum(
            len(message_text(m).split()) for m in payload.get("messages") or [] if isinstance(m, dict)
        )
        completion_tokens = len(answer.split()) + (REASONING_TOKENS if reasoning else 0)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_words + IMAGE_TOKENS * len(image_parts(payload)),
            "completion_tokens": completion_tokens,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + completion_tokens
        if reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": REASONING_TOKENS}
        return {
            "id": f"chatcmpl-{self.count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": payload.get("model", ""),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": finish}
            ],
            "usage": usage,
        }

    def _send_error(self, handler: _Handler, status: int, message: str, headers: dict[str, str]) -> None:
        body = {"error": {"message": message, "type": "injected", "code": status}}
        self._send_json(handler, status, body, headers)

    def _send_json(
        self, handler: _Handler, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        self._send_bytes(handler, status, json.dumps(body).encode("utf-8"), headers)

    @staticmethod
    def _send_bytes(
        handler: _Handler, status: int, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:  # the client gave up (e.g. it timed out)
            handler.close_connection = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--no-record", action="store_true", help="do not keep the received payloads")
    parser.add_argument("--rate-limit", type=float, default=None, help="admit this many requests per second")
    parser.add_argument(
        "--rate-burst", type=float, default=None, help="token bucket size (default: one second)"
    )
    parser.add_argument("--fault-every", type=int, default=None, help="script every K-th distinct request")
    parser.add_argument("--fault-steps", default="", help="its answers in order, e.g. 429:0.2,500")
    args = parser.parse_args(argv)
    server = OpenAIServer(
        latency_s=args.latency,
        host=args.host,
        port=args.port,
        record=not args.no_record,
        rate_limit=args.rate_limit,
        rate_burst=args.rate_burst,
        fault_every=args.fault_every,
        fault_steps=parse_fault_steps(args.fault_steps),
    )
    with server:
        print(f"READY {server.port}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.read()  # until the parent closes our stdin
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
