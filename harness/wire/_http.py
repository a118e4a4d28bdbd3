"""The wire's side of HTTP: responses as the model endpoints and the HTTP-backed tools send them.

Responses carry their body as a ready ``Body`` (or ``Chunks`` for a stream that fails
part-way, see ``_mocker``), so a response costs no encoding work in httpx; the JSON
headers are built once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx
from toolchaos.wire._mocker import Body, Chunks

JSON = [(b"content-type", b"application/json")]
_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode

_JSON_HEADERS = httpx.Headers(JSON)  # built once: httpx copies a Headers object without re-normalising it
_SSE_HEADERS = httpx.Headers(_SSE)


def json_response(status: int, obj: Any, headers: Iterable[tuple[bytes, bytes]] = ()) -> httpx.Response:
    extra = list(headers)
    return httpx.Response(status, headers=_JSON_HEADERS if not extra else [*JSON, *extra],
                          stream=Body(dumps(obj).encode()))


def json_response_bytes(data: bytes) -> httpx.Response:
    """A 200 JSON body already encoded (Gemini's streamed array)."""
    return httpx.Response(200, headers=_JSON_HEADERS, stream=Body(data))


def sse_response(chunks: list[bytes], fail: BaseException | None = None,
                 before_fail: Callable[[], None] | None = None) -> httpx.Response:
    stream: Any = Body(b"".join(chunks)) if fail is None else Chunks(chunks, fail, before_fail)
    return httpx.Response(200, headers=_SSE_HEADERS, stream=stream)


def read_timeout(request: httpx.Request, kind: str = "read") -> float | None:
    """The client's timeout of this kind (``read``, ``connect``) for the request, if it set one."""
    timeout = request.extensions.get("timeout")
    value = timeout.get(kind) if isinstance(timeout, Mapping) else None
    return float(value) if isinstance(value, (int, float)) else None
