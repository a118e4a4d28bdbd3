"""The run engine: one agent, its fake tools and a policy, under the virtual clock.

``run()`` hands the agent three things: the task, a ``ModelClient`` answered by the
policy, and a ``Toolbox`` of fake tools. The agent is the system under test: it decides
what to execute, what to refuse and when to stop. The engine only watches: every model
turn and every tool call becomes a trace event, every side effect a ledger entry.

The harness always terminates: a ceiling on tool calls and model turns raises
``HardCeiling`` inside the agent, and a real-time watchdog stops an agent that spins
without calling anything. Both are ``BaseException``s so ``except Exception`` in an
agent cannot swallow them; the run then ends as a failure with its trace kept.

Concurrency: an agent may call its tools from several threads or asyncio tasks at once
(``tools.acall`` for async tools; parallel calls of one model turn under ``asyncio.gather``).
Every counter on the call path is an ``itertools.count`` (atomic in CPython), events are
put back in ``seq`` order when the run ends, and the ledger's counts are exact. A ceiling
hit in a worker thread ends the run even if the agent's own thread carried on. Calls from
threads that outlive the run are refused, recorded (``late``) and, if they keep coming,
stopped; a run whose threads were still calling when it returned fails (``threads``).
See docs/isolation.md.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import operator
import random
import threading
import traceback
import types
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, cast

from toolchaos._agents import resolve_agent
from toolchaos._internal import clock as _clock
from toolchaos._internal import isolation as _isolation
from toolchaos._internal import watchdog as _watchdog
from toolchaos._internal.events import (
    AskedCall,
    Event,
    Shown,
    api_event,
    end_event,
    late_event,
    model_event,
    refusal_event,
    skipped_event,
    tool_event,
)
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.model import (
    Decision,
    ModelTurn,
    ModelView,
    TokenMeter,
    ToolCall,
    Usage,
    estimate_tokens,
    read_feedback,
)
from toolchaos._internal.trace import Trace
from toolchaos._internal.types import AgentResult
from toolchaos.errors import (
    HardCeiling,
    HarnessStop,
    LeftoverStopped,
    NetworkBlocked,
    PolicyCrashed,
    RunClosed,
    UnknownTool,
    WatchdogExpired,
)
from toolchaos.fake_tools import EffectLedger, FakeTool, Outcome, OutcomeClass, ToolSet
from toolchaos.invariants._builtin import check_all, raise_for
from toolchaos.policies._builtin import Policy, as_policy

LATE_RECORDED = 20  # late calls recorded per run; the next ones stop their thread (LeftoverStopped)


class _Run:
    """Shared state of one run (the toolbox and the model client both write to it)."""

    def __init__(self, run_id: str, task: str, seed: int, toolset: ToolSet, policy: Policy,
                 ceiling: Ceiling, budgets: Budgets, store: MutableMapping[str, Any]) -> None:
        self.run_id = run_id
        self.task = task
        self.seed = seed
        self.toolset = toolset
        self.tools = toolset.tools
        self.clock = toolset.clock
        self.policy = policy
        self.ceiling = ceiling
        self.budgets = budgets
        self.store = store
        self.events: list[Event] = []
        self.seq = itertools.count(1)
        self.step = 0
        self.tool_calls = itertools.count(1)  # atomic under concurrent workers
        self.lock = threading.Lock()  # model turns and request matching, when workers run at once
        self.stopped: HarnessStop | None = None  # a ceiling hit in any thread ends the run
        self.late = itertools.count(1)
        self.pending: list[tuple[str, str, str]] = []  # (call_id, tool, fingerprint) asked for, not yet handled
        self.usage: list[Usage] = []
        self.prompt_meter = TokenMeter()  # the conversation grows each turn: count only what is new
        self.memory: dict[str, Any] = {}
        self.rng = random.Random(f"{seed}:policy")
        self.closed = False
        self.last_final: str | None = None

    def fp(self, name: str, args: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        return self.toolset.fingerprint(name, args)

    def take_request(self, name: str, fp: str, call_id: str | None) -> str | None:
        """Match an execution or refusal to the model's request it answers."""
        pending = self.pending
        if not pending:
            return call_id
        with self.lock:
            for i, (cid, _, tfp) in enumerate(pending):
                if cid == call_id or (call_id is None and tfp == fp):
                    del pending[i]
                    return cid
            if call_id is None:
                for i, (cid, tname, _) in enumerate(pending):
                    if tname == name:
                        del pending[i]
                        return cid
        return call_id

    def flush_pending(self) -> None:
        """Calls the model asked for that were neither executed nor refused."""
        for cid, name, fp in self.pending:
            self.events.append(skipped_event(self.run_id, next(self.seq), self.step, self.clock.t, name, fp, cid))
        self.pending = []

    def api_fault(self, api: str, request: int, code: str, status: int | None, retry_after: float | None,
                  url: str) -> None:
        """A model-API request the wire answered with a fault."""
        self.events.append(api_event(self.run_id, next(self.seq), self.step, self.clock.t, api, request, code,
                                     status, retry_after, url))

    def show(self, shown: list[Shown]) -> None:
        """What the agent showed the model of the previous turn's results, on the turn just made."""
        last = self.events[-1] if self.events else None
        if last is not None and last["kind"] == "model":
            last["shown"] = shown


