"""The wire: model APIs answered by the policy, and HTTP-backed tools (``_httptools``), behind one respx route.

``Wire`` owns a respx ``MockRouter`` (on the dual mocker, so classic ``httpx`` and
``httpx2`` are both served) holding one route, ``WireRoute``, that dispatches by
(host, port, path) with a dictionary lookup: respx still applies its
``assert_all_mocked`` rule, but a request costs one lookup instead of a pattern match
per route. Users may add their own routes to ``wire.router``; a request
the wire does not serve falls through to them. respx records the calls of those routes as
always; the wire's own route records none (``wire.requests`` is its record): respx's call
list would keep every request of a run alive, the whole history's bytes each time, so a
long conversation's bodies could never be freed and every new body landed in fresh memory.

Model endpoints (each at the SDK's default base URL, at ``$OPENAI_BASE_URL`` /
``$OPENAI_API_BASE`` / ``$ANTHROPIC_BASE_URL`` if set, and at any ``base_urls`` given):

- ``POST {openai}/chat/completions``, ``POST {openai}/responses``
- ``POST {anthropic}/v1/messages``, ``POST {anthropic}/v1/messages/count_tokens``
- ``POST {gemini}/v1beta/models/MODEL:generateContent`` and ``:streamGenerateContent``
  (``?alt=sse`` for server-sent events), also under ``/v1/models/`` (served when the run
  asks for the ``gemini`` API: ``apis=("openai", "anthropic", "gemini")``)

``dispatch`` is the one request -> response function: the respx route calls it for an
in-process agent, and ``toolchaos serve``'s HTTP server calls it for a request from any
process, so both answer with the same bytes (a server built with ``defaults=False``
serves only the base URLs it is given).

Each model request is read into neutral messages (``_formats``), handed to the run's
``ModelClient.complete`` (which consults the policy and records the model turn), and
the turn is encoded back, streamed or not. The server keeps conversations by id as the
real APIs do: the Responses API's ``previous_response_id`` and Anthropic's threads
(``thread: {"type": "create"}`` then ``{"type": "continue", "previous_message_id": ...}``
carrying only the new messages; a thread continues once; an unknown id is a 404
``thread_not_found``).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import respx
from respx.models import Route, SideEffectError
from toolchaos._engine.state import RunState
from toolchaos._internal.events import Shown
from toolchaos._internal.model import ModelTurn, Usage, estimate_tokens
from toolchaos._plumbing import clock as _clock
from toolchaos.errors import RunClosed
from toolchaos.fake_tools.retry import SECONDS
from toolchaos.fake_tools.retry import headers as retry_headers
from toolchaos.wire import _formats as fmt
from toolchaos.wire import _names
from toolchaos.wire._apifaults import ApiFault, ApiFaults
from toolchaos.wire._conversation import Conversations
from toolchaos.wire._http import JSON, dumps, json_response, json_response_bytes, read_timeout, sse_response
from toolchaos.wire._mocker import Body, Chunks, DualHTTPCoreMocker, set_refusal, set_unmatched_hint
from toolchaos.wire._shapes import Malformed, array, obj
from toolchaos.wire._side import Side, classify, side_answer_of, system_of

OPENAI_DEFAULT = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT = "https://api.anthropic.com"
OPENAI_ENV = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
ANTHROPIC_ENV = ("ANTHROPIC_BASE_URL",)
GEMINI_DEFAULT = "https://generativelanguage.googleapis.com"
GEMINI_ENV = ("GOOGLE_GEMINI_BASE_URL",)
APIS = ("openai", "anthropic")  # what a run serves unless told: the SDK agents' APIs
ALL_APIS = ("openai", "anthropic", "gemini")
_DEFAULTS = {"openai": (OPENAI_DEFAULT, OPENAI_ENV), "anthropic": (ANTHROPIC_DEFAULT, ANTHROPIC_ENV),
             "gemini": (GEMINI_DEFAULT, GEMINI_ENV)}
GEMINI_PREFIXES = ("/v1beta/models/", "/v1/models/")
EPOCH_TS = 1767225600  # 2026-01-01T00:00:00Z, the virtual clock's origin (toolchaos._plumbing.clock.EPOCH)

Handler = Callable[[httpx.Request], "httpx.Response | None"]
Answer = Callable[["Request", dict[str, Any]], httpx.Response]  # a model endpoint's own part (see Wire._serve_model)
Key = tuple[str, "int | None", str]

# each API's wording for a request body that is not JSON
_OPENAI_UNREADABLE = "We could not parse the JSON body of your request."
_ANTHROPIC_UNREADABLE = "messages: the request body is not valid JSON"
_GEMINI_UNREADABLE = "Invalid JSON payload received."
_GEMINI_STATUS = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 529: "UNAVAILABLE",
                  400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 413: "INVALID_ARGUMENT"}


def _clip(content: Any, limit: int = 300) -> Any:
    if content is None or isinstance(content, (int, float, bool)):
        return content
    text = content if isinstance(content, str) else dumps(content)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _key(url: httpx.URL) -> Key:
    return (url.host, url.port, url.path.rstrip("/") or "/")


def base_key(base: str, suffix: str) -> Key:
    url = httpx.URL(base.rstrip("/") + suffix)
    if not url.host:
        raise ValueError(f"base URL {base!r}: expected an absolute URL such as https://host/v1")
    return _key(url)


def openai_error(status: int, message: str, type_: str, code: str | None = None,
                 param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def anthropic_error(type_: str, message: str, error_code: str | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"type": type_, "message": message}
    if error_code is not None:
        err["details"] = {"error_code": error_code}
    return {"type": "error", "error": err}


_ANTHROPIC_TYPES = {429: "rate_limit_error", 500: "api_error", 503: "api_error", 529: "overloaded_error",
                    400: "invalid_request_error", 404: "not_found_error", 413: "request_too_large"}
_OPENAI_TYPES = {429: "rate_limit_exceeded", 500: "server_error", 503: "server_error", 529: "server_error",
                 400: "invalid_request_error", 404: "invalid_request_error", 413: "invalid_request_error"}
_FAULT_TEXT = {"rate_limited": "Rate limit reached. Please try again later.", "server_error": "Internal server error.",
               "unavailable": "The service is temporarily unavailable.", "overloaded": "Overloaded"}


def _refuse(rec: Request, status: int, code: str, payload: dict[str, Any]) -> httpx.Response:
    """The API turns a request down (e.g. an unknown conversation id): ``wire.requests`` shows
    the status the client got, and why."""
    rec.status, rec.fault = status, code
    return json_response(status, payload)


def gemini_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": _GEMINI_STATUS.get(status, "INTERNAL")}}


def _scripted_side_answer(policy: Any) -> Any:
    """The ``side_answer`` a policy carries, or the one of the policy it wraps (``obedient``, ``ignores_refusals``)."""
    for _ in range(8):  # wrappers nest a few deep at most
        if policy is None or getattr(policy, "side_answer", None) is not None:
            break
        policy = getattr(policy, "inner", None)
    return getattr(policy, "side_answer", None)


def _check_apis(apis: Iterable[str], where: str) -> None:
    for api in apis:
        if api not in ALL_APIS:
            raise ValueError(f"{where}unknown model API {api!r}; known: {', '.join(ALL_APIS)}")


def _bases(api: str, given: str | Iterable[str], defaults: bool = True) -> list[str]:
    """An API's base URLs: the SDK's default, the environment's, then the ones given (each once).

    ``defaults=False`` (the HTTP server): only the ones given.
    """
    default, env = _DEFAULTS[api]
    bases = [default, *(os.environ[var] for var in env if os.environ.get(var))] if defaults else []
    bases += [given] if isinstance(given, str) else list(given)
    return list(dict.fromkeys(b.rstrip("/") for b in bases))


class _Router(respx.MockRouter):
    """The wire's respx router: calls of the wire's own route are not kept in ``calls``.

    An SDK sends the whole conversation every turn, so respx's record of each call (the
    request with its body, the response) holds n bodies of up to n messages after n turns:
    megabytes a long run can never free, which also leave the allocator no freed block to
    reuse, so each new body is built in fresh pages. ``Wire.requests`` records the wire's
    requests; the user's routes on this router are recorded as respx always does.
    """

    wire_route: Route | None = None

    def record(self, request: httpx.Request, *, response: httpx.Response | None = None,
               route: Route | None = None) -> None:
        if route is not None and route is self.wire_route:
            return
        super().record(request, response=response, route=route)


class WireRoute(Route):
    """The respx route of a wire: matches what the wire serves (its calls are not recorded, see ``_Router``)."""

    def __init__(self, wire: Wire) -> None:
        super().__init__()
        self._wire = wire

    def __eq__(self, other: object) -> bool:  # never merged with a user's pattern-less route
        return other is self

    __hash__ = Route.__hash__

    def match(self, request: httpx.Request) -> Any:
        try:
            return self._wire.dispatch(request)
        except httpx.HTTPError as exc:  # a transport fault: respx records the call, then re-raises it
            raise SideEffectError(self, origin=exc) from exc


@dataclass
class Request:
    """One model request as the wire saw it (``wire.requests``)."""

    n: int
    api: str
    url: str
    stream: bool
    status: int = 200
    fault: str | None = None
    step: int | None = None  # the model turn it produced (None when faulted)
    body: dict[str, Any] = field(default_factory=dict, repr=False)
    path: str = ""  # Gemini only: the URL path names the model and the method
    side: str | None = None  # why it was a side request, answered by the wire itself (``_side``): schema, no_tools

    @property
    def is_side(self) -> bool:
        """A side request (a title, a loop check, ...): answered without the policy, not a model turn."""
        return self.side is not None


class Wire:
    """The model APIs and HTTP tools of one run (see the module docstring)."""

    def __init__(self, model: Any, toolbox: Any, *, apis: Iterable[str] = APIS,
                 base_urls: Mapping[str, str | Iterable[str]] | None = None, api_faults: Any = None,
                 http_tools: Iterable[Any] = (), defaults: bool = True) -> None:
        self.model = model
        self.toolbox = toolbox
        self._run: RunState = model._run  # the wire records api faults and what the model was shown
        self.clock = self._run.clock
        self.apis = tuple(apis)
        _check_apis(self.apis, "")
        self.faults = ApiFaults(api_faults)
        self.requests: list[Request] = []
        self.unmatched: list[str] = []
        self.refused: list[str] = []  # unmatched requests of threads that are not the run's (``refusal``)
        self.responses: dict[str, list[dict[str, Any]]] = {}
        self.threads: dict[str, dict[str, Any]] = {}
        self.conversations = Conversations()  # bodies read per conversation: a request costs what is new in it
        # What tells a side request from a main turn (``_side.classify``): the ids of the calls the run asked
        # for, and the system prompt of the last request that declared tools.
        self.asked: set[str] = set()
        self.main_system: str | None = None
        self.side_answer = side_answer_of(_scripted_side_answer(self._run.policy))
        self.lock = threading.RLock()
        self.routes: dict[Key, tuple[str, Handler]] = {}
        self.prefixes: list[tuple[Key, Handler]] = []  # Gemini: the model's name is part of the path
        self.urls: dict[Key, str] = {}
        self.base_urls: dict[str, list[str]] = {}
        extra = dict(base_urls or {})
        _check_apis(extra, "base_urls: ")
        for api in self.apis:
            self.base_urls[api] = _bases(api, extra.get(api) or (), defaults)
            for base in self.base_urls[api]:
                self._serve_api(api, base)
        traces = base_key(OPENAI_DEFAULT, "/traces/ingest")
        if defaults and traces not in self.routes:  # whatever the run serves: the SDK exports there by default
            self._serve(traces, "openai.traces", self._traces)
        self.http_tools = [t.bind(self) for t in http_tools]
        self.router = _Router(assert_all_called=False, assert_all_mocked=True, using=DualHTTPCoreMocker.name)
        self.route = self.router.wire_route = self.router.add(WireRoute(self), name="toolchaos")
        self.run_slug = re.sub(r"[^A-Za-z0-9]+", "", self._run.run_id)[:24] or "run"

    def _serve_api(self, api: str, base: str) -> None:
        """One API's endpoints at one base URL."""
        if api == "openai":
            self._serve_model(base_key(base, "/chat/completions"), "openai.chat", self._chat, _OPENAI_UNREADABLE)
            self._serve_model(base_key(base, "/responses"), "openai.responses", self._responses, _OPENAI_UNREADABLE)
            self._serve(base_key(base, "/traces/ingest"), "openai.traces", self._traces)
        elif api == "anthropic":
            self._serve_model(base_key(base, "/v1/messages"), "anthropic.messages", self._messages,
                              _ANTHROPIC_UNREADABLE)
            self._serve(base_key(base, "/v1/messages/count_tokens"), "anthropic.count_tokens", self._count_tokens)
        else:
            for prefix in GEMINI_PREFIXES:
                self._serve_model(base_key(base, prefix), "gemini", self._gemini, _GEMINI_UNREADABLE, prefix=True)

    def _serve(self, key: Key, name: str, handler: Handler, prefix: bool = False) -> None:
        if prefix:
            self.prefixes.append(((key[0], key[1], key[2] + "/"), handler))
            return
        self.routes[key] = (name, handler)
        host, port, path = key
        self.urls[key] = f"https://{host}{'' if port is None else f':{port}'}{path}"

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        global _active
        with _active_lock:
            if _active is not None:
                raise RuntimeError("toolchaos: a wire is already serving (one wire run at a time per process)")
            _active = self
            DualHTTPCoreMocker.escape_unmatched += 1
        self.router.start()

    def stop(self) -> None:
        global _active
        try:
            self.router.stop(quiet=True)
        finally:
            with _active_lock:
                DualHTTPCoreMocker.escape_unmatched -= 1
                _active = None

    def served(self) -> list[str]:
        out = []
        for (host, port, path), (name, _) in self.routes.items():
            if not name.endswith(("count_tokens", "traces")):
                out.append(f"POST {host}{'' if port is None else f':{port}'}{path}")
        out += [f"POST {h}{'' if p is None else f':{p}'}{path}MODEL:generateContent" for (h, p, path), _ in self.prefixes]
        return out + [t.describe() for t in self.http_tools]

    # --- dispatch ----------------------------------------------------------------------

    def dispatch(self, request: httpx.Request) -> httpx.Response | None:
        url = request.url
        entry = self.routes.get((url.host, url.port, url.path))
        if entry is not None:
            if request.method != "POST":
                return None
            response: httpx.Response | None = entry[1](request)
            return response
        for (host, port, prefix), handler in self.prefixes:  # only when the run serves Gemini
            if url.host == host and url.port == port and url.path.startswith(prefix) and request.method == "POST":
                return handler(request)
        for tool in self.http_tools:
            args = tool.match(request)
            if args is not None:
                answer: httpx.Response = tool.handle(request, args)
                return answer
        return None

    def api_of(self, request: httpx.Request) -> str | None:
        """Which model endpoint a request is for (``openai.chat``, ``anthropic.messages``, ``gemini``, ...)."""
        url = request.url
        entry = self.routes.get((url.host, url.port, url.path))
        if entry is not None:
            return entry[0]
        if any(url.host == h and url.port == p and url.path.startswith(pre) for (h, p, pre), _ in self.prefixes):
            return "gemini"
        return None

    def error_response(self, request: httpx.Request, status: int, message: str) -> httpx.Response:
        """An error in the wording of the API the request was for (OpenAI's when it is none of them)."""
        return self._error(self.api_of(request) or "openai", status, message)

    def refuse(self, request: httpx.Request, status: int, message: str, fault: str) -> httpx.Response:
        """A model request answered with an error before it was read (a body past the server's cap):
        recorded in ``requests`` with its status and ``fault``, never a model turn."""
        api = self.api_of(request)
        if api is not None:
            self.requests.append(Request(len(self.requests) + 1, api, str(request.url), False, status, fault))
        return self._error(api or "openai", status, message)

    # --- model endpoints -----------------------------------------------------------------

    def _begin(self, api: str, request: httpx.Request) -> tuple[Request, dict[str, Any], ApiFault | None]:
        try:
            body = self.conversations.read(api, request.content or b"{}")
        except (ValueError, RecursionError):  # not JSON (bytes, text, encoding), or nested past the parser's depth
            body = None
        url = request.url
        key = (url.host, url.port, url.path)
        known = self.urls.get(key)
        text = known if known is not None and url.scheme == "https" and not url.query else str(url)
        rec = Request(len(self.requests) + 1, api, text, bool(isinstance(body, dict) and body.get("stream")))
        if api == "gemini":  # the method, not the body, says whether it streams
            rec.path, rec.stream = url.path, url.path.endswith(":streamGenerateContent")
        self.requests.append(rec)
        if not isinstance(body, dict):
            rec.status, rec.fault = 400, "bad_request"
            return rec, {}, None
        rec.body = body
        return rec, body, self.faults.pick(rec.n)

    def _serve_model(self, key: Key, api: str, answer: Answer, unreadable: str, prefix: bool = False) -> None:
        """Serve a model endpoint: the steps every API shares, then ``answer``, the API's own part.

        Shared: the request is numbered and recorded, a body that is not JSON is a 400 in the
        API's wording (``unreadable``), a scheduled API fault answers instead of the model.
        ``answer`` then gets the recorded request and its JSON object, still under the lock; a
        field of the wrong JSON type (``_shapes.Malformed``, raised by the readers before the
        model is asked) is a 400 naming the field.
        The route is a closure made once here, so a request makes the same calls as it did with
        one handler per endpoint (route, then answer): the sharing costs nothing per request.
        """
        def route(request: httpx.Request) -> httpx.Response:
            # under the wire's lock: request numbers, fault picks and model turns stay in one order
            with self.lock:
                rec, body, fault = self._begin(api, request)
                if rec.status == 400:
                    return self._error(api, 400, unreadable)
                if fault is not None:
                    return self._fault(api, rec, fault, request)
                try:
                    return answer(rec, body)
                except Malformed as exc:
                    rec.status, rec.fault = 400, "bad_request"
                    return self._error(api, 400, str(exc), param=exc.field)

        self._serve(key, api, route, prefix)

    def _chat(self, rec: Request, body: dict[str, Any]) -> httpx.Response:
        msgs, unchanged, source = self.conversations.handed(body, fmt.chat_message_in)
        options = body.get("stream_options")
        include = bool(obj(options, "stream_options").get("include_usage")) if options is not None else False
        turn = self._complete(rec, msgs, body, unchanged, source)
        rid = f"chatcmpl-{self.run_slug}-{rec.n}"
        model, created = str(body.get("model", "policy")), EPOCH_TS + int(self.clock.t)
        if rec.stream:
            return sse_response(fmt.chat_chunks(turn, rid=rid, model=model, created=created, include_usage=include))
        return json_response(200, fmt.chat_completion(turn, rid=rid, model=model, created=created))

    def _responses(self, rec: Request, body: dict[str, Any]) -> httpx.Response:
        prev = body.get("previous_response_id")
        history: list[dict[str, Any]] = []
        if prev:
            found = self.responses.get(str(prev))
            if found is None:
                return _refuse(rec, 400, "previous_response_not_found", openai_error(
                    400, f"Previous response with id '{prev}' not found.", "invalid_request_error",
                    "previous_response_not_found", "previous_response_id"))
            history = found
        new = fmt.responses_items(body.get("input"))
        instructions = body.get("instructions")
        system = [{"role": "system", "content": fmt.text_of(instructions)}] if instructions else []
        turn = self._complete(rec, system + history + new, body)
        rid = f"resp_{self.run_slug}_{rec.n:04d}"
        if body.get("store", True) is not False:
            self.responses[rid] = history + new + [turn.as_message()]
        model, created = str(body.get("model", "policy")), EPOCH_TS + int(self.clock.t)
        if rec.stream:
            return sse_response(fmt.response_events(turn, rid=rid, model=model, created=created, body=body))
        return json_response(200, fmt.response_object(turn, rid=rid, model=model, created=created, body=body))

    def _messages(self, rec: Request, body: dict[str, Any]) -> httpx.Response:
        thread = body.get("thread")
        history: list[dict[str, Any]] = []
        system = body.get("system")
        state: dict[str, Any] | None = None
        if isinstance(thread, Mapping) and thread.get("type") == "continue":
            pid = str(thread.get("previous_message_id"))
            state = self.threads.get(pid)
            if state is None:
                return _refuse(rec, 404, "thread_not_found", anthropic_error(
                    "not_found_error", f"No thread holds message {pid!r}.", "thread_not_found"))
            if state["continued"]:
                return _refuse(rec, 400, "thread_already_continued", anthropic_error(
                    "invalid_request_error", f"Message {pid!r} has already been continued.",
                    "thread_already_continued"))
            history, system = state["messages"], state["system"]
        lead = [{"role": "system", "content": fmt.system_text(system)}] if system else []
        msgs, unchanged, source = self.conversations.handed(body, fmt.anthropic_message_in, lead)
        new = msgs[len(lead):]
        if history:  # a thread's earlier turns come between: nothing is vouched for
            msgs, unchanged, source = lead + history + new, 0, None
        turn = self._complete(rec, msgs, body, unchanged, source)
        if state is not None:
            state["continued"] = True
        mid = f"msg_{self.run_slug}_{rec.n:04d}"
        if isinstance(thread, Mapping):
            self.threads[mid] = {"messages": history + new + [turn.as_message()], "system": system,
                                 "continued": False}
        model = str(body.get("model", "policy"))
        if rec.stream:
            return sse_response(fmt.anthropic_events(turn, mid=mid, model=model))
        return json_response(200, fmt.anthropic_message(turn, mid=mid, model=model))

    def _gemini(self, rec: Request, body: dict[str, Any]) -> httpx.Response:
        model, _, method = rec.path.rpartition("/")[2].partition(":")
        if method == "countTokens":
            return json_response(200, {"totalTokens": estimate_tokens(fmt.gemini_messages(body))})
        if method not in ("generateContent", "streamGenerateContent"):
            return _refuse(rec, 404, "not_found", gemini_error(404, f"Method {method!r} is not served."))
        turn = self._complete(rec, fmt.gemini_messages(body), body)
        rid = f"{self.run_slug}-{rec.n:04d}"
        if rec.stream:
            sse_format = "alt=sse" in rec.url
            chunks = fmt.gemini_chunks(turn, rid=rid, model=model, sse_format=sse_format)
            return sse_response(chunks) if sse_format else json_response_bytes(b"".join(chunks))
        return json_response(200, fmt.gemini_response(turn, rid=rid, model=model))

    def _traces(self, request: httpx.Request) -> httpx.Response:
        """The Agents SDK exports traces to the OpenAI API: accepted and dropped."""
        return httpx.Response(204, stream=Body(b""))

    def _count_tokens(self, request: httpx.Request) -> httpx.Response:
        try:
            body = json.loads(request.content or b"{}")
        except (ValueError, RecursionError):
            return self._error("anthropic.messages", 400, _ANTHROPIC_UNREADABLE)
        try:
            messages = fmt.anthropic_messages(obj(body, "body"))
        except Malformed as exc:
            return self._error("anthropic.messages", 400, str(exc))
        return json_response(200, {"input_tokens": estimate_tokens(messages)})

    def _complete(self, rec: Request, messages: list[dict[str, Any]], body: Mapping[str, Any], unchanged: int = 0,
                  source: object | None = None) -> ModelTurn:
        declared = list(array(body.get("tools"), "tools"))
        specs = fmt.tool_specs(declared)
        # a client that renamed the fake tools (MCP prefixes, namespaces) reads and writes its own names
        renamed = _names.aliases(declared, self.toolbox.names) if self.toolbox is not None else {}
        side = classify(rec.api, body, messages, specs, declared=_names.declared_names(declared),
                        run_tools=self._run_tools(renamed), asked=self.asked, main_system=self.main_system)
        if side is not None:
            return self._side(rec, messages, side)
        if specs:
            self.main_system = system_of(messages)
        if renamed:  # new messages every time: nothing is vouched for
            messages, specs = _names.to_fake(messages, specs, renamed)
            unchanged, source = 0, None
        turn = self.complete(messages, specs, unchanged=unchanged, source=source)
        rec.step = turn.step
        self.asked.update(c.id for c in turn.tool_calls)
        return _names.to_client(turn, renamed) if renamed else turn

    def _run_tools(self, renamed: Mapping[str, tuple[str, str | None]]) -> set[str]:
        """The run's tools as the client names them: the fake tools' names and the client's aliases of them."""
        names = set(self.toolbox.names) if self.toolbox is not None else set()
        return names | {client for client, _ in renamed.values()}

    def _side(self, rec: Request, messages: list[dict[str, Any]], side: Side) -> ModelTurn:
        """A side request: answered here, as a model would, without the policy; a ``side`` event, no model turn."""
        run = self._run
        if run.closed:
            raise RunClosed("the model was called after the run had ended")
        turn = side.answer(messages, run.step, rec.n, self.side_answer)
        rec.side = side.why
        answer = turn.text if turn.text is not None else dumps(turn.tool_calls[0].arguments)
        run.side_request(rec.api, rec.n, side.why, answer, turn.usage.input_tokens, turn.usage.output_tokens)
        return turn

    def complete(self, messages: list[dict[str, Any]], tools: Any = None, *, unchanged: int = 0,
                 source: object | None = None) -> ModelTurn:
        """One model turn from neutral messages; the trace's model event records what the model was shown.

        ``unchanged``/``source``: the wire's own conversations vouch for their unchanged history
        (``Conversations.handed``), so the token meter does not compare it every turn.

        ``shown``: for each result of the previous turn's calls, the content as the agent
        sent it (clipped), since runtimes may hide a tool's error behind a fixed text.
        """
        turn: ModelTurn = self.model.complete(messages, tools, unchanged=unchanged, source=source)
        shown: list[Shown] = [{"call_id": fb.call_id, "tool": fb.tool, "read_as": "duplicate" if fb.duplicate else fb.kind,
                               "content": _clip(fb.content if fb.sent is None else fb.sent)}
                              for fb in self.model.feedback]  # as the policy read them: the run's record by call id
        if shown:
            self._run.show(shown)
        return turn

    # --- faults ------------------------------------------------------------------------

    def _error(self, api: str, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = (),
               param: str | None = None) -> httpx.Response:
        """An error in ``api``'s own format (``param``: the request field it is about, which OpenAI's names)."""
        if api.startswith("anthropic"):
            return json_response(status, anthropic_error(_ANTHROPIC_TYPES.get(status, "api_error"), message), headers)
        if api == "gemini":
            return json_response(status, gemini_error(status, message), headers)
        return json_response(status, openai_error(status, message, _OPENAI_TYPES.get(status, "server_error"),
                                                  _OPENAI_TYPES.get(status), param), headers)

    def _fault(self, api: str, rec: Request, fault: ApiFault, request: httpx.Request) -> httpx.Response:
        rec.fault = fault.kind
        status = fault.status
        rec.status = status if status is not None else (200 if fault.kind in ("malformed", "stream_cut") else 0)
        self._run.api_fault(api, rec.n, fault.kind, status, fault.retry_after, rec.url)
        if status is not None:
            headers = []
            if fault.retry_after is not None and fault.retry_form == SECONDS:
                headers.append((b"retry-after", f"{fault.retry_after:g}".encode()))
            elif fault.retry_after is not None:  # an HTTP-date, retry-after-ms, a rate-limit reset header
                headers += [(k.encode(), v.encode()) for k, v in retry_headers(fault.retry_form, fault.retry_after,
                                                                               self.clock.t)]
            return self._error(api, status, _FAULT_TEXT.get(fault.kind, fault.kind), headers)
        if fault.kind == "timeout":
            limit = read_timeout(request)
            waits = [w for w in (fault.after, limit) if w is not None]
            self.clock.advance(min(waits) if waits else 600.0)
            raise httpx.ReadTimeout("The read operation timed out", request=request)
        if fault.kind == "malformed":
            if rec.stream:
                return sse_response([b'data: {"id": "broken", "choices": [{"delta": \n\n'])
            return httpx.Response(200, headers=JSON, stream=Body(b'{"id": "broken", "object": '))
        # stream_cut: the start of an answer, then the connection drops
        cut = httpx.RemoteProtocolError("peer closed connection without sending complete message body "
                                        "(incomplete chunked read)", request=request)
        placeholder = ModelTurn(0, "Let me check that for you.", (), Usage(1, 1))
        body = rec.body
        model = str(body.get("model", "policy"))
        if not rec.stream:
            whole = dumps({"id": "cut", "object": "partial"}).encode()
            return httpx.Response(200, headers=JSON, stream=Chunks([whole[: len(whole) // 2]], cut))
        if api == "openai.chat":
            events = fmt.chat_chunks(placeholder, rid=f"chatcmpl-{self.run_slug}-{rec.n}", model=model,
                                     created=EPOCH_TS, include_usage=False)
        elif api == "openai.responses":
            events = fmt.response_events(placeholder, rid=f"resp_{self.run_slug}_{rec.n:04d}", model=model,
                                         created=EPOCH_TS, body=body)
        elif api == "gemini":
            events = fmt.gemini_chunks(placeholder, rid=f"{self.run_slug}-{rec.n:04d}", model=model, sse_format=True)
        else:
            events = fmt.anthropic_events(placeholder, mid=f"msg_{self.run_slug}_{rec.n:04d}", model=model)
        return sse_response(events[: min(fault.events, len(events) - 1)], cut)


_active: Wire | None = None
_active_lock = threading.Lock()


def active() -> Wire | None:
    return _active


def refusal(request: httpx.Request) -> str | None:
    """A request nothing answers from a thread that is not the run's: refused there, never the run's failure.

    Such a thread (an SDK's trace exporter, telemetry, a thread left from an earlier test) sends on
    its own real-time schedule: whether its request falls inside a run is chance, so failing the
    run for it would fail runs at random. It gets a connection error, as offline, and is listed in
    ``wire.refused``; it never reaches the network.
    """
    wire = _active
    if wire is None or _clock.in_run_thread():
        return None
    wire.refused.append(f"{request.method} {request.url}")
    return (f"toolchaos: {request.method} {request.url} refused: sent by a thread that is not the run's "
            f"while a chaos run serves the wire; it does not reach the network")


def unmatched_hint(request: httpx.Request) -> str:
    """What the active wire serves, for the message of a request nothing answered."""
    wire = _active
    if wire is None:
        return ""
    wire.unmatched.append(f"{request.method} {request.url}")
    served = wire.served()
    return (f" (the run serves the model APIs {', '.join(wire.apis) or 'none'}"
            f"{'' if not served else ': ' + '; '.join(served)}; declare the API, its base URL or an http_tool)")


set_unmatched_hint(unmatched_hint)
set_refusal(refusal)


