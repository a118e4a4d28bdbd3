"""``Server``: one run of a scenario served over HTTP to agents in any process.

The run is an ordinary ``toolchaos.run`` in a thread of this process: its agent is a
stand-in that waits until the run is ended, while a uvicorn server (another thread, its
own real-time event loop) answers the model APIs through the run's wire and the tools
through the chaos MCP server. So the engine, the trace, the ledger, the ceiling, the
watchdog and the invariants are the in-process ones, and answers are the wire's bytes.

The server runs one ``RunSpec``; it judges nothing (the command that loaded a scenario judges
its result). The run ends when:

- the agent says so: ``POST /toolchaos/end`` (optional JSON ``{"state", "answer", "report"}``)
  or ``Server.end(...)`` (what a process-agent runner calls when its child exits);
  without a state it ends COMPLETED if the model's last answer was final, else FAILED;
- the harness ceiling is reached (HARD_CEILING), or the watchdog fires (WATCHDOG): no progress
  for its limit (a retry of the same request or a side request is none), or its total real time.

After the end every model request is answered at once with HTTP 400 in the API's own error
format, saying the run has ended and why (no SDK retries a 400), and every tool call with
an MCP tool error: nothing a client does after the end can hang it or reach the run.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse
from starlette.routing import Route
from toolchaos._engine import ModelClient, RunResult, RunSpec, Toolbox, session_real_seconds
from toolchaos._engine import run as engine_run
from toolchaos._engine.state import RunState
from toolchaos._internal.limits import SERVE_REAL_SECONDS, Ceiling
from toolchaos._internal.types import AgentResult
from toolchaos._plumbing import clock as _clock
from toolchaos._plumbing import watchdog as _watchdog
from toolchaos._plumbing.opportunity import ProcessClock
from toolchaos.errors import HarnessStop, RunClosed, UserError
from toolchaos.fake_tools import World
from toolchaos.serve._asgi import MAX_BODY, REFUSED, App, TooLarge, WireApp, check_max_body, read_body
from toolchaos.serve._control import end_request
from toolchaos.serve._gate import Gate, mint
from toolchaos.serve._mcp import MCP_PATH, mcp_server, streamable_app
from toolchaos.serve._pace import Pacer
from toolchaos.wire import ALL_APIS, ApiFaults, Wire, WireRunResult

READY_SECONDS = 30.0  # real seconds to wait for the server and the run to start
ENDED_STATUS = 400  # a request after the end: an error no SDK retries


LOOPBACK = ("127.0.0.1", "localhost", "::1")


class Server:
    """A run served over HTTP: ``with Server(spec) as srv: ... srv.base_urls ...``; then ``srv.result``
    (a ``WireRunResult``).

    ``spec``: the run, a ``toolchaos.RunSpec`` (a scenario's: ``toolchaos.certification.scenario_spec``),
    or its keywords as ``RunSpec.of`` takes them (``task``, ``tools``, ``policy``, ...). The server
    only runs: whoever loaded a scenario judges its result (``toolchaos.certification.judge``), as
    ``toolchaos serve`` does. The watchdog's no-progress limit: the spec's (``real_seconds`` or its
    ceiling's), else the session's, else 300 s; its total limit: the spec's ``total_seconds`` (or its
    ceiling's, or the session's), else 3 times the no-progress limit. ``port=0``: a free port.
    ``max_body``: the largest request body read, in bytes (default 8 MiB); a larger one is answered
    413 in its API's error format.
    """

    allow_remote = False  # bind an address other than loopback (with the token, only the run's URLs are answered)

    def __init__(self, spec: RunSpec | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 max_body: int = MAX_BODY, **settings: Any) -> None:
        if spec is None:
            spec = RunSpec.of(**settings)
        elif settings:
            raise TypeError(f"Server() takes a RunSpec or its keywords, not both (got {', '.join(settings)})")
        # The run is driven over HTTP by this process's server threads (the agent is a client of its
        # own): it stays here. A world given as a mapping is made one here: the server reads it.
        world = spec.world if isinstance(spec.world, World) else World(spec.world)
        # The model-API faults are this server's to serve (its wire); the engine's stand-in agent sees none.
        self.api_faults = ApiFaults(spec.api_faults)
        self.spec = spec.with_(ceiling=_with_watchdog(spec.ceiling, spec.real_seconds), world=world,
                               api_faults=None).staying(SERVED)
        self.host, self.port = host, port
        self.max_body = _max_body(max_body)
        self.result: WireRunResult | None = None
        self.error: BaseException | None = None
        self._wire: Wire | None = None
        self._toolbox: Toolbox | None = None
        self._state: RunState | None = None
        self._pacer: Pacer | None = None
        self._ending: AgentResult | str | None = None
        self._end = threading.Event()
        self._ready = threading.Event()
        self._done = threading.Event()
        self._ended_why = ""
        self._run_thread: threading.Thread | None = None
        self._http_thread: threading.Thread | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._gate: Gate | None = None
        self.token = ""  # minted when the server starts (the run's capability)
        self._moves = 0  # the watchdog's progress count: requests that moved the run on (see _count)
        self._last: tuple[str, bytes] | None = None  # the last model request's path and body

    # --- addresses ---------------------------------------------------------------------

    @property
    def root(self) -> str:
        """The address the server bound, without the run's token: nothing is served here alone."""
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The run's own address: the bound one and the run's token (every URL handed out starts so)."""
        return f"{self.root}/{self.token}"

    @property
    def base_urls(self) -> dict[str, str]:
        """Each API's base URL as its SDK takes it (OpenAI's with ``/v1``)."""
        return {"openai": f"{self.url}/v1", "anthropic": self.url, "gemini": self.url}

    @property
    def mcp_url(self) -> str:
        return f"{self.url}{MCP_PATH}"

    @property
    def end_url(self) -> str:
        return f"{self.url}/toolchaos/end"

    def urls(self) -> dict[str, str]:
        """What ``--urls-file`` holds: the base URLs, the MCP endpoint, the end endpoint."""
        return {**self.base_urls, "mcp": self.mcp_url, "end": self.end_url}

    # --- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> Server:
        if not self.allow_remote and self.host not in LOOPBACK:
            raise UserError(f"toolchaos serve: binding {self.host!r} lets other machines reach the run: give "
                            f"allow_remote=True (toolchaos serve --allow-remote) to mean it; only the run's URLs, "
                            f"which carry its token, are answered", field="host")
        self.token = mint()  # the run's capability: in every URL handed out, required on every request
        # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on a socket whose proto says TCP (0 does not), and
        # without it each answer's body waits for the client's delayed ACK of its headers (40 ms a request)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        self._start_http(sock)
        self._run_thread = threading.Thread(target=self._run, name="toolchaos-serve-run", daemon=True)
        self._run_thread.start()
        if not _wait_for(lambda: self._ready.is_set() or self._done.is_set(), READY_SECONDS) or not self._ready.is_set():
            self.close()
            raise RuntimeError(f"toolchaos serve: the run did not start: {self.error!r}")
        return self

    def _start_http(self, sock: socket.socket) -> None:
        mcp = mcp_server(lambda: None if self._end.is_set() else self._toolbox, self._before, self._tool_done)
        mcp_app = streamable_app(mcp, self.host)
        control = Starlette(routes=[*mcp_app.routes, Route("/toolchaos/end", self._end_endpoint, methods=["POST"]),
                                    Route("/toolchaos/urls", self._urls_endpoint, methods=["GET"])],
                            lifespan=mcp_app.router.lifespan_context)
        self._gate = Gate(App(WireApp(self.handle, self._unknown, self.max_body), control), self.token, self._hosts())
        app = self._gate
        config = uvicorn.Config(app, log_level="warning", lifespan="on", http="h11", loop="none",
                                timeout_graceful_shutdown=1, access_log=False)
        self._uvicorn = server = uvicorn.Server(config)

        def serve() -> None:
            loop = _clock.RealTimeEventLoop()
            try:
                loop.run_until_complete(server.serve(sockets=[sock]))
                loop.run_until_complete(_cancel_leftovers())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()
                sock.close()

        self._http_thread = threading.Thread(target=serve, name="toolchaos-serve-http", daemon=True)
        self._http_thread.start()
        if not _wait_for(lambda: server.started or not self._http_thread.is_alive(), READY_SECONDS) or not server.started:
            raise RuntimeError(f"toolchaos serve: the HTTP server did not start on {self.url}")

    def end(self, state: str | None = None, answer: str | None = None, report: Mapping[str, Any] | None = None,
            why: str = "the agent ended it") -> None:
        """End the run as the agent would by returning (``state`` None: as a plain return)."""
        if not self._end.is_set():
            # a plain answer (or none) is judged as the engine judges an agent's return value
            self._ending = AgentResult(str(state), answer, dict(report) if report else None) if state else answer
            self._ended_why = why
            self._end.set()

    def wait(self, timeout: float | None = None) -> WireRunResult | None:
        """Wait (real seconds) for the run to end; its result, or None if it has not."""
        self._done.wait(timeout)
        return self.result

    def close(self) -> None:
        """End the run (if it is still going), wait for it, stop the HTTP server and free the port."""
        self.end(why="the server was closed")
        if self._run_thread is not None:
            self._run_thread.join(self.spec.total_limit()[0] + 5)
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._http_thread is not None:
            self._http_thread.join(5)
            if self._http_thread.is_alive() and self._uvicorn is not None:
                self._uvicorn.force_exit = True
                self._http_thread.join(5)

    # --- the run -----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            res = engine_run(self._agent, self.spec)
            self.result = self._with_requests(res)
        except BaseException as exc:  # kept for start() and the command to report
            self.error = exc
        finally:
            self._end.set()
            self._done.set()

    def _agent(self, task: str, model: ModelClient, toolbox: Toolbox) -> Any:
        """The stand-in agent: the run is driven over HTTP until it is ended."""
        state: RunState = model._run
        # The gate strips the run's token before a request reaches the wire: it routes the APIs' own paths.
        bases = {"openai": f"{self.root}/v1", "anthropic": self.root, "gemini": self.root}
        self._wire = Wire(model, toolbox, apis=ALL_APIS, base_urls=bases, api_faults=self.api_faults,
                          defaults=False)
        self._pacer = Pacer(state.clock, state.events)
        self._state, self._toolbox = state, toolbox
        _watchdog.observe(progress=self._progress)  # this run's watch: requests that move it on, not its events
        self._ready.set()
        while not self._end.wait(0.02):  # real time: threading is outside virtual time
            if state.stopped is not None:
                self._ended_why = str(state.stopped)
                self._end.set()
                raise state.stopped
        return self._ending

    def _with_requests(self, res: RunResult) -> WireRunResult:
        wire = self._wire
        base = {f.name: getattr(res, f.name) for f in fields(RunResult)}
        # the gate's own list: attempts made after the run's end (until the server closes) join it
        return WireRunResult(**base, requests=list(wire.requests) if wire else [],
                             unmatched=list(wire.unmatched) if wire else [],
                             foreign=self._gate.attempts if self._gate is not None else [])

    def _hosts(self) -> list[str] | None:
        """The Host headers a request to this server may carry: the bound address, and localhost's names for it
        (None for an address other machines reach: their names for it are not known here)."""
        if self.host not in LOOPBACK:
            return None
        names = {self.host}
        if self.host in ("127.0.0.1", "localhost", "::1"):
            names |= {"127.0.0.1", "localhost", "[::1]"}
        return [f"{n}:{self.port}" for n in names]

    # --- requests ----------------------------------------------------------------------

    def _before(self) -> None:
        if self._pacer is not None:
            self._pacer.before()

    def _after(self) -> None:
        if self._pacer is not None:
            self._pacer.after()

    def _tool_done(self) -> None:
        self._moves += 1  # an execution or a refusal: progress, repeated or not (the ceiling ends loops)
        self._after()

    def _progress(self) -> int:
        return self._moves

    def _count(self, request: httpx.Request, sides: int) -> None:
        """Progress of the run, for the watchdog's no-progress limit: a model request that moves it on.

        Neither a retry of the previous request (the same body to the same path: a client's
        backoff after an error, or after an answer it would not take) nor a side request (a
        title, a loop check: the wire recorded a ``side`` event for it) is progress, so a client
        that retries forever is ended by the limit, not kept alive by its own retries. Nor is a
        request that asks no model turn (a token count, a trace export, a path nothing serves).
        """
        wire = self._wire
        api = wire.api_of(request) if wire is not None else None
        if api is None or api.endswith(_NOT_TURNS):
            return
        key = (request.url.path, request.content)
        repeated, self._last = key == self._last, key
        state = self._state
        if not repeated and (state is None or state.sides == sides):
            self._moves += 1

    def agent_process(self, pid: int) -> None:
        """The agent's process: time it (or a process it started) was stopped or waited for a CPU is not
        counted against the run's no-progress limit (its total limit counts real time)."""
        thread = self._run_thread
        if thread is not None and thread.ident is not None:
            _watchdog.observe(thread.ident, lost=ProcessClock(pid))

    def handle(self, request: httpx.Request) -> httpx.Response | None:
        """One model-API request: the wire's own answer (``Wire.dispatch``), or the end's error."""
        wire = self._wire
        if wire is None:
            return httpx.Response(503, json={"error": {"message": "toolchaos serve: the run is starting"}})
        refused = request.extensions.get(REFUSED)
        if refused is not None:  # its body was not read (past the cap): recorded, never dispatched
            status, message = refused
            return wire.refuse(request, status, message, "too_large")
        if self._end.is_set():
            return self._ended(wire, request)
        self._before()
        sides = self._state.sides if self._state is not None else 0
        try:
            return wire.dispatch(request)
        except (HarnessStop, RunClosed) as exc:
            self._ended_why = self._ended_why or str(exc)
            return self._ended(wire, request)
        finally:
            self._after()
            self._count(request, sides)

    def _ended(self, wire: Wire, request: httpx.Request) -> httpx.Response:
        why = self._ended_why or "the run has ended"
        return wire.error_response(request, ENDED_STATUS, f"toolchaos: the run has ended ({why}); this server "
                                                          f"answers no more model requests")

    def _unknown(self, request: httpx.Request) -> httpx.Response:
        served = ", ".join(f"{api}: {base}" for api, base in self.base_urls.items())
        return httpx.Response(404, json={"error": {
            "message": f"toolchaos serve: nothing is served at {request.method} {request.url.path}; the model APIs "
                       f"are at {served} (MCP: {self.mcp_url})", "type": "not_found", "code": "not_found"}})

    async def _end_endpoint(self, request: HttpRequest) -> JSONResponse:
        """The agent's end (``_control``): a body the server cannot read is refused and the run goes on."""
        try:
            raw = await read_body(request.scope, request.receive, self.max_body)
        except TooLarge as exc:
            return JSONResponse({"error": str(exc)}, status_code=413)
        ending = end_request(raw) if raw is not None else "the client left before its body was read"
        if isinstance(ending, str):
            return JSONResponse({"error": f"toolchaos serve: the run was not ended: {ending}"}, status_code=400)
        self.end(ending.get("state"), ending.get("answer"), ending.get("report"))
        return JSONResponse({"ended": True})

    async def _urls_endpoint(self, request: HttpRequest) -> JSONResponse:
        return JSONResponse(self.urls())


