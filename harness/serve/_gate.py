"""The run's capability: only a request that carries the run's token, to the run's own address, reaches it.

Every URL a served run hands out (the model APIs' base URLs, the MCP endpoint, the end and
urls endpoints: what ``toolchaos serve`` prints, ``--urls-file``, a process agent's environment
and its preset's config files) starts with a path prefix holding a random token minted for the
run, ``http://127.0.0.1:PORT/<token>/v1``. The gate in front of the whole ASGI app lets a request
through only when

- its path starts with that prefix (which it strips: the rest of the server sees the API's own
  paths), and
- its ``Host`` names the address the server bound (a DNS-rebinding page names its own), and
- its ``Origin``, when it has one (a browser's cross-site request), is that address too.

Anything else is refused in the API's own error format (401 without the token, 403 for a foreign
Host or Origin) and recorded as a foreign attempt, which the run's result and its report carry:
someone who could reach the port, but was not handed the run, tried it.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterable
from typing import Any

from toolchaos.serve._asgi import ASGIApp, Receive, Scope, Send

__all__ = ["Gate", "mint"]

_KEEP = 100  # foreign attempts kept in full; past that only counted (a flood must not fill memory)


def mint() -> str:
    """A run's capability: 128 random bits, URL-safe, prefixed so that a reader can tell what it is."""
    return "tc-" + secrets.token_urlsafe(16)


class Gate:
    """ASGI middleware: the token's prefix, the Host and the Origin checked on every request."""

    def __init__(self, app: ASGIApp, token: str, hosts: Iterable[str] | None) -> None:
        self.app = app
        self.prefix = f"/{token}"
        # None: bound for other machines (allow_remote), whose names for it are not known here: any
        # Host, an Origin only when it is that Host's own, and the token still required
        self.hosts = None if hosts is None else frozenset(h.lower() for h in hosts)
        self.attempts: list[dict[str, Any]] = []
        self.refused = 0
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # the lifespan: the server's own
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        why = self._refusal(scope, path)
        if why is not None:
            status, reason = why
            self._record(scope, path, reason)
            if scope["type"] == "http":
                await _refuse(send, status, path, reason)
            return
        inner = path[len(self.prefix):] or "/"
        raw = scope.get("raw_path")
        if isinstance(raw, bytes):
            raw = raw[len(self.prefix):] or b"/"
        await self.app({**scope, "path": inner, "raw_path": raw}, receive, send)

    def _refusal(self, scope: Scope, path: str) -> tuple[int, str] | None:
        headers = {k.lower(): v for k, v in scope.get("headers") or ()}
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if self.hosts is not None and host not in self.hosts:
            return 403, f"foreign Host {host or '(none)'!r}"
        origin = headers.get(b"origin")
        allowed = self.hosts if self.hosts is not None else {host}
        if origin is not None and origin.decode("latin-1").lower().removeprefix("http://") not in allowed:
            return 403, f"foreign Origin {origin.decode('latin-1')!r}"
        if path != self.prefix and not path.startswith(self.prefix + "/"):
            return 401, "no run token in the path"
        return None

    def _record(self, scope: Scope, path: str, reason: str) -> None:
        client = scope.get("client") or ("?", 0)
        with self._lock:
            self.refused += 1
            if len(self.attempts) < _KEEP:
                # The path as asked, but never a token it may carry (a wrong guess is still a secret's shape).
                first, sep, rest = path[1:].partition("/")
                shown = f"/<token>{sep}{rest}" if first.startswith("tc-") else path
                self.attempts.append({"method": scope.get("method", "WEBSOCKET"), "path": shown[:200],
                                      "reason": reason, "client": str(client[0])})


async def _refuse(send: Send, status: int, path: str, reason: str) -> None:
    message = (f"toolchaos serve: refused ({reason}): this run answers only the URLs it handed out, which carry "
               f"its token")
    body = json.dumps(_error(path, status, message)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _error(path: str, status: int, message: str) -> dict[str, Any]:
    """The refusal in the wording of the API the path looks like (OpenAI's when none)."""
    if "/messages" in path:
        kind = "authentication_error" if status == 401 else "permission_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    if "/v1beta/" in path or ":generateContent" in path or ":streamGenerateContent" in path:
        return {"error": {"code": status, "message": message,
                          "status": "UNAUTHENTICATED" if status == 401 else "PERMISSION_DENIED"}}
    return {"error": {"message": message, "type": "invalid_request_error",
                      "param": None, "code": "invalid_api_key" if status == 401 else "forbidden"}}
