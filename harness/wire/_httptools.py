"""HTTP-backed tools: a fake tool behind an HTTP API, served by the wire at the transport.

``http_tool("fetch_invoice", "GET https://billing.test/invoices/{invoice_id}")`` declares
one; the wire binds it to its run (``HttpTool.bind``), matches requests against it and
answers with the tool's outcome as an HTTP API would (``respond``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import httpx
from toolchaos.wire._http import JSON, json_response, read_timeout
from toolchaos.wire._mocker import Body

if TYPE_CHECKING:
    from toolchaos.wire._server import Wire

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CONNECT_FAULTS = ("timeout", "refused")


@dataclass(frozen=True)
class HttpTool:
    """A fake tool behind an HTTP API: ``http_tool("fetch_invoice", "GET https://billing.test/invoices/{invoice_id}")``.

    The tool's arguments come from the path placeholders, the query string and a JSON
    object body. The tool's fault schedule answers at the transport (see ``respond``);
    ``connect_faults`` ({request number: "timeout" | "refused"}) fail before the request
    reaches the tool, so those requests execute nothing.
    """

    tool: str
    method: str
    url: str
    connect_faults: Mapping[int, str] = field(default_factory=dict)

    def bind(self, wire: Wire) -> _BoundHttpTool:
        return _BoundHttpTool(self, wire)

    def describe(self) -> str:
        return f"{self.method} {self.url} -> {self.tool}"


def http_tool(tool: str, route: str, *, method: str | None = None,
              connect_faults: Mapping[int | str, str] | None = None) -> HttpTool:
    """An HTTP-backed tool; ``route`` is ``"METHOD URL"`` or a URL (``method`` then defaults to GET)."""
    parts = route.split(None, 1)
    if len(parts) == 2 and parts[0].isalpha() and parts[0].isupper():
        verb, url = parts
    else:
        verb, url = method or "GET", route
    if method is not None and method.upper() != verb:
        raise ValueError(f"http_tool {tool!r}: the route says {verb} but method={method!r}")
    faults: dict[int, str] = {}
    for key, value in (connect_faults or {}).items():
        if value not in _CONNECT_FAULTS:
            raise ValueError(f"http_tool {tool!r}: connect_faults[{key!r}] must be one of {_CONNECT_FAULTS}, got {value!r}")
        faults[int(key)] = value
    if not httpx.URL(_PLACEHOLDER.sub("x", url)).host:
        raise ValueError(f"http_tool {tool!r}: expected an absolute URL, got {url!r}")
    return HttpTool(tool, verb.upper(), url, faults)


_STATUS = {"unavailable": 503, "rate_limited": 429, "internal_error": 500, "permission_denied": 403,
           "policy_blocked": 403, "not_found": 404}


class _BoundHttpTool:
    def __init__(self, spec: HttpTool, wire: Wire) -> None:
        self.spec = spec
        self.wire = wire
        tool = wire.toolbox.spec(spec.tool)  # raises UnknownTool naming the known tools
        self.props = dict((tool.parameters or {}).get("properties") or {})
        template = httpx.URL(_PLACEHOLDER.sub(lambda m: f"__{m.group(1)}__", spec.url))
        self.host, self.port = template.host, template.port
        path = template.path
        pattern = re.escape(path)
        for name in _PLACEHOLDER.findall(spec.url):
            pattern = pattern.replace(re.escape(f"__{name}__"), f"(?P<{name}>[^/]+)")
        self.path = re.compile(pattern + r"/?\Z")
        self.requests = 0

    def describe(self) -> str:
        return self.spec.describe()

    def match(self, request: httpx.Request) -> dict[str, Any] | None:
        url = request.url
        if url.host != self.host or url.port != self.port or request.method != self.spec.method:
            return None
        m = self.path.match(url.path)
        if m is None:
            return None
        args: dict[str, Any] = {k: unquote(v) for k, v in m.groupdict().items()}
        for k, v in url.params.multi_items():
            args.setdefault(k, v)
        if request.content:
            try:
                body = json.loads(request.content)
            except ValueError:
                body = None
            if isinstance(body, Mapping):
                args.update(body)
        return {k: self._coerce(k, v) for k, v in args.items()}

    def _coerce(self, name: str, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        kind = (self.props.get(name) or {}).get("type")
        try:
            if kind == "integer":
                return int(value)
            if kind == "number":
                return float(value)
        except ValueError:
            return value
        if kind == "boolean" and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return value

    def handle(self, request: httpx.Request, args: dict[str, Any]) -> httpx.Response:
        with self.wire.lock:
            self.requests += 1
            connect = self.spec.connect_faults.get(self.requests)
            clock = self.wire.clock
            if connect == "timeout":
                clock.advance(read_timeout(request, "connect") or 5.0)
                raise httpx.ConnectTimeout("timed out", request=request)
            if connect == "refused":
                raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
            _, outcome = self.wire.toolbox.execute(self.spec.tool, args)
        return respond(outcome, request)


def respond(outcome: Any, request: httpx.Request) -> httpx.Response:
    """A tool outcome at the transport.

    SUCCESS 200 (a string payload, e.g. a malformed one, goes out verbatim), PENDING 202,
    timeout -> ``httpx.ReadTimeout``, connection reset -> ``httpx.ReadError``, 503/429/500
    with ``Retry-After`` when the outcome has one (or the header of the form the fault wrote
    its wait in: an HTTP-date, ``retry-after-ms``, a rate-limit reset), PRECONDITION 400 naming the field,
    permission denied / policy blocked 403, not found 404. A latency beyond the client's
    read timeout is a read timeout too.
    """
    limit = read_timeout(request)
    cls = outcome.cls.value
    if outcome.code == "timeout" or (limit is not None and outcome.latency > limit):
        raise httpx.ReadTimeout("The read operation timed out", request=request)
    if outcome.code == "connection_reset":
        raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)
    if cls in ("SUCCESS", "PENDING"):
        data = outcome.data
        if isinstance(data, str):
            return httpx.Response(200, headers=JSON, stream=Body(data.encode()))
        return json_response(202 if cls == "PENDING" else 200, data)
    headers = []
    if outcome.headers:  # the wait in the form the scenario chose, as real headers (not in the body)
        headers += [(k.encode(), v.encode()) for k, v in outcome.headers]
    elif outcome.retry_after is not None:
        headers.append((b"retry-after", str(max(0, math.ceil(outcome.retry_after))).encode()))
    status = 400 if cls == "PRECONDITION" else _STATUS.get(outcome.code, 500 if cls == "RETRYABLE" else 403)
    body = outcome.error_payload()
    body["error"].pop("headers", None)
    return json_response(status, body, headers)
