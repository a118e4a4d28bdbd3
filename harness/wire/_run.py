"""Run an unmodified SDK agent under chaos: ``toolchaos.wire.run(agent, ...)``.

The agent is any callable ``agent(task)`` or ``agent(task, env)`` (sync or async) that
talks to a model through the ``openai`` or ``anthropic`` SDK, or through a framework
built on them. For the length of the run:

- the model APIs it calls are answered by the policy over HTTP (``Wire``: respx on both
  HTTP stacks), at the SDKs' default base URLs, at the ones in the usual environment
  variables and at any ``base_urls`` given; a missing ``OPENAI_API_KEY`` /
  ``ANTHROPIC_API_KEY`` is set to a dummy value so a client built with no arguments works;
- its tools are the fake tools: passed in (``env.tools``), patched by import path
  (``patch={"module:attr": "tool"}``) or behind HTTP routes (``http_tools=[...]``);
- model-API faults (``api_faults``) and tool faults run on the virtual clock.

It is one ``toolchaos.run``: the agent is wrapped into the in-process contract, so the
ceiling, the watchdog, the trace, the effect ledger and the invariants are the engine's
own. The trace's ``model`` events come from the requests the agent really sent; an
``api`` event records each faulted model request.
"""

from __future__ import annotations

import functools
import inspect
import os
import random
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar, cast

from toolchaos._agents import ENV_MARK, SDK, env_parameter, invoke, resolve_agent
from toolchaos._agents import label as agent_label
from toolchaos._engine import ModelClient, RunResult, RunSpec, Toolbox
from toolchaos._engine import run as engine_run
from toolchaos._internal.limits import SDK_REAL_SECONDS, Budgets, Ceiling
from toolchaos._internal.types import AgentResult
from toolchaos._plumbing import clock as _clock
from toolchaos.errors import AgentRefError, HarnessStop, UnmatchedRequest
from toolchaos.fake_tools import FakeTool, World
from toolchaos.wire._apifaults import ApiFaults
from toolchaos.wire._httptools import HttpTool
from toolchaos.wire._server import ALL_APIS, ANTHROPIC_DEFAULT, APIS, OPENAI_DEFAULT, Request, Wire
from toolchaos.wire._tools import Patches, WireTool, check_targets

FAKE_API_KEY = "sk-toolchaos-not-a-real-key"
# Why a wire run stays in process under --chaos-isolation=process (RunResult.isolation_reason, the report's entry).
WIRE_RUN = ("a toolchaos.wire run: the agent's model requests are answered over HTTP in this process, which keeps "
            "the record of them")
WIRE_SESSION = ("a chaos.wire block (toolchaos.wire.session): the agent is the caller's own code, running in the "
                "caller's thread, and the wire's record of its HTTP requests is kept in this process")
_F = TypeVar("_F")
# The watchdog's no-progress default for SDK agents: an SDK's first request in a process
# builds its response models (seconds on a loaded CI machine); loops end at the turn ceiling.
_KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}


@dataclass
class WireRunResult(RunResult):
    """A ``RunResult`` plus what crossed the wire: every model request, and any unmatched one."""

    requests: list[Request] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    # requests nothing answered from threads that are not the run's (exporters, telemetry): refused
    # in that thread as offline, never the run's failure, never the network (real-time chance: not traced)
    refused: list[str] = field(default_factory=list)
    # requests a served run refused at its gate (no run token, a foreign Host or Origin): who else
    # could reach its port tried it (toolchaos.serve; at most the first 100 are kept)
    foreign: list[dict[str, Any]] = field(default_factory=list)

    @property
    def model_requests(self) -> int:
        """Model requests the agent sent (answered by the policy, faulted, or refused as bad)."""
        return len(self.requests)

    @property
    def faulted_requests(self) -> list[Request]:
        return [r for r in self.requests if r.fault is not None]


