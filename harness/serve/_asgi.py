"""The HTTP side of ``toolchaos serve``: an ASGI request becomes the ``httpx.Request`` the wire
reads, and the wire's ``httpx.Response`` goes back as ASGI messages, byte for byte.

The model paths go straight to ``WireApp`` (no framework in between: the connection itself
is needed to cut a stream). ``/mcp`` (the chaos MCP server) and ``/toolchaos/...`` (the
run's own endpoints) are a Starlette app, whose lifespan runs the MCP session manager.

A stream that fails part-way (``stream_cut``) and a request the wire answers with no
answer at all (the ``timeout`` fault) close the connection: the client sees the body cut,
or the connection dropped before any response, as from a real server.

A body is read as it arrives, up to the server's cap (``MAX_BODY``): past it, reading stops
and the request is answered 413 in its API's error format, so a body of any size costs the
server at most the cap (uvicorn drops the rest of it unread once the answer is sent).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx
from toolchaos.wire import Chunks

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Handler = Callable[[httpx.Request], "httpx.Response | None"]

# The largest request body read (bytes). An SDK sends the whole conversation with every request:
# Codex's requests are about 40 KB, a 200-turn conversation about 200 KB. 8 MiB is forty times
# the largest of those, room for pasted files and a few inline images, and bounds what one
# request can make the server hold (``Server(max_body=)``, ``toolchaos serve --max-body``).
MAX_BODY = 8 * 1024 * 1024
# The extension of a request whose body was refused unread: (status, message) for the handler to
# answer in the API's own error format, without dispatching it.
REFUSED = "toolchaos.refused"


class Dropped(Exception):
    """The answer is no answer: the connection is closed (raised only on servers other than uvicorn)."""


class TooLarge(Exception):
    """A request body past the cap: refused, read no further."""

    def __init__(self, limit: int, declared: int | None = None) -> None:
        size = f"{declared} bytes" if declared is not None else f"more than {limit} bytes"
        super().__init__(f"toolchaos serve: the request body is {size}; this server reads at most {limit} bytes "
                         f"(toolchaos serve --max-body BYTES, Server(max_body=...))")


def check_max_body(raw: object, source: str) -> int:
    """``raw`` as a body cap in bytes, or ``ValueError`` naming ``source`` and the value."""
    try:
        limit = int(raw) if isinstance(raw, (int, str)) and not isinstance(raw, bool) else 0
    except ValueError:
        limit = 0
    if limit <= 0:
        raise ValueError(f"{source}: expected a positive whole number of bytes (the largest request body the "
                         f"server reads; default {MAX_BODY}, 8 MiB), got {raw!r}")
    return limit


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The request's body, read as it arrives; None when the client left first.

    Raises ``TooLarge`` as soon as the body is known to pass ``limit``: at once when its
    Content-Length says so (nothing is read), else when the bytes received pass it (the chunk
    that passes it is dropped, never kept).
    """
    declared = _content_length(scope)
    if declared is not None and declared > limit:
        raise TooLarge(limit, declared)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge(limit)
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:  # the HTTP server refuses such a request before the app sees it
                return None
    return None


def as_request(scope: Scope, body: bytes) -> httpx.Request:
    """The request as the wire reads it, addressed to the server's own host and port."""
    host, port = scope.get("server") or ("127.0.0.1", None)
    query = scope.get("query_string") or b""
    url = httpx.URL(scheme="http", host=host, port=port, path=scope["path"])
    if query:
        url = url.copy_with(query=query)
    return httpx.Request(scope["method"], url, headers=list(scope.get("headers") or ()), content=body)


async def drop(send: Send) -> None:
    """Close the connection now. uvicorn's ``send`` is a bound method of its request cycle, which
    holds the transport; marking the cycle disconnected keeps uvicorn from answering 500."""
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise Dropped()
    transport.close()
    cycle.disconnected = True  # type: ignore[union-attr]


async def send_response(response: httpx.Response, send: Send) -> None:
    await send({"type": "http.response.start", "status": response.status_code, "headers": response.headers.raw})
    stream: Any = response.stream
    if isinstance(stream, Chunks):
        for chunk in stream.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if stream.fail is not None:
            await drop(send)
            return
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.body", "body": b"".join(stream)})


class WireApp:
    """Model-API requests answered by ``handle`` (the server's: the wire's ``dispatch``, paced).

    A body past ``max_body`` reaches ``handle`` unread, marked ``REFUSED`` (413).
    """

    def __init__(self, handle: Handler, unknown: Callable[[httpx.Request], httpx.Response],
                 max_body: int | None = None) -> None:
        self.handle = handle
        self.unknown = unknown
        self.max_body = MAX_BODY if max_body is None else max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await read_body(scope, receive, self.max_body)
        except TooLarge as exc:
            request = as_request(scope, b"")
            request.extensions[REFUSED] = (413, str(exc))
            await send_response(self.handle(request) or self.unknown(request), send)
            return
        if body is None:
            return
        request = as_request(scope, body)
        try:
            response = self.handle(request)
        except httpx.TimeoutException:  # the timeout fault: the virtual wait is spent, no answer comes
            await drop(send)
            return
        await send_response(response if response is not None else self.unknown(request), send)


class App:
    """The whole server: model paths to ``wire``, ``/mcp`` and ``/toolchaos/`` (and the lifespan) to ``control``."""

    def __init__(self, wire: ASGIApp, control: ASGIApp) -> None:
        self.wire = wire
        self.control = control

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(("/mcp", "/toolchaos/")):
            await self.wire(scope, receive, send)
        else:
            await self.control(scope, receive, send)
