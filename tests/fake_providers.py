"""Fake provider APIs on 127.0.0.1: the Anthropic Messages API, the Gemini ``generateContent`` API
and Azure OpenAI's deployment URLs, for the ``claude``, ``gemini`` and ``openai`` (``api_type=azure``)
backends' tests.

:class:`ProviderServer` extends :class:`openai_server.OpenAIServer` (its HTTP server, recording,
faults and responders): it checks each provider's route, authentication header and request shape
as the real API does (a wrong key is a 401, a malformed request a 400 in the provider's error
format), answers in the provider's wire format, and reports usage (whitespace words; 85 input
tokens per image). Faults (:meth:`add_fault`) match the last user text as in ``OpenAIServer``;
``status`` faults answer in the provider's error format, ``drop`` closes the connection,
``refusal`` / ``filtered`` answer the provider's way of declining. Like ``OpenAIServer`` it ignores
stop sequences, so that clients' own stop handling is observable.

Batch APIs: ``openai`` serves the OpenAI Batch API (``POST /v1/files`` multipart, ``POST
/v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``) beside
``/v1/chat/completions``; ``anthropic`` serves Message Batches (``POST /v1/messages/batches``, ``GET
/v1/messages/batches/{id}`` and ``.../results``). A batch moves one step per poll (validating or
in progress, then ended), unless :attr:`ProviderServer.hold` keeps it running; its requests are
answered by the same code as online requests (faults included), when it ends.

The tests check each fake with the provider's official SDK (``anthropic``, ``google-genai``,
``openai``'s ``AzureOpenAI``), so that the fakes speak the wire format the SDKs speak.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import socket
import time
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from openai_server import IMAGE_TOKENS, OpenAIServer, ReceivedRequest, _Handler, last_user_text

Provider = Literal["anthropic", "gemini", "azure", "openai"]
ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
# the top-level fields of a Messages API request (the API refuses others)
ANTHROPIC_PARAMS = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "stop_sequences",
        "temperature",
        "top_p",
        "top_k",
        "metadata",
        "stream",
        "thinking",
        "tools",
        "tool_choice",
        "service_tier",
        "container",
        "output_config",
        "inference_geo",
        "cache_control",
        "speed",
        "diagnostics",
    }
)
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
GOOGLE_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_GEMINI_ROUTE = re.compile(r"^/(v1beta|v1)/models/([^/:]+):generateContent$")
_AZURE_ROUTE = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")


@dataclass
class FakeBatch:
    """A submitted batch: its requests (custom id, body), polls so far and, once ended, its results."""

    id: str
    requests: list[tuple[str, dict[str, Any]]]
    polls: int = 0
    results: list[dict[str, Any]] | None = None


class BadRequest(Exception):
    """A request the real API would refuse with HTTP 400."""


class ProviderServer(OpenAIServer):
    """A fake of one provider's API; ``api_key`` is the key it accepts."""

    def __init__(self, provider: Provider, api_key: str = "test-key-123456", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.provider: Provider = provider
        self.api_key = api_key
        self.normalized: list[dict[str, Any]] = []  # the requests as OpenAI-style messages
        self.batches: dict[str, FakeBatch] = {}
        self.files: dict[str, bytes] = {}
        self.hold = False  # True: batches stay in progress

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ProviderServer:
        self.start()
        return self

    # -- routing ----------------------------------------------------------------------------------------

    def _handle(self, handler: _Handler, raw: bytes) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        url = urlsplit(handler.path)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            if headers.get("content-type", "").startswith("multipart/form-data"):
                payload = _multipart(headers["content-type"], raw)
            else:
                payload = json.loads(raw)
        except ValueError:
            self._send_provider_error(handler, 400, "request body is not JSON")
            return
        route = {
            "anthropic": self._anthropic,
            "gemini": self._gemini,
            "azure": self._azure,
            "openai": self._openai,
        }[self.provider]
        record = ReceivedRequest(handler.path, payload, headers, time.monotonic(), 0)
        with self._admitted(record):
            try:
                record.status = route(handler, url.path, parse_qs(url.query), headers, payload, record)
            except BadRequest as exc:
                self._send_provider_error(handler, 400, str(exc))
                record.status = 400
            with self._lock:
                key = -1 if record.status is None else record.status
                self.statuses[key] = self.statuses.get(key, 0) + 1

    def _fault_or_none(self, handler: _Handler, normalized: dict[str, Any], record: ReceivedRequest) -> Any:
        """Apply a programmed fault: the status sent, ``None`` for a dropped connection, ``False``
        when no fault applies (or the fault is a way of answering, kept in ``record.fault``)."""
        with self._lock:
            self.normalized.append(normalized)
        fault = self._take_fault(last_user_text(normalized))
        record.fault = fault.kind if fault else None
        if fault is None or fault.kind in ("refusal", "filtered"):
            return False
        if fault.kind == "status":
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._send_provider_error(handler, fault.status, fault.message, extra)
            return fault.status
        if fault.kind == "drop":
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return None
        raise AssertionError(f"fault {fault.kind!r} is not supported by ProviderServer")

    def _send_provider_error(
        self, handler: _Handler, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        if self.provider == "anthropic":
            kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error")
            body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        elif self.provider == "gemini":
            body = {
                "error": {
                    "code": status,
                    "message": message,
                    "status": GOOGLE_STATUSES.get(status, "UNKNOWN"),
                }
            }
        else:
            body = {"error": {"code": str(status), "message": message}}
        self._send_json(handler, status, body, headers)

    # -- Anthropic Messages API ---------------------------------------------------------------------------

    def _anthropic(
        self,
        handler: _Handler,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        payload: dict[str, Any],
        record: ReceivedRequest,
    ) -> int | None:
        if path not in ("/v1/messages", "/v1/messages/batches"):
            self._send_provider_error(handler, 404, f"no route {path}")
            return 404
        if not self._anthropic_auth(handler, headers):
            return 401
        if path == "/v1/messages/batches":
            requests = [(str(r["custom_id"]), r["params"]) for r in payload.get("requests") or []]
            for _, params in requests:
                anthropic_to_openai(params)  # a malformed request fails the whole batch, as the API does
            batch = self._new_batch("msgbatch", requests)
            self._send_json(handler, 200, self._anthropic_batch(batch))
            return 200
        normalized = anthropic_to_openai(payload)
        sent = self._fault_or_none(handler, normalized, record)
        if sent is not False:
            return sent
        self._send_json(handler, 200, self._anthropic_message(payload, normalized, record.fault))
        return 200

    def _anthropic_auth(self, handler: _Handler, headers: dict[str, str]) -> bool:
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        if self.api_key not in (headers.get("x-api-key"), bearer):
            self._send_provider_error(handler, 401, "invalid x-api-key")
            return False
        if not headers.get("anthropic-version"):
            raise BadRequest("anthropic-version: header is required")
        return True

    def _anthropic_message(
        self, payload: dict[str, Any], normalized: dict[str, Any], fault: Any
    ) -> dict[str, Any]:
        answer = "" if fault == "refusal" else self.responder(normalized)
        return {
            "id": f"msg_{self.count}",
            "type": "message",
            "role": "assistant",
            "model": payload["model"],
            "content": [] if fault == "refusal" else [{"type": "text", "text": answer}],
            "stop_reason": "refusal" if fault == "refusal" else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens(normalized), "output_tokens": len(answer.split())},
        }

    # -- Gemini generateContent ---------------------------------------------------------------------------

    def _gemini(
        self,
        handler: _Handler,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        payload: dict[str, Any],
        record: ReceivedRequest,
    ) -> int | None:
        match = _GEMINI_ROUTE.match(path)
        if match is None:
            self._send_provider_error(handler, 404, f"no route {path}")
            return 404
        if headers.get("x-goog-api-key", query.get("key", [""])[0]) != self.api_key:
            self._send_provider_error(handler, 400, "API key not valid. Please pass a valid API key.")
            return 400
        normalized = gemini_to_openai(payload)
        sent = self._fault_or_none(handler, normalized, record)
        if sent is not False:
            return sent
        filtered = record.fault == "filtered"
        answer = "" if filtered else self.responder(normalized)
        candidate: dict[str, Any] = {"index": 0, "finishReason": "SAFETY" if filtered else "STOP"}
        if not filtered:
            candidate["content"] = {"role": "model", "parts": [{"text": answer}]}
        prompt, output = input_tokens(normalized), len(answer.split())
        body = {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": output,
                "totalTokenCount": prompt + output,
            },
            "modelVersion": match.group(2),
        }
        self._send_json(handler, 200, body)
        return 200

    # -- Azure OpenAI ---------------------------------------------------------------------------------------

    def _azure(
        self,
        handler: _Handler,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        payload: dict[str, Any],
        record: ReceivedRequest,
    ) -> int | None:
        if _AZURE_ROUTE.match(path) is None:
            self._send_provider_error(handler, 404, "Resource not found")
            return 404
        if not query.get("api-version"):
            raise BadRequest("Missing API version parameter")
        if headers.get("api-key") != self.api_key:
            self._send_provider_error(handler, 401, "Access denied due to invalid subscription key")
            return 401
        with self._lock:
            self.normalized.append(payload)
        return self._answer(handler, payload, record.in_flight, record)

    # -- OpenAI (chat completions and the Batch API) ------------------------------------------------------------

    def _openai(
        self,
        handler: _Handler,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        payload: dict[str, Any],
        record: ReceivedRequest,
    ) -> int | None:
        if headers.get("authorization") != f"Bearer {self.api_key}":
            self._send_provider_error(handler, 401, "Incorrect API key provided")
            return 401
        if path == "/v1/files":
            if payload.get("purpose") != "batch" or not isinstance(payload.get("file"), bytes):
                raise BadRequest("files: a 'file' and purpose=batch are required")
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = payload["file"]
            self._send_json(handler, 200, {"id": file_id, "object": "file", "purpose": "batch"})
            return 200
        if path == "/v1/batches":
            lines = [
                json.loads(x) for x in self.files[payload["input_file_id"]].decode().splitlines() if x.strip()
            ]
            if any(x.get("url") != payload.get("endpoint") for x in lines):
                raise BadRequest("batch lines must use the batch's endpoint")
            batch = self._new_batch("batch", [(str(x["custom_id"]), x["body"]) for x in lines])
            self._send_json(handler, 200, self._openai_batch(batch))
            return 200
        if path != "/v1/chat/completions":
            self._send_provider_error(handler, 404, f"no route {path}")
            return 404
        with self._lock:
            self.normalized.append(payload)
        return self._answer(handler, payload, record.in_flight, record)

    # -- batches ------------------------------------------------------------------------------------------

    def _new_batch(self, prefix: str, requests: list[tuple[str, dict[str, Any]]]) -> FakeBatch:
        with self._lock:
            batch = FakeBatch(f"{prefix}_{len(self.batches) + 1}", requests)
            self.batches[batch.id] = batch
        return batch

    def _handle_get(self, handler: _Handler) -> None:
        path = urlsplit(handler.path).path
        headers = {k.lower(): v for k, v in handler.headers.items()}
        parts = path.strip("/").split("/")
        if self.provider == "openai" and headers.get("authorization") == f"Bearer {self.api_key}":
            if len(parts) == 3 and parts[:2] == ["v1", "batches"] and parts[2] in self.batches:
                self._send_json(handler, 200, self._openai_batch(self._poll(self.batches[parts[2]])))
                return
            if len(parts) == 4 and parts[1] == "files" and parts[3] == "content" and parts[2] in self.files:
                self._send_bytes(handler, 200, self.files[parts[2]])
                return
        if self.provider == "anthropic" and self._anthropic_auth(handler, headers):
            batch = (
                self.batches.get(parts[3])
                if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"]
                else None
            )
            if batch is not None and len(parts) == 4:
                self._send_json(handler, 200, self._anthropic_batch(self._poll(batch)))
                return
            if batch is not None and parts[4:] == ["results"] and batch.results is not None:
                lines = "".join(json.dumps(r) + "\n" for r in batch.results)
                self._send_bytes(handler, 200, lines.encode())
                return
        elif self.provider == "anthropic":
            return  # 401 sent
        self._send_provider_error(handler, 404, f"no route {path}")

    def _poll(self, batch: FakeBatch) -> FakeBatch:
        """One poll: the batch moves a step, and is answered when it ends."""
        with self._lock:
            if self.hold or batch.results is not None:
                return batch
            batch.polls += 1
            if batch.polls < 2:
                return batch
        batch.results = [self._batch_result(custom_id, body) for custom_id, body in batch.requests]
        return batch

    def _batch_result(self, custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """One request of a batch, answered as online (faults included), in the provider's result form."""
        normalized = anthropic_to_openai(body) if self.provider == "anthropic" else body
        with self._lock:
            self.normalized.append(normalized)
        fault = self._take_fault(last_user_text(normalized))
        if self.provider == "anthropic":
            if fault is not None and fault.kind == "status":
                kind = ANTHROPIC_ERROR_TYPES.get(fault.status, "api_error")
                error = {"type": "error", "error": {"type": kind, "message": fault.message}}
                return {"custom_id": custom_id, "result": {"type": "errored", "error": error}}
            message = self._anthropic_message(body, normalized, fault.kind if fault else None)
            return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}
        if fault is not None and fault.kind == "status":
            response = {
                "status_code": fault.status,
                "body": {"error": {"message": fault.message, "code": fault.status}},
            }
        else:
            response = {"status_code": 200, "body": self._completion(body)}
        return {"id": f"batch_req_{custom_id}", "custom_id": custom_id, "response": response, "error": None}

    def _openai_batch(self, batch: FakeBatch) -> dict[str, Any]:
        ended = batch.results is not None
        status = "completed" if ended else ("in_progress" if batch.polls else "validating")
        output_id = None
        if ended:
            output_id = f"file-out-{batch.id}"
            self.files[output_id] = "".join(json.dumps(r) + "\n" for r in batch.results or []).encode()
        done = len(batch.requests) if ended else 0
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "status": status,
            "output_file_id": output_id,
            "error_file_id": None,
            "request_counts": {"total": len(batch.requests), "completed": done, "failed": 0},
        }

    def _anthropic_batch(self, batch: FakeBatch) -> dict[str, Any]:
        ended = batch.results is not None
        results = batch.results or []
        succeeded = sum(r["result"]["type"] == "succeeded" for r in results)
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else len(batch.requests),
                "succeeded": succeeded,
                "errored": len(results) - succeeded,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:01:00Z" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }


