"""One plain-ASGI guard in front of the eval server and the web UI.

It answers before routing and before any byte of the body is read, in this order:

1. **Host allow-list** (400): the ``Host`` header names ``localhost``, a loopback address
   (``127.0.0.1``, ``[::1]``, ...), the bound host or one of ``allowed_hosts``, with any port. A page
   that rebinds its own DNS name to 127.0.0.1 still sends its own name, so it is refused.
2. **Cross-site requests** (403, 415): a state-changing request (POST, PUT, PATCH, DELETE) is refused
   when ``Sec-Fetch-Site`` says ``cross-site`` or ``same-site`` (another port of the same host is the
   same site), when it carries an ``Origin`` other than its own (``http(s)://`` + its ``Host``; also
   ``Origin: null``), or when it has a body that is not ``Content-Type: application/json`` (a form,
   or a ``no-cors`` fetch, can only send ``text/plain``, urlencoded or multipart bodies). A read that
   another site embeds (``Sec-Fetch-Site`` cross-site or same-site, not a navigation) is refused too.
   The UI's own page passes: its fetches are same-origin (``Origin`` equals ``http://`` + ``Host``,
   ``Sec-Fetch-Site: same-origin``) and send JSON. Scripts and the UI's proxy send no ``Origin`` and
   no ``Sec-Fetch-*`` headers, so only the Host rule and the token apply to them.
3. **Authentication** (401): the app's callback (a token check) runs, except on ``public`` paths.
4. **Body limit** (413): a declared ``Content-Length`` over the limit is refused at once; otherwise
   the bytes actually received are counted (chunked bodies included) and the request is answered 413
   as soon as the count passes the limit; nothing more is read.

Refusals are one-line JSON ``{"detail": ...}`` answers. Also here: the rules for the names
``allowed_hosts`` may hold (:func:`parse_hosts`) and for tokens (:func:`check_token`).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from lmms_eval.errors import ConfigError
from lmms_eval.utils import is_loopback_host

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MIN_TOKEN_CHARS = 16
# headers a request may carry once only: two of them could say two different things
_SINGLE = ("host", "origin", "content-type", "content-length", "sec-fetch-site", "authorization")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@dataclass(frozen=True)
class Answer:
    """A reply the guard sends instead of calling the app: status, one line, extra headers."""

    status: int
    detail: str
    headers: tuple[tuple[str, str], ...] = ()


# The app's token check: the request's headers (lower-case names) and its ASGI scope; an Answer
# (a 401, or the UI's login redirect) or None to let the request through.
Auth = Callable[[Mapping[str, str], Scope], Answer | None]


def check_token(token: str, source: str) -> str:
    """``token`` when it is strong enough: at least 16 visible ASCII characters, no spaces.

    ``source`` names where it came from (``--token``, ``$LMMS_EVAL_SERVER_TOKEN``, a file) in the
    one-line :class:`ConfigError`, which never shows the token itself.
    """
    if not token.strip():
        raise ConfigError(f"{source}: the token is blank; give at least {MIN_TOKEN_CHARS} characters")
    if not all("!" <= c <= "~" for c in token):
        raise ConfigError(f"{source}: the token may hold visible ASCII characters only (no spaces)")
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"{source}: the token has {len(token)} characters; give at least {MIN_TOKEN_CHARS} "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def _valid_name(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return len(name) <= 253 and all(_LABEL.match(label) for label in name.split("."))


def parse_hosts(value: object) -> list[str]:
    """Host names or addresses (a list or one comma-separated string), lower-case, no port.

    Raises ``ValueError`` naming the first entry that is not a host name or an IP address.
    """
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise ValueError("allowed_hosts must be host names, e.g. 'gpu-box,gpu-box.lan'")
    names: list[str] = []
    for item in items:
        text = str(item).strip().lower()
        name = text[1:-1] if text.startswith("[") and text.endswith("]") else text
        if not name:
            continue
        if not _valid_name(name):
            raise ValueError(
                f"allowed_hosts: '{str(item)[:80]}' is not a host name or IP address "
                "(give names like gpu-box.lan or 10.0.0.5, without scheme, port or path)"
            )
        names.append(name)
    return names


def allowed_names(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a server bound to ``bind_host`` answers: loopback, ``bind_host``, ``extra``."""
    return LOOPBACK_NAMES | frozenset(parse_hosts([bind_host, *extra]))