_NOT_TURNS = ("count_tokens", "traces")  # endpoints of the wire that ask the model nothing (Wire.api_of's names)

SERVED = ("toolchaos serve: the run is driven over HTTP by this process's server threads (the agent is a client of "
          "its own), which need the run here, not a child's copy")


def _with_watchdog(ceiling: Ceiling | None, real_seconds: float | None) -> Ceiling:
    ceiling = ceiling or Ceiling()
    if ceiling.real_seconds is not None:
        return ceiling
    limit = real_seconds if real_seconds is not None else (session_real_seconds() or SERVE_REAL_SECONDS)
    return replace(ceiling, real_seconds=limit)


def _max_body(raw: int) -> int:
    try:
        return check_max_body(raw, "max_body")
    except ValueError as exc:
        raise UserError(str(exc), field="max_body") from None


def _wait_for(ready: Any, seconds: float) -> bool:
    deadline = _clock.real_monotonic() + seconds
    while not ready():
        if _clock.real_monotonic() > deadline:
            return False
        _clock.real_sleep(0.01)
    return True



async def _cancel_leftovers() -> None:
    """Cancel and await what the served apps left running once uvicorn stopped (the MCP SDK's SSE
    responses leave a shutdown watcher behind): a task still pending when the loop closes is
    destroyed with a warning on the user's terminal."""
    me = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not me]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)