class Env:
    """What an ``agent(task, env)`` gets: where the model is, and the tools.

    ``env.openai_base_url`` / ``env.anthropic_base_url`` (the SDK defaults, also served
    without being passed), ``env.api_key``; ``env.tools`` (callables), ``env.tool(name)``,
    ``env.call(name, arguments)``; declarations ``env.openai_tools``, ``env.responses_tools``,
    ``env.anthropic_tools``; ``env.openai()`` / ``env.async_openai()`` / ``env.anthropic()`` /
    ``env.async_anthropic()`` build SDK clients; ``env.router`` is the run's respx router
    (add your own routes to it); ``env.toolbox`` the engine's toolbox (for ``refuse``);
    ``env.model.complete(messages, tools)`` asks the policy directly, in the neutral format.
    """

    def __init__(self, task: str, wire: Wire, toolbox: Toolbox) -> None:
        self.task = task
        self.wire = wire
        self.toolbox = toolbox
        self.budgets = toolbox.budgets
        self.router = wire.router
        self.api_key = FAKE_API_KEY
        self.openai_base_url = (wire.base_urls.get("openai") or [OPENAI_DEFAULT])[0]
        self.anthropic_base_url = (wire.base_urls.get("anthropic") or [ANTHROPIC_DEFAULT])[0]
        self.model = wire  # .complete(messages, tools): the policy in-process (e.g. a framework's function model)
        self.result: WireRunResult | None = None  # set after a ``session`` block: the run's result
        self.answer: Any = None  # what a ``session`` block hands back to the run as the agent's return value
        self.tools = [WireTool(toolbox.spec(name), toolbox) for name in toolbox.names]
        self._by_name = {t.name: t for t in self.tools}
        self._clients: list[Any] = []  # the sync SDK clients handed out, closed when the run ends

    def _handed(self, client: Any) -> Any:
        self._clients.append(client)
        return client

    def close_clients(self) -> None:
        """Close the sync SDK clients the agent was handed: one left open until the interpreter exits is
        closed by its ``__del__`` after httpx is gone, which prints an error. (An async client belongs to the
        agent's event loop, over by now: closing it is the agent's.)"""
        for client in self._clients:
            try:
                client.close()
            except Exception:  # a client the agent closed or broke: nothing left to free
                pass
        self._clients.clear()

    def tool(self, name: str) -> WireTool:
        if name not in self._by_name:
            self.toolbox.spec(name)  # raises UnknownTool naming the known tools
        return self._by_name[name]

    def call(self, name: str, arguments: Mapping[str, Any] | None = None, *, call_id: str | None = None) -> Any:
        return self.toolbox.call(name, dict(arguments or {}), call_id=call_id)

    @property
    def openai_tools(self) -> list[dict[str, Any]]:
        return [t.openai for t in self.tools]

    @property
    def responses_tools(self) -> list[dict[str, Any]]:
        return [t.responses for t in self.tools]

    @property
    def anthropic_tools(self) -> list[dict[str, Any]]:
        return [t.anthropic for t in self.tools]

    def openai(self, **kwargs: Any) -> Any:
        import openai

        return self._handed(openai.OpenAI(**{"api_key": self.api_key, "base_url": self.openai_base_url, **kwargs}))

    def async_openai(self, **kwargs: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(**{"api_key": self.api_key, "base_url": self.openai_base_url, **kwargs})

    def anthropic(self, **kwargs: Any) -> Any:
        import anthropic

        return self._handed(anthropic.Anthropic(**{"api_key": self.api_key, "base_url": self.anthropic_base_url,
                                                  **kwargs}))

    def async_anthropic(self, **kwargs: Any) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(**{"api_key": self.api_key, "base_url": self.anthropic_base_url, **kwargs})

    @property
    def requests(self) -> list[Request]:
        return self.wire.requests


def takes_env(agent: _F) -> _F:
    """Mark an SDK agent as ``agent(task, env)``: the wire's ``Env`` comes as its second argument.

    The other explicit form is a parameter annotated ``toolchaos.wire.Env`` (``def agent(task, *, env: Env)``),
    which gets the ``Env`` by name; an agent with two required positional parameters gets it second.
    A parameter merely named ``env`` is not enough (it may be the agent's own setting).
    """
    setattr(agent, ENV_MARK, True)
    return agent


def env_argument(agent: Any) -> str | None:
    """How to hand ``Env`` over: ``""`` positionally (second), a parameter name by keyword, or None (not at all)."""
    explicit = env_parameter(agent)
    if explicit is not None:
        return explicit
    try:
        params = list(inspect.signature(agent).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    return "" if len(positional) >= 2 else None


def wants_env(agent: Any) -> bool:
    """Whether the agent is called with an ``Env`` (see ``env_argument``)."""
    return env_argument(agent) is not None


def _flush_sdk_exporters() -> None:
    """Export what the SDKs' background exporters hold (the Agents SDK's traces) before the wire stops.

    Their threads export on their own schedule, with retries; flushed here, in the run, their
    requests are answered as documented (the trace ingest: 204) or, if nothing answers them, fail
    the run, the same way every time, and no batch is left to go to the real network afterwards.
    """
    tracing = sys.modules.get("agents.tracing")
    provider = getattr(tracing, "get_trace_provider", None)
    if provider is None:
        return
    try:
        provider().force_flush()
    except Exception:  # pragma: no cover - the SDK's own export failed: its loss, never the run's verdict
        return


def _exporters_on_real_time() -> None:
    """Keep the Agents SDK's trace exporter scheduling its exports on the real clock (called outside runs).

    Its processor, made lazily at the first trace, stores its next export as ``time.monotonic() + 5``
    and its thread compares that with the monotonic clock it reads, which is real (it is not the
    run's thread). Made inside a run, that deadline is on the virtual clock (a 2026 date, some 1.8e9 s
    ahead of a real monotonic clock): the thread would never export on schedule between runs, and
    what it held went out in the middle of a later run whose virtual clock passed it. So it is made
    here, before the run, and a deadline left on a virtual clock (the SDK imported inside the run)
    is made due after it.
    """
    tracing = sys.modules.get("agents.tracing")
    provider = getattr(tracing, "get_trace_provider", None)
    if provider is None:
        return
    try:
        provider()
    except Exception:  # pragma: no cover - the SDK's own set-up failed: its tracing, never the run
        return
    processor = getattr(sys.modules.get("agents.tracing.processors"), "_global_processor", None)
    due, delay = getattr(processor, "_next_export_time", None), getattr(processor, "_schedule_delay", None)
    now = _clock.real_monotonic()
    if isinstance(due, float) and isinstance(delay, (int, float)) and due > now + delay:
        processor._next_export_time = now  # type: ignore[union-attr]


def harness_stop_in(exc: BaseException) -> BaseException | None:
    """A harness stop inside an exception group (task groups wrap what their tasks raise)."""
    if isinstance(exc, (HarnessStop, KeyboardInterrupt)):
        return exc
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, tuple):
        for sub in inner:
            found = harness_stop_in(sub)
            if found is not None:
                return found
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, HarnessStop):
        return cause
    return None