def host_name(value: str) -> str | None:
    """The name of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``), or None if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep:
            return None
    else:
        name, sep, port = value.partition(":")
        rest = sep + port
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return None
    return name or None


def _headers(scope: Scope) -> tuple[dict[str, str], str | None]:
    """The request's headers by lower-case name, and the name of one that came twice (if any)."""
    headers: dict[str, str] = {}
    twice = None
    for raw_name, raw_value in scope.get("headers") or ():
        name = raw_name.decode("latin-1").lower()
        if name in headers and name in _SINGLE:
            twice = name
        headers[name] = raw_value.decode("latin-1")
    return headers, twice


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def cross_site(method: str, headers: Mapping[str, str]) -> Answer | None:
    """The refusal of a request another site makes (rule 2 of the module docstring), or None."""
    site = headers.get("sec-fetch-site", "")
    foreign = site in ("cross-site", "same-site")
    if method not in STATE_CHANGING:
        if foreign and headers.get("sec-fetch-mode", "") != "navigate":
            return Answer(403, f"a {site} page may not read this service")
        return None
    if foreign:
        return Answer(403, f"{method} from a {site} page is refused; use this service's own page or a script")
    origin = headers.get("origin")
    if origin is not None:
        scheme, sep, netloc = origin.partition("://")
        if (
            not sep
            or scheme.lower() not in ("http", "https")
            or netloc.lower() != headers.get("host", "").lower()
        ):
            return Answer(
                403,
                f"{method} from the origin '{origin[:100]}' is refused; only this service's own page may send it",
            )
    has_body = any(h in headers for h in ("content-type", "transfer-encoding"))
    has_body = has_body or headers.get("content-length", "0") != "0"
    if has_body and _media_type(headers.get("content-type", "")) != "application/json":
        return Answer(415, f"{method} bodies must be sent as Content-Type: application/json")
    return None


async def answer(send: Send, reply: Answer) -> None:
    """Send ``reply`` as a JSON ``{"detail": ...}`` response (closing the connection on an error)."""
    body = json.dumps({"detail": reply.detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if reply.status >= 400:  # a refused request may have left its body unread
        headers.append((b"connection", b"close"))
    headers.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers)
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    """Raised into the app when the body passed the limit (the 413 is already sent)."""


class _CountedBody:
    """``receive`` and ``send`` of one request whose body is counted as it arrives."""

    def __init__(self, receive: Receive, send: Send, limit: int) -> None:
        self._receive, self._send, self.limit = receive, send, limit
        self.received = 0
        self.started = False  # the app began its response
        self.refused = False  # the 413 went out

    async def receive(self) -> Message:
        if self.refused:
            raise _TooLarge
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                self.refused = True
                if not self.started:
                    self.started = True
                    await answer(self._send, Answer(413, f"request body over {self.limit} bytes"))
                raise _TooLarge
        return message

    async def send(self, message: Message) -> None:
        if self.refused:  # the 413 went out: what the app answers after it is dropped
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


class HttpGuard:
    """The ASGI middleware of the module docstring (add it last, so that it runs first)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Iterable[str],
        max_body: int,
        auth: Auth | None = None,
        public: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.hosts = frozenset(hosts)
        self.max_body = max_body
        self.auth = auth
        self.public = frozenset(public)

    def refusal(self, scope: Scope, headers: Mapping[str, str], twice: str | None) -> Answer | None:
        """Rules 1 to 3, and the declared length of rule 4: the first that refuses, or None."""
        if twice is not None:
            return Answer(400, f"the header '{twice}' is given twice")
        name = host_name(headers.get("host", ""))
        if name is None or not (name in self.hosts or is_loopback_host(name)):
            shown = headers.get("host", "")[:100]
            return Answer(400, f"the Host '{shown}' is not served here; add its name to --allowed_hosts")
        refused = cross_site(scope["method"], headers)
        if refused is not None:
            return refused
        if self.auth is not None and scope["path"] not in self.public:
            refused = self.auth(headers, scope)
            if refused is not None:
                return refused
        declared = headers.get("content-length")
        if declared is not None and not declared.isdigit():
            return Answer(400, "Content-Length must be a whole number")
        if declared is not None and int(declared) > self.max_body:
            return Answer(413, f"request body over {self.max_body} bytes")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers, twice = _headers(scope)
        refused = self.refusal(scope, headers, twice)
        if refused is not None:
            await answer(send, refused)
            return
        if "content-length" not in headers and "transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body: nothing to count
            return
        body = _CountedBody(receive, send, self.max_body)
        try:
            await self.app(scope, body.receive, body.send)
        except Exception:
            if not body.refused:
                raise
            logger.debug("request body over %d bytes refused", self.max_body)