class Toolbox:
    """The fake tools as the agent sees them.

    ``tools.call(name, args, call_id=...)`` executes one call (or ``tools[name](**args)``);
    ``tools.refuse(...)`` records a refusal the runtime decided before execution;
    ``tools.specs`` declares the tools to a model; ``tools.budgets`` are the limits the
    runtime should enforce; ``tools.store`` persists across a simulated restart.
    """

    def __init__(self, run: _Run) -> None:
        self._run = run
        self.budgets = run.budgets
        self.store = run.store
        self.seed = run.seed
        self.names = list(run.tools)

    @property
    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self._run.tools.values()]

    def spec(self, name: str) -> FakeTool:
        return self._run.tools[name]

    def now(self) -> float:
        """Virtual seconds since the run began."""
        return self._run.clock.t

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._run.tools:
            raise UnknownTool(name, self._run.tools)
        return lambda *a, **kw: self.call(name, *a, **kw)

    def call(self, name: str, args: Mapping[str, Any] | None = None, /, *, call_id: str | None = None,
             **kwargs: Any) -> Any:
        tool, outcome = self._execute(name, args, call_id, kwargs, True)
        return tool.deliver(outcome)

    async def acall(self, name: str, args: Mapping[str, Any] | None = None, /, *, call_id: str | None = None,
                    **kwargs: Any) -> Any:
        """``call`` for async agents: the tool's latency is awaited, so parallel calls overlap."""
        tool, outcome = self._execute(name, args, call_id, kwargs, False)
        if outcome.latency:
            await asyncio.sleep(outcome.latency)  # virtual: see toolchaos._internal.clock
        else:
            await _yield()  # a real tool call always yields to the other tasks
        return tool.deliver(outcome)

    async def aexecute(self, name: str, args: Mapping[str, Any] | None = None, /, *, call_id: str | None = None,
                       **kwargs: Any) -> tuple[FakeTool, Outcome]:
        """``execute`` for async agents.

        The call executes (and is recorded) at once, at the current virtual time; then the
        caller awaits the tool's latency, yielding to other tasks, so calls gathered in one
        model turn start together and the clock ends at the slowest one, not at the sum.
        """
        result = self._execute(name, args, call_id, kwargs, False)
        if result[1].latency:
            await asyncio.sleep(result[1].latency)  # virtual: see toolchaos._internal.clock
        else:
            await _yield()
        return result

    def execute(self, name: str, args: Mapping[str, Any] | None = None, /, *, call_id: str | None = None,
                **kwargs: Any) -> tuple[FakeTool, Outcome]:
        """Execute and record one call; return the tool and its outcome, undelivered.

        For runtimes that deliver outcomes themselves (an HTTP-backed tool answers with a
        status code, a header or a dropped connection instead of a Python value).
        """
        return self._execute(name, args, call_id, kwargs, True)

    def _execute(self, name: str, args: Mapping[str, Any] | None, call_id: str | None, kwargs: dict[str, Any],
                 advance: bool) -> tuple[FakeTool, Outcome]:
        run = self._run
        if run.closed:
            self._late(name, args or kwargs)
        if next(run.tool_calls) > run.ceiling.max_tool_calls:
            stop = HardCeiling(f"more than {run.ceiling.max_tool_calls} tool calls (the harness ceiling)")
            run.stopped = run.stopped or stop
            raise stop
        if kwargs:
            args = {**(args or {}), **kwargs}
        elif args is None:
            args = {}
        seq = next(run.seq)
        started = run.clock.t
        tool, outcome, norm, fp, count, call_no = run.toolset.run_call(name, args, seq, advance)
        if run.pending:  # an agent calling its tools unasked has no request to match
            call_id = run.take_request(name, fp, call_id)
        run.events.append(tool_event(run.run_id, seq, run.step, started, outcome.latency, name, call_no, norm, fp,
                                     call_id, outcome.kind, _CLASS[outcome.cls], outcome.code, outcome.retry_after,
                                     count if tool.side_effect else None))
        return tool, outcome

    def refuse(self, name: str, args: Mapping[str, Any] | None = None, *, guard: str, reason: str,
               call_id: str | None = None) -> dict[str, Any]:
        """Record that the runtime refused this call before executing it.

        Returns the content to hand back to the model in place of a result.
        """
        run = self._run
        norm, fp = run.fp(name, args or {})
        run.events.append(refusal_event(run.run_id, next(run.seq), run.step, run.clock.t, name, norm, fp,
                                        run.take_request(name, fp, call_id), guard, reason))
        return {"refused": True, "guard": guard, "reason": reason}

    def _late(self, name: str, args: Mapping[str, Any]) -> NoReturn:
        run = self._run
        n = next(run.late)
        if n > LATE_RECORDED:  # a leftover thread that ignores RunClosed: end it, record no more
            raise LeftoverStopped(f"{name} was called {n} times after the run {run.run_id} had ended; "
                                  f"the harness stopped the calling thread")
        norm, fp = run.fp(name, args)
        with run.lock:  # the engine may be sorting the events of the run that just ended
            run.events.append(late_event(run.run_id, next(run.seq), run.step, run.clock.t, name, norm, fp))
        raise RunClosed(f"{name} was called after the run had ended; the call was not executed")