def call_agent(agent: Any, task: str, env: Env, label: str = "agent") -> Any:
    how = env_argument(agent)
    if how is None:
        out = invoke(agent, label, task)  # a wrong signature: an agent the harness could not call
    elif how == "":
        out = invoke(agent, label, task, env)
    else:
        out = invoke(functools.partial(agent, **{how: env}), label, task)
    if inspect.isawaitable(out):  # called inside toolchaos.run: the run's clock drives the loop's time
        out = _clock.run_awaitable(out, cast(_clock.VirtualClock, _clock.active()))
    return out


def run(agent: Any, spec: RunSpec | None = None, *, task: str | None = None, tools: Iterable[FakeTool] | None = None,
        policy: Any = None, apis: Iterable[str] = APIS, base_urls: Mapping[str, str | Iterable[str]] | None = None,
        patch: Mapping[str, Any] | None = None, http_tools: Iterable[HttpTool] = (), api_faults: Any = None,
        seed: int = 0, budgets: Budgets | Mapping[str, Any] | None = None, ceiling: Ceiling | None = None,
        store: dict[str, Any] | None = None, name: str = "run", artifacts: str | Path | None = None,
        set_api_keys: bool = True, world: World | Mapping[str, Any] | None = None,
        real_seconds: float | None = None) -> WireRunResult:
    """Run an SDK agent once: the policy answers its model requests over HTTP (see the module docstring).

    ``agent``: ``agent(task)`` or ``agent(task, env)``, sync or async, returning the answer
    (a string), an ``AgentResult`` or a mapping with ``state``/``answer``/``report``.
    The run's settings: a ``toolchaos.RunSpec``, or its keywords (as for ``toolchaos.run``).
    ``apis``: the model APIs the run serves (``"openai"``, ``"anthropic"``); a request to
    anything else fails the run naming the URL. ``world``: the state behind the tools, as for
    ``toolchaos.run``. The run stays in this process, whatever the isolation asked for: the
    wire, its record of the requests and the agent's objects are this process's.
    """
    if spec is None:
        if task is None or tools is None:
            raise TypeError("wire.run() takes a RunSpec, or the keywords task=, tools= and policy=")
        spec = RunSpec.of(task=task, tools=tools, policy=policy, seed=seed, budgets=budgets, ceiling=ceiling,
                          store=store, world=world, api_faults=api_faults, real_seconds=real_seconds,
                          artifacts=artifacts, name=name)
    elif task is not None or tools is not None or policy is not None:
        raise TypeError("wire.run() takes a RunSpec or its keywords, not both")
    if spec.ledger is not None:
        raise AgentRefError(f"agent {agent_label(agent)}: an effect ledger to continue is for in-process agents; "
                            f"an SDK or framework agent's run starts its own", field="ledger")
    agent_fn = resolve_agent(agent, SDK)
    label = agent_label(agent)
    tools = list(spec.tools)
    patch = dict(patch or {})
    for target_tool in patch.values():  # a FakeTool given as a patch target joins the run's tools
        if isinstance(target_tool, FakeTool) and all(t.name != target_tool.name for t in tools):
            tools.append(target_tool)
    check_targets(patch)
    http_tools = list(http_tools)
    apis = tuple(apis)
    for api in apis:  # fail before the run, not as a crashed run
        if api not in ALL_APIS:
            raise ValueError(f"unknown model API {api!r}; known: {', '.join(ALL_APIS)}")
    faults = ApiFaults(spec.api_faults)
    seed = spec.seed
    holder: dict[str, Wire] = {}

    def under_test(task: str, model: ModelClient, toolbox: Toolbox) -> Any:
        wire = Wire(model, toolbox, apis=apis, base_urls=base_urls, api_faults=faults, http_tools=http_tools)
        holder["wire"] = wire
        env = Env(task, wire, toolbox)
        patches = Patches()
        saved_keys: dict[str, str | None] = {}
        if set_api_keys:
            for api in apis:
                var = _KEY_VARS[api]
                if not os.environ.get(var):
                    saved_keys[var] = os.environ.get(var)
                    os.environ[var] = FAKE_API_KEY
        wire.start()
        try:
            patches.apply(patch, toolbox)
            try:
                with _global_random(seed):
                    out = call_agent(agent_fn, task, env, label)
            except BaseException as exc:
                stop = harness_stop_in(exc)
                if stop is not None and stop is not exc:
                    raise stop from exc
                raise
            if wire.unmatched:  # the agent swallowed the failure: the run still fails, naming the URL
                raise UnmatchedRequest(*wire.unmatched[0].split(" ", 1))
            return out
        finally:
            _flush_sdk_exporters()  # while the wire still answers: nothing is left to leave later, for real
            env.close_clients()
            patches.undo()
            wire.stop()
            for var, value in saved_keys.items():
                if value is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = value

    # The SDKs build their pydantic models lazily, on first use, inside the run: a longer watchdog,
    # unless the run, its ceiling or the session set a limit (pytest --chaos-real-seconds).
    engine_spec = spec.with_(tools=tuple(tools), api_faults=None, ledger=None,
                             real_seconds=spec.real_seconds or SDK_REAL_SECONDS).staying(WIRE_RUN)
    _exporters_on_real_time()
    try:
        res = engine_run(under_test, engine_spec)
    finally:
        _exporters_on_real_time()
    wire = holder.get("wire")
    base = {f.name: getattr(res, f.name) for f in fields(RunResult)}
    return WireRunResult(**base, requests=list(wire.requests) if wire else [],
                         unmatched=list(wire.unmatched) if wire else [], refused=list(wire.refused) if wire else [])


