"""The HTTP side of ``toolchaos serve``: an ASGI request becomes the ``httpx.Request`` the wire
reads, and the wire's ``httpx.Response`` goes back as ASGI messages, byte for byte.

The model paths go straight to ``WireApp`` (no framework in between: the connection itself
is needed to cut a stream). ``/mcp`` (the chaos MCP server) and ``/toolchaos/...`` (the
run's own endpoints) are a Starlette app, whose lifespan runs the MCP session manager.

A stream that fails part-way (``stream_cut``) and a request the wire answers with no
answer at all (the ``timeout`` fault) close the connection: the client sees the body cut,
or the connection dropped before any response, as from a real server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx
from toolchaos.wire._mocker import Chunks

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Handler = Callable[[httpx.Request], "httpx.Response | None"]


class Dropped(Exception):
    """The answer is no answer: the connection is closed (raised only on servers other than uvicorn)."""


async def _body(receive: Receive) -> bytes | None:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


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
    """Model-API requests answered by ``handle`` (the server's: the wire's ``dispatch``, paced)."""

    def __init__(self, handle: Handler, unknown: Callable[[httpx.Request], httpx.Response]) -> None:
        self.handle = handle
        self.unknown = unknown

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _body(receive)
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