def _multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """The fields of a ``multipart/form-data`` body: text fields as str, files as bytes."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():  # pyright: ignore[reportAttributeAccessIssue]
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True)
        assert isinstance(data, bytes)
        fields[str(name)] = data if part.get_filename() else data.decode()
    return fields


# -- request shapes -----------------------------------------------------------------------------------------


def input_tokens(normalized: dict[str, Any]) -> int:
    words = len(str(normalized.get("system") or "").split())
    for message in normalized["messages"]:
        for part in message["content"]:
            words += len(part["text"].split()) if part["type"] == "text" else IMAGE_TOKENS
    return words


def _check_base64(data: Any, what: str, urlsafe: bool = False) -> bytes:
    """The bytes of base64 text (Google's JSON also takes the URL-safe alphabet)."""
    if not isinstance(data, str):
        raise BadRequest(f"{what}: base64 data must be a string")
    if urlsafe:
        data = data.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{what}: invalid base64 data") from None


def anthropic_to_openai(payload: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic Messages request checked as the API does, as OpenAI-style messages
    (``{"role", "content": [{"type": "text"|"image", ...}]}``) plus its ``system`` text."""
    unknown = sorted(set(payload) - ANTHROPIC_PARAMS)
    if unknown:
        raise BadRequest(f"{unknown[0]}: Extra inputs are not permitted")
    if not isinstance(payload.get("model"), str):
        raise BadRequest("model: Field required")
    if not isinstance(payload.get("max_tokens"), int):
        raise BadRequest("max_tokens: Field required")
    for stop in payload.get("stop_sequences") or []:
        if not str(stop).strip():
            raise BadRequest("stop_sequences: each stop sequence must contain non-whitespace")
    system = payload.get("system")
    if isinstance(system, list):
        system = "\n".join(block["text"] for block in system)
    messages = []
    for message in payload.get("messages") or []:
        if message.get("role") not in ("user", "assistant"):
            raise BadRequest(f"messages: Unexpected role {message.get('role')!r}")
        content = message["content"]
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        parts: list[dict[str, Any]] = []
        for block in blocks:
            if block["type"] == "image":
                source = block["source"]
                if source.get("media_type") not in ANTHROPIC_IMAGE_TYPES:
                    raise BadRequest(f"image media_type {source.get('media_type')!r} is not supported")
                _check_base64(source.get("data"), "image source")
                parts.append({"type": "image", "media_type": source["media_type"]})
            elif block["type"] == "text":
                parts.append({"type": "text", "text": block["text"]})
            else:
                raise BadRequest(f"content block type {block['type']!r} is not supported")
        messages.append({"role": message["role"], "content": parts})
    if not messages:
        raise BadRequest("messages: at least one message is required")
    return {"messages": messages, "system": system, "max_tokens": payload["max_tokens"]}


def gemini_to_openai(payload: dict[str, Any]) -> dict[str, Any]:
    """A Gemini ``generateContent`` request checked as the API does, as OpenAI-style messages plus
    its ``system`` text and the inline parts' MIME types (``inline``)."""
    contents = payload.get("contents")
    if not isinstance(contents, list) or not contents:
        raise BadRequest("contents is not specified")
    system = _field(payload, "systemInstruction")
    system_text = "\n".join(p.get("text", "") for p in system["parts"]) if isinstance(system, dict) else None
    messages, inline = [], []
    for content in contents:
        role = content.get("role", "user")
        if role not in ("user", "model"):
            raise BadRequest(f"Please use a valid role: user, model. Got {role!r}")
        parts = []
        for part in content.get("parts") or []:
            if "text" in part:
                parts.append({"type": "text", "text": part["text"]})
            elif _field(part, "inlineData") is not None:
                data = _field(part, "inlineData")
                mime = _field(data, "mimeType")
                if not mime:
                    raise BadRequest("inlineData.mimeType is required")
                _check_base64(data.get("data"), "inlineData", urlsafe=True)
                inline.append(mime)
                parts.append({"type": "image", "mime_type": mime})
            else:
                raise BadRequest(f"unsupported part {sorted(part)}")
        messages.append({"role": "assistant" if role == "model" else "user", "content": parts})
    config = _field(payload, "generationConfig") or {}
    return {"messages": messages, "system": system_text, "config": config, "inline": inline}


def _field(data: dict[str, Any], camel: str) -> Any:
    """A field of a Google JSON request, which the API takes in camelCase or snake_case."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()
    return data.get(camel, data.get(snake))


__all__ = ["BadRequest", "ProviderServer", "anthropic_to_openai", "gemini_to_openai", "input_tokens"]