_SPEC_KEYS = frozenset({"seed", "budgets", "ceiling", "store", "world", "api_faults", "real_seconds", "artifacts",
                        "name", "isolation"})


def _split(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A session's keywords: the run's settings (``RunSpec``) and the wire's own (apis, patch, ...)."""
    return ({k: v for k, v in options.items() if k in _SPEC_KEYS},
            {k: v for k, v in options.items() if k not in _SPEC_KEYS})


@contextmanager
def _global_random(seed: int) -> Iterator[None]:
    """The global ``random`` generator, seeded from the run's seed while the agent runs; the caller's state put back after.

    The SDKs draw their retry jitter from it (openai's and anthropic's backoff after a 5xx or a
    timeout that no retry-after header times; tenacity's waits in the frameworks): left as it is,
    that jitter puts a different virtual time into the trace in every process, so the same seed
    would not give the same trace. The caller's own stream of ``random`` goes on after the run as
    if the run had drawn nothing from it.
    """
    saved = random.getstate()
    random.seed(f"{seed}:global-random")
    try:
        yield
    finally:
        random.setstate(saved)


_POLL = 0.05  # real seconds: the run's thread waits for the block in slices, so the watchdog can reach it


@contextmanager
def session(*, tools: Iterable[FakeTool], policy: Any, task: str = "chaos.wire", **options: Any) -> Iterator[Env]:
    """``toolchaos.wire.run`` as a context manager, in the style of respx: the block is the agent.

    ::

        with toolchaos.wire.session(tools=[...], policy=..., api_faults=...) as env:
            answer = my_agent("Get the invoice total")  # its model requests are answered by the policy
        assert env.result.terminal_state == "COMPLETED"

    Inside the block the wire serves the model APIs, the tools and the virtual clock (time and sleeps
    of the block's thread are the run's); after it ``env.result`` is the ``WireRunResult`` (the trace,
    written to ``artifacts=`` when given). What the block returns to the run: ``env.answer = ...``
    (default: the policy's last final answer, as for any agent). An exception in the block fails the
    run like an agent's crash and is raised again after it. ``options`` are ``run``'s own (``seed``,
    ``api_faults``, ``patch``, ``http_tools``, ``artifacts``, ``name``, ...).
    """
    caller = threading.get_ident()
    ready, done = threading.Event(), threading.Event()
    box: dict[str, Any] = {}

    @takes_env
    def block(task: str, env: Env) -> Any:
        clock = _clock.active()
        if clock is not None:
            clock.owner = caller  # the block's thread runs the agent's code: its sleeps move the run's clock
        box["env"] = env
        ready.set()
        while not done.wait(_POLL):
            pass
        if "error" in box:
            raise box["error"]
        return getattr(env, "answer", None)

    def drive() -> None:
        try:
            # In a child the block would run in a copy of this process, and the test's own thread would
            # wait for it: the session's run stays here, and says why.
            settings, wire_options = _split(options)
            spec = RunSpec.of(task=task, tools=tools, policy=policy, **settings)
            box["result"] = run(block, spec.staying(WIRE_SESSION), **wire_options)
        except BaseException as exc:  # a usage error before the run: raised in the caller's thread
            box["crash"] = exc
        finally:
            ready.set()

    thread = threading.Thread(target=drive, name="toolchaos-wire-session", daemon=True)
    thread.start()
    ready.wait()
    if "crash" in box:
        thread.join()
        raise box["crash"]
    env: Env = box["env"]
    try:
        yield env
    except BaseException as exc:
        box["error"] = exc
        raise
    finally:
        done.set()
        thread.join()
        env.result = box.get("result")
        if "crash" in box and "error" not in box:
            raise box["crash"]


__all__ = ["FAKE_API_KEY", "AgentResult", "Env", "WireRunResult", "run", "session", "takes_env"]