class ModelClient:
    """The model as the in-process agent sees it, answered by the policy."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def complete(self, messages: Sequence[Mapping[str, Any]], tools: Iterable[Any] | None = None) -> ModelTurn:
        run = self._run
        if run.closed:
            raise RunClosed("the model was called after the run had ended")
        with run.lock:  # one turn at a time: policies are not thread-safe, steps must not interleave
            if run.step >= run.ceiling.max_model_turns:
                stop = HardCeiling(f"more than {run.ceiling.max_model_turns} model turns (the harness ceiling)")
                run.stopped = run.stopped or stop
                raise stop
            run.flush_pending()
            run.step += 1
            msgs = [dict(m) for m in messages]
            view = ModelView(run.task, run.step, msgs, read_feedback(msgs), list(run.tools), run.rng, run.memory)
            try:
                decision = run.policy.decide(view)
            except HarnessStop:
                raise
            except BaseException as exc:
                raise PolicyCrashed(exc) from exc
            return self._turn(run, msgs, decision)

    async def acomplete(self, messages: Sequence[Mapping[str, Any]], tools: Iterable[Any] | None = None) -> ModelTurn:
        return self.complete(messages, tools)

    def _turn(self, run: _Run, msgs: list[dict[str, Any]], decision: Decision) -> ModelTurn:
        calls = tuple(ToolCall(f"call_{run.step}_{i}", name, args) for i, (name, args) in enumerate(decision.calls))
        text = decision.text if not calls else None
        out_tokens = 4 + estimate_tokens([text] if not calls else [[c.name, c.arguments] for c in calls])
        usage = Usage(run.prompt_meter.estimate(msgs), out_tokens)
        run.usage.append(usage)
        asked: list[AskedCall] = []
        for c in calls:
            _, fp = run.fp(c.name, c.arguments)
            run.pending.append((c.id, c.name, fp))
            asked.append({"id": c.id, "tool": c.name, "args": c.arguments, "fp": fp})
        run.last_final = text
        run.events.append(model_event(run.run_id, next(run.seq), run.step, run.clock.t, asked, text,
                                      usage.input_tokens, usage.output_tokens))
        return ModelTurn(run.step, text, calls, usage)


@dataclass
class RunResult:
    """Everything a finished run left: state, answer, stop report, trace, ledger, usage."""

    run_id: str
    seed: int
    task: str
    terminal_state: str
    answer: str | None
    stop_report: dict[str, Any] | None
    trace: Trace
    ledger: EffectLedger
    usage: list[Usage]
    harness_stop: str | None = None  # crash | ceiling | watchdog, when the harness ended the run
    error: str | None = None
    virtual_seconds: float = 0.0
    tools: dict[str, FakeTool] = field(default_factory=dict)

    @property
    def failed_to_run(self) -> bool:
        return self.harness_stop is not None

    @property
    def executions(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.trace.tool_events:
            out[e["tool"]] = out.get(e["tool"], 0) + 1
        return out

    @property
    def total_executions(self) -> int:
        return sum(self.executions.values())

    @property
    def turns(self) -> int:
        return len(self.usage)

    @property
    def tokens(self) -> int:
        return sum(u.total for u in self.usage)

    @property
    def guard(self) -> str | None:
        return (self.stop_report or {}).get("guard")

    def violations(self, *invariants: Any) -> list[Any]:
        return check_all(self, invariants)

    def check(self, *invariants: Any) -> RunResult:
        """Raise ``InvariantViolation`` for the first broken invariant (listing the others)."""
        __tracebackhide__ = True
        raise_for(self, self.violations(*invariants))
        return self

    def summary(self) -> str:
        ex = ", ".join(f"{k}={v}" for k, v in sorted(self.executions.items())) or "none"
        return (f"run {self.run_id}: {self.terminal_state}"
                f"{f' (guard: {self.guard})' if self.guard else ''}; executions: {ex}; "
                f"model turns: {self.turns}; effects: {self.ledger.applied()}; "
                f"virtual time: {self.virtual_seconds:g}s")


def _as_agent_result(out: Any, run: _Run) -> AgentResult:
    if isinstance(out, AgentResult):
        return out
    if isinstance(out, Mapping):
        state = out.get("state") or out.get("terminal_state")
        report = out.get("report") or out.get("stop_report")
        if state:
            return AgentResult(str(state), out.get("answer"), dict(report) if report else None)
        out = out.get("answer")
    answer = None if out is None else str(out)
    if run.last_final is not None and not run.pending:
        return AgentResult("COMPLETED", answer if answer is not None else run.last_final)
    return AgentResult("FAILED", answer, None)


def _run_agent(agent: Callable[..., Any], task: str, model: ModelClient, toolbox: Toolbox) -> Any:
    out = agent(task, model, toolbox)
    if inspect.isawaitable(out):
        out = _clock.run_awaitable(out, cast(_clock.VirtualClock, model._run.clock))  # asyncio.run, virtual time
    return out


_SEQ = operator.itemgetter("seq")


@types.coroutine
def _yield() -> Any:
    """One trip through the event loop, as ``asyncio.sleep(0)`` without its two coroutine layers."""
    yield
_CLASS = {c: c.value for c in OutcomeClass}  # an Enum's .value is a descriptor call; this is a dict hit


def _leftover_threads(before: set[threading.Thread], r: _Run, grace: float) -> list[str]:
    """Threads the agent started that still call into the run after it returned (names)."""
    started = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    if not started:
        return []
    deadline = _clock.real_monotonic() + grace
    for t in started:  # a thread that gets RunClosed and stops ends here; idle pool workers do not
        t.join(max(0.0, deadline - _clock.real_monotonic()))
    late = sum(1 for e in r.events if e["kind"] == "late")
    if not late:
        return []
    return sorted(t.name for t in started if t.is_alive()) or ["(ended during the grace period)"]


def run(agent: Any, *, task: str, tools: Iterable[FakeTool], policy: Any, seed: int = 0,
        budgets: Budgets | Mapping[str, Any] | None = None, ceiling: Ceiling | None = None,
        store: MutableMapping[str, Any] | None = None, name: str = "run", artifacts: str | Path | None = None,
        ledger: EffectLedger | None = None) -> RunResult:
    """Run ``agent(task, model, tools)`` once and return what happened.

    ``agent`` is a callable or a reference (``"builtin:guarded"``, ``"pkg.mod:attr"``).
    ``artifacts``: a directory; the trace is written there as ``<name>.trace.jsonl``.
    ``store``: ``tools.store`` (a dict, or ``toolchaos.SqliteStore`` to survive a process restart).
    ``ledger``: an effect ledger to continue (a resumed run keeps counting); by default a new
    one, or the store's own ``ledger`` when the store has one (``SqliteStore`` does).
    """
    agent_fn = resolve_agent(agent)
    _clock.install()
    _isolation.install()
    clock = _clock.VirtualClock()
    ceiling = ceiling or Ceiling()
    if not isinstance(budgets, Budgets):
        budgets = Budgets(**dict(budgets or {}))
    run_id = f"{name}#{seed}"
    if ledger is None and isinstance(getattr(store, "ledger", None), EffectLedger):
        ledger = store.ledger  # type: ignore[union-attr]
    toolset = ToolSet(tools, seed=seed, clock=clock, ledger=ledger)
    r = _Run(run_id, task, seed, toolset, as_policy(policy), ceiling, budgets, {} if store is None else store)
    toolbox, model = Toolbox(r), ModelClient(r)
    harness_stop = error = None
    interrupted: BaseException | None = None
    previous = _clock.activate(clock)
    net_mark = _isolation.begin()
    real_seconds, limit_source = ceiling.watchdog_limit()
    token = _watchdog.arm(real_seconds)
    threads_before = set(threading.enumerate())
    try:
        try:
            out = _run_agent(agent_fn, task, model, toolbox)
        finally:
            _watchdog.disarm(token)  # first: nothing is injected into the code below
        result = _as_agent_result(out, r)
    except HardCeiling as exc:
        harness_stop, error, result = "ceiling", str(exc), AgentResult("HARD_CEILING")
    except WatchdogExpired:
        harness_stop, error = "watchdog", f"the agent ran past the real-time limit of {real_seconds:g}s"
        if limit_source:
            error += f" (set by {limit_source})"
        result = AgentResult("WATCHDOG")
    except NetworkBlocked as exc:
        harness_stop, error, result = "network", str(exc), AgentResult("CRASHED")
    except PolicyCrashed as exc:
        harness_stop, error, result = "policy", "".join(traceback.format_exception(exc.original)), AgentResult("CRASHED")
        interrupted = exc.original
    except KeyboardInterrupt as exc:
        harness_stop, error, result = "interrupted", "interrupted (Ctrl-C)", AgentResult("CRASHED")
        interrupted = exc
    except BaseException as exc:  # the agent crashed, SystemExit included: a failed run, not a dead session
        harness_stop, error, result = "crash", "".join(traceback.format_exception(exc)), AgentResult("CRASHED")
    finally:
        _watchdog.disarm(token)  # again, in case the first was cut short by a late firing
        _clock.activate(previous)
        r.closed = True
        attempts = _isolation.end(net_mark)
    if harness_stop is None and isinstance(r.stopped, HardCeiling):  # hit in a worker thread
        harness_stop, error, result = "ceiling", str(r.stopped), AgentResult("HARD_CEILING")
    if harness_stop is None and attempts:  # refused in another thread, or swallowed by the agent
        harness_stop, error = "network", str(NetworkBlocked(attempts[0]))
        result = AgentResult("CRASHED")
    if interrupted is None:
        leftover = _leftover_threads(threads_before, r, min(ceiling.thread_grace, real_seconds))
        if leftover and harness_stop is None:
            harness_stop, result = "threads", AgentResult("CRASHED")
            error = (f"the agent returned while threads it started still called tools: {', '.join(leftover)}; "
                     f"their calls were refused")
    with r.lock:
        r.events.sort(key=_SEQ)  # concurrent workers append out of order
    r.flush_pending()
    report = result.report
    r.events.append(end_event(r.run_id, next(r.seq), r.step, clock.t, result.state, (report or {}).get("guard"),
                              (report or {}).get("reason"), harness_stop,
                              error.strip().splitlines()[-1] if error else None))
    res = RunResult(run_id, seed, task, result.state, result.answer, report, Trace(r.events), toolset.ledger,
                    r.usage, harness_stop, error, clock.t, dict(toolset.tools))
    if artifacts is not None:
        res.trace.write(Path(artifacts) / f"{safe_name(name)}.trace.jsonl")
    if interrupted is not None:
        raise interrupted
    return res


def safe_name(name: str) -> str:
    """A file name from a test or scenario id."""
    out = "".join(ch if ch.isalnum() or ch in "-_.=" else "_" for ch in name).strip("._")
    return out[:180] or "run"
