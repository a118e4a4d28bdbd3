"""``run()``: one agent, its fake tools and a policy, under the virtual clock, ended by the agent or the harness.

The agent runs under the watchdog, the socket guard and the run's virtual clock;
whatever ends it (a return, a ceiling, the watchdog, a crash, Ctrl-C) becomes an
``_Ending``, then the checks that only a returned agent allows (a ceiling hit in a worker
thread, a connection refused in another thread, threads still calling), then the ``end``
event and the ``RunResult``.
"""

from __future__ import annotations

import builtins
import hashlib
import inspect
import itertools
import math
import operator
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from toolchaos._agents import IN_PROCESS, AgentUnderTest, invoke, resolve
from toolchaos._engine import isolated as _isolated
from toolchaos._engine.client import ModelClient
from toolchaos._engine.plain import plain, plain_text, type_name
from toolchaos._engine.result import RunResult
from toolchaos._engine.spec import RunSpec
from toolchaos._engine.state import RunState
from toolchaos._engine.toolbox import Toolbox
from toolchaos._internal.events import Event, end_event
from toolchaos._internal.limits import TOTAL_FACTOR, Budgets, Ceiling
from toolchaos._internal.model import Usage
from toolchaos._internal.trace import Trace
from toolchaos._internal.types import REPORT_FIELDS, AgentResult, report_value
from toolchaos._plumbing import clock as _clock
from toolchaos._plumbing import exits as _exits
from toolchaos._plumbing import isolation as _isolation
from toolchaos._plumbing import watchdog as _watchdog
from toolchaos.errors import AgentCallError, HardCeiling, NetworkBlocked, PolicyCrashed, UserError, WatchdogExpired
from toolchaos.fake_tools import EffectLedger, FakeTool, ToolSet, World
from toolchaos.policies import as_policy

_T = TypeVar("_T")


def run(agent: Any, spec: RunSpec | None = None, *, task: str | None = None, tools: Iterable[FakeTool] | None = None,
        policy: Any = None, seed: int = 0, budgets: Budgets | Mapping[str, Any] | None = None,
        ceiling: Ceiling | None = None, store: MutableMapping[str, Any] | None = None, name: str = "run",
        artifacts: str | Path | None = None, ledger: EffectLedger | None = None,
        world: World | Mapping[str, Any] | None = None, api_faults: Any = None, isolation: str | None = None,
        real_seconds: float | None = None) -> RunResult:
    """Run ``agent(task, model, tools)`` once and return what happened.

    The run's settings are a ``RunSpec``, or its keywords (``task``, ``tools`` and ``policy``
    required), not both; what neither sets comes from the session (``RunSpec``).
    ``agent`` is a callable, a reference (``"builtin:guarded"``, ``"pkg.mod:attr"``) or an
    ``AgentUnderTest`` of any kind (``toolchaos.adapters.agent_under_test``), whose own run
    this calls. An agent the harness cannot call at all ends ``ERROR`` (harness stop
    ``uncallable``) with a message naming the call forms it accepts.
    ``isolation``: ``"process"`` runs the agent in a contained child (killed when stuck, its
    trace streamed back; docs/isolation.md), ``"none"`` in this process; unset, the session's.
    ``real_seconds``: the watchdog's limit without progress (unset: the ceiling's, the session's, 5 s).
    ``artifacts``: a directory; the trace is written there as ``<name>.trace.jsonl``.
    ``store``: ``tools.store`` (a dict, or ``toolchaos.SqliteStore`` to survive a process restart).
    ``ledger``: an effect ledger to continue (a resumed run keeps counting); by default a new
    one, or the store's own ``ledger`` when the store has one (``SqliteStore`` does).
    ``world``: the state behind the tools (a ``World``, or its collections as plain data to start
    from); a run restarted against the same ``World`` finds what the first run wrote.
    ``api_faults``: model-API faults (``toolchaos.wire.ApiFaults``), for an agent whose model is
    answered over HTTP (an ``AgentUnderTest`` of the sdk or a framework kind); an in-process
    agent's model is a Python object, so giving them for one is an error, not faults that never fire.
    """
    if spec is None:
        if task is None or tools is None:
            raise TypeError("run() takes a RunSpec, or the keywords task=, tools= and policy=")
        spec = RunSpec.of(task=task, tools=tools, policy=policy, seed=seed, budgets=budgets, ceiling=ceiling,
                          store=store, world=world, ledger=ledger, api_faults=api_faults, isolation=isolation,
                          real_seconds=real_seconds, artifacts=artifacts, name=name)
    elif task is not None or tools is not None or policy is not None:
        raise TypeError("run() takes a RunSpec or its keywords, not both")
    return run_spec(agent, spec)


def run_spec(agent: Any, spec: RunSpec) -> RunResult:
    """Run ``agent`` with the settings of ``spec`` (``run`` without the keyword form).

    The agent is resolved through the registry of kinds (``toolchaos.kinds``): an agent of any
    kind runs the way of its kind; an in-process one is driven here (``run_in_process``).
    """
    aut = agent if isinstance(agent, AgentUnderTest) else resolve(agent)
    # An in-process kind's run is this engine's (isolated as any); another kind's keeps what its HTTP side recorded.
    if aut.kind != IN_PROCESS:
        spec = spec.staying(f"an agent of kind {aut.kind}: its runner answers the agent's model over HTTP in "
                            f"this process and keeps the record of those requests here")
    res: RunResult = aut.runner(spec)
    res.agent_kind = aut.kind
    return res


def run_in_process(agent: Any, agent_label: str, spec: RunSpec) -> RunResult:
    """Drive an in-process agent (``agent(task, model, tools)``, already resolved) with ``spec``."""
    if spec.api_faults is not None:
        raise UserError("api_faults: an in-process agent's model is not answered over HTTP, so model-API faults "
                        "cannot reach it; run an SDK or framework agent (KIND:pkg.mod:attr) or toolchaos serve",
                        field="api_faults")
    _clock.install()
    _isolation.install()
    r = _state(spec)

    def execute() -> tuple[RunResult, BaseException | None]:
        ending = _drive(agent, agent_label, r)
        return _finish(r, ending), ending.interrupted

    where, why = _isolated.placement(spec)
    res, interrupted = _in_child(execute, r) if where == "process" else execute()
    res.isolation, res.isolation_reason = where, why
    if spec.artifacts is not None:
        res.trace.write(spec.artifacts / f"{safe_name(spec.name)}.trace.jsonl")
    if interrupted is not None:
        raise interrupted
    return res


def safe_name(name: str) -> str:
    """A file name from a test or scenario id, one per id.

    A name that is already safe is kept; otherwise the readable part is followed by a short hash
    of the exact id, so ``test[a b]``, ``test[a_b]``, ``test[a/b]`` and ``test[a?b]`` never share a file.
    """
    out = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.=") else "_" for ch in name).strip("._")
    if out == name and 0 < len(out) <= 180:
        return out
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{out[:160] or 'run'}-{digest}"


@dataclass(slots=True)
class _Ending:
    """How a run ended: the agent's result, and the harness's stop when the harness ended it."""

    result: AgentResult
    harness_stop: str | None = None  # ceiling | watchdog | network | policy | interrupted | crash | threads | uncallable
    error: str | None = None
    interrupted: BaseException | None = None  # re-raised once the trace is kept (Ctrl-C, the policy's bug)
    warnings: list[str] = field(default_factory=list)
    watchdog: dict[str, Any] | None = None  # which of the watchdog's limits ended the run (RunResult.watchdog)




def _state(spec: RunSpec) -> RunState:
    clock = _clock.VirtualClock()
    store, ledger, world = spec.store, spec.ledger, spec.world
    if ledger is None and isinstance(getattr(store, "ledger", None), EffectLedger):
        ledger = store.ledger  # type: ignore[union-attr]
    toolset = ToolSet(spec.tools, seed=spec.seed, clock=clock, ledger=ledger,
                      world=world if isinstance(world, World) else World(world))
    r = RunState(f"{spec.name}#{spec.seed}", spec.task, spec.seed, toolset, as_policy(spec.policy), spec.ceiling,
                 spec.budgets, {} if store is None else store)
    r.limit = spec.watchdog_limit()
    r.total = spec.total_limit()
    return r


def _drive(agent_fn: Callable[..., Any], name: str, r: RunState) -> _Ending:
    """Run the agent under the watchdog, the socket guard and the run's clock; close the run.

    The watchdog stays armed until the engine has read all it needs from agent objects (the
    result, an exception's message), as plain copies; a ``WatchdogExpired`` that lands in the
    engine's own handling afterwards is caught here and recorded, never raised out of ``run``.
    """
    toolbox, model = Toolbox(r), ModelClient(r)
    previous = _clock.activate(r.clock)
    net_mark = _isolation.begin()
    real_seconds, limit_source = r.limit
    token = _watchdog.arm(real_seconds, r.events.__len__, total=r.total[0])
    # After arm(): in a forked child (an isolated run) arm() starts the watchdog's thread, which
    # is the harness's, not one the agent left running (counted so, every run waited its grace).
    threads_before = set(threading.enumerate())
    limit = _Limit(real_seconds, limit_source, token, *r.total)
    ending: _Ending | None = None
    try:
        ending = _shielded(lambda: _call(agent_fn, name, r, model, toolbox, limit), limit.expired)
    finally:
        attempts = _close(token, previous, net_mark, r)
    ending = ending or limit.expired()  # only when even the shield's fallback was cut short
    return _after_return(ending, r, attempts, threads_before, min(r.ceiling.thread_grace, real_seconds))


_GRACE = 1.0  # real seconds the engine gives itself to read the agent's result or exception, under the watchdog


@dataclass(slots=True)
class _Limit:
    seconds: float
    source: str
    token: int
    total: float
    total_source: str

    def expired(self) -> _Ending:
        if _watchdog.why(self.token) == _watchdog.TOTAL:
            return watchdog_ending(_watchdog.TOTAL, self.total, self.total_source, self.seconds)
        return watchdog_ending(_watchdog.NO_PROGRESS, self.seconds, self.source, self.seconds)


def watchdog_ending(which: str, seconds: float, source: str, no_progress: float, killed: bool = False) -> _Ending:
    """A run the watchdog ended: its message names the limit that fired (no progress, or total), its value and
    who set it. ``killed``: the run's contained process did not stop and was killed (an isolated run)."""
    if which == _watchdog.TOTAL:
        defaulted = not source and math.isclose(seconds, no_progress * TOTAL_FACTOR)  # (or set to the same)
        default = f", {TOTAL_FACTOR:g} times the no-progress limit of {no_progress:g}s" if defaulted else ""
        error = f"the run went on for {seconds:g}s of real time in all without reaching a ceiling, its total limit{default}"
    else:
        error = (f"the agent made no progress (no model request, tool call or event) for {seconds:g}s while it "
                 f"could run, its no-progress limit")
    if source:
        error += f" (set by {source})"
    if killed:
        error += ": it did not stop, and its process was killed"
    return _Ending(AgentResult("WATCHDOG"), "watchdog", error, watchdog={"limit": which, "seconds": round(seconds, 6)})


def _shielded(step: Callable[[], _T], fallback: Callable[[], _T]) -> _T:
    """``step()``; its ``fallback()`` when the watchdog's exception lands in it, or in the handler itself."""
    try:
        try:
            return step()
        except WatchdogExpired:
            return fallback()
    except WatchdogExpired:  # a second firing, delivered while the first was being handled
        return fallback()


def _call(agent_fn: Callable[..., Any], name: str, r: RunState, model: ModelClient, toolbox: Toolbox,
          limit: _Limit) -> _Ending:
    try:
        out = _awaited(invoke(agent_fn, name, r.task, model, toolbox), r)
    except BaseException as exc:  # the agent crashed, SystemExit included: a failed run, not a dead session
        _watchdog.extend(limit.token, min(_GRACE, limit.seconds))
        ending = _stopped_by(exc, limit)
    else:
        _watchdog.extend(limit.token, min(_GRACE, limit.seconds))
        ending = _shielded(lambda: _read_result(out, r), lambda: _Ending(
            AgentResult("CRASHED"), "result", "the agent's result could not be read in time (its str(), "
            "repr() or mapping methods did not return)"))
    tampered = _watchdog.tampering()
    if tampered:
        if ending.harness_stop is None:
            return _Ending(AgentResult("CRASHED"), "tampered", tampered)
        ending.error = f"{ending.error}\n{tampered}" if ending.error else tampered
    return ending


def _awaited(out: Any, r: RunState) -> Any:
    """What the agent returned, awaited when it is awaitable (asyncio.run, virtual time)."""
    return _clock.run_awaitable(out, r.clock) if inspect.isawaitable(out) else out


def _close(token: int, previous: Any, net_mark: int, r: RunState) -> list[str]:
    """Disarm, put the previous clock back, close the run: each step survives a late firing."""
    for _ in range(3):
        try:
            _watchdog.disarm(token)
            break
        except WatchdogExpired:
            continue
    for _ in range(3):
        try:
            _clock.activate(previous)
            r.closed = True
            return _isolation.end(net_mark)
        except WatchdogExpired:
            continue
    return []


def _stopped_by(exc: BaseException, limit: _Limit) -> _Ending:
    if isinstance(exc, AgentCallError):  # nothing ran: not the agent's failure, the harness's error
        return _Ending(AgentResult("ERROR"), "uncallable", _message(exc))
    if isinstance(exc, HardCeiling):
        return _Ending(AgentResult("HARD_CEILING"), "ceiling", _message(exc))
    if isinstance(exc, WatchdogExpired):
        return limit.expired()
    if isinstance(exc, NetworkBlocked):
        return _Ending(AgentResult("CRASHED"), "network", _message(exc))
    if isinstance(exc, PolicyCrashed):
        return _Ending(AgentResult("CRASHED"), "policy", _formatted(exc.original), exc.original)
    if isinstance(exc, KeyboardInterrupt):
        return _Ending(AgentResult("CRASHED"), "interrupted", "interrupted (Ctrl-C)", exc)
    return _Ending(AgentResult("CRASHED"), "crash", _formatted(exc))


_FRAMES = 40  # the innermost frames of a crash's traceback: a runaway recursion has millions


def _formatted(exc: BaseException) -> str:
    """The traceback of an exception, bounded; its message is the agent's code, so it may not return."""
    return _shielded(lambda: _format_exception(exc),
                     lambda: f"{type_name(exc)} (its message could not be read in time)\n")


def _format_exception(exc: BaseException) -> str:
    try:
        return plain_text("".join(traceback.format_exception(exc, limit=-_FRAMES)))
    except Exception:  # its class ran code of its own that raised (a metaclass's __getattribute__, a __str__)
        return f"{type_name(exc)} (its traceback could not be read: reading it raised)\n"


def _message(exc: BaseException) -> str:
    return _shielded(lambda: _exception_text(exc), lambda: type_name(exc))


def _exception_text(exc: BaseException) -> str:
    try:
        return plain_text(str(exc))
    except Exception:  # its __str__, or its class's metaclass, raised
        return type_name(exc)


def _after_return(ending: _Ending, r: RunState, attempts: list[str], threads_before: set[threading.Thread],
                  grace: float) -> _Ending:
    """What only shows once the agent has returned: stops in other threads, threads still calling."""
    started = [t for t in threading.enumerate() if t not in threads_before]
    if ending.harness_stop is None and isinstance(r.stopped, HardCeiling):  # hit in a worker thread
        ending = _Ending(AgentResult("HARD_CEILING"), "ceiling", str(r.stopped))
    if ending.harness_stop is None and attempts:  # refused in another thread, or swallowed by the agent
        ending = _Ending(AgentResult("CRASHED"), "network", str(NetworkBlocked(attempts[0])))
    if ending.interrupted is None:
        leftover = _leftover_threads(started, r, grace)
        if leftover and ending.harness_stop is None:
            ending = _Ending(AgentResult("CRASHED"), "threads",
                             f"the agent returned while threads it started still called tools: {', '.join(leftover)}; "
                             f"their calls were refused")
    kept, held = _release_non_daemon(started) if started else ([], [])
    if kept:
        ending.warnings.append(f"the agent left non-daemon threads running: {', '.join(kept)}; the process will "
                               f"not wait for them at exit")
    if held:
        ending.warnings.append(f"the agent left non-daemon threads running: {', '.join(held)}; this Python "
                               f"({sys.version.split()[0]}) has no known way to keep the process from waiting for "
                               f"them at exit: stop them in the agent, or start them with daemon=True")
    return ending


def _release_non_daemon(started: list[threading.Thread]) -> tuple[list[str], list[str]]:
    """Threads the agent started that would keep the process from exiting: let it exit without them.

    The names of the threads released, and of those the interpreter may still wait for (no
    known mechanism on this Python: ``_internal.exits``). A released thread runs on, but the
    interpreter no longer waits for it, as for a daemon thread.
    """
    kept = [t for t in started if t.is_alive() and not t.daemon]
    released = [(t.name, _exits.release(t)) for t in kept]
    return sorted(n for n, ok in released if ok), sorted(n for n, ok in released if not ok)


def _read_result(out: Any, run: RunState) -> _Ending:
    """What the agent returned, as plain copies (read under the watchdog: see ``_drive``).

    Reading runs the agent's own code (``__str__``, a mapping's methods, and through
    ``isinstance`` checks against abstract classes, its type's metaclass: ``__instancecheck__``,
    ``__subclasscheck__``, ``__eq__``, ``__getattribute__``); what raises there is a failed run.
    """
    try:
        return _result_of(out, run)
    except Exception as exc:
        return _Ending(AgentResult("CRASHED"), "result", f"the agent's result could not be read: reading "
                                                         f"{_a(out)} raised {_exception_text(exc)!r} ({type_name(exc)})")


def _result_of(out: Any, run: RunState) -> _Ending:
    state: Any
    if isinstance(out, AgentResult):
        state, answer, report = out.state, out.answer, out.report
    elif isinstance(out, Mapping):
        state = out.get("state") or out.get("terminal_state")
        report = out.get("report") or out.get("stop_report")
        answer = out.get("answer")
        if not state:
            state, report = None, None
    else:
        state, answer, report = None, out, None
    if report is not None and not isinstance(report, Mapping):
        return _Ending(AgentResult("CRASHED"), "result",
                       f"the agent's stop report is {_a(report)}, not a mapping (the report of AgentResult and of a "
                       f"returned dict is a dict of fields: {', '.join(REPORT_FIELDS)})")
    if state and not isinstance(state, str):  # its str() would be the object's address: a trace unlike any other
        return _Ending(AgentResult("CRASHED"), "result", f"the agent's terminal state is {_a(state)}, not a string "
                                                         f"(COMPLETED, FAILED, NEEDS_HUMAN, ...)")
    text = None if answer is None else plain_text(answer)
    if state:
        return _Ending(AgentResult(plain_text(state), text, plain(report) if report else None))
    if run.last_final is not None and not run.pending:
        return _Ending(AgentResult("COMPLETED", text if text is not None else run.last_final))
    return _Ending(AgentResult("FAILED", text, None))


def _a(value: Any) -> str:
    name = type_name(value)
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


# The watchdog's exception lands only while the agent runs or its objects are read, never in the
# engine's own handling of the run's end (see toolchaos._plumbing.watchdog.safe_points).
_watchdog.safe_points(interruptible=(invoke, _awaited, _read_result, _format_exception, _exception_text),
                      holding=(_drive, _call, _shielded, _close, _stopped_by, _Limit.expired))


# What threading.current_thread() makes for a thread it did not start (one the agent started through
# _thread or C code that then called into Python): listed by threading.enumerate(), never joinable.
_DUMMY: type = getattr(threading, "_DummyThread", type(None))


def _leftover_threads(started: list[threading.Thread], r: RunState, grace: float) -> list[str]:
    """Threads the agent started that still call into the run after it returned (names)."""
    started = [t for t in started if t.is_alive()]
    if not started:
        return []
    deadline = _clock.real_monotonic() + grace
    for t in started:  # a thread that gets RunClosed and stops ends here; idle pool workers do not
        if isinstance(t, _DUMMY):  # a thread threading did not start (C code, _thread) cannot be joined: its
            continue  # late calls still count below
        t.join(max(0.0, deadline - _clock.real_monotonic()))
    late = sum(1 for e in r.events if e["kind"] == "late")
    if not late:
        return []
    return sorted(t.name for t in started if t.is_alive()) or ["(ended during the grace period)"]


_SEQ = operator.itemgetter("seq")


def _finish(r: RunState, ending: _Ending) -> RunResult:
    """The events in order, the requests left unanswered, the ``end`` event: the result."""
    result, error = ending.result, ending.error
    report = result.report
    with r.lock:  # a late call records nothing once the end event is written
        r.events.sort(key=_SEQ)  # concurrent workers append out of order
        r.flush_pending()
        r.events.append(end_event(r.run_id, next(r.seq), r.step, r.clock.t, result.state,
                                  report_value(report, "guard"), report_value(report, "reason"), ending.harness_stop,
                                  error.strip().splitlines()[-1] if error else None))
        r.ended = True
    toolset = r.toolset
    fired, hits = toolset.fired()
    return RunResult(r.run_id, r.seed, r.task, result.state, result.answer, result.report, Trace(r.events),
                     toolset.ledger, r.usage, ending.harness_stop, error, r.clock.t, dict(toolset.tools),
                     toolset.world, fired, hits, ending.warnings, watchdog=ending.watchdog)


# --- the run in a child process (toolchaos._engine.isolated) ------------------------------


def _in_child(execute: Callable[[], tuple[RunResult, BaseException | None]],
              r: RunState) -> tuple[RunResult, BaseException | None]:
    """Run in a contained child; the parent builds the result from what it streamed."""
    real_seconds, limit_source = r.limit
    total, total_source = r.total
    out = _isolated.fork_run(execute, r, real_seconds, total)
    if out.result is not None and "unsendable" not in out.result:
        res, interrupted = _from_child(r, out.result, out.events), _interruption(out.result.get("interrupted"))
        if isinstance(interrupted, KeyboardInterrupt):
            # The agent's own process was interrupted: it raised KeyboardInterrupt, or sent itself SIGINT.
            # That fails its run, not the session: a real Ctrl-C at the terminal reaches this process
            # too (the child runs in a process group of its own) and stops the session here.
            res.error = ("the agent's contained process was interrupted (a KeyboardInterrupt "
                         "raised by the agent, or a SIGINT it sent itself): the run fails, the session goes on")
            return res, None
        return res, interrupted
    r.events = out.events
    _isolated.restore_ledger(r.toolset.ledger, [*r.toolset.ledger.effects, *out.effects])
    r.usage = [Usage(e["tokens_in"], e["tokens_out"]) for e in out.events if e["kind"] == "model"]
    r.step = max((e["step"] for e in out.events), default=0)
    r.seq = itertools.count(max((e["seq"] for e in out.events), default=0) + 1)
    r.clock.t = max((e["t"] for e in out.events), default=0.0)
    r.pending = []
    if out.timed_out:
        if out.timed_out == _watchdog.TOTAL:
            ending = watchdog_ending(_watchdog.TOTAL, total, total_source, real_seconds, killed=True)
        else:
            ending = watchdog_ending(_watchdog.NO_PROGRESS, real_seconds, limit_source, real_seconds, killed=True)
        return _finish(r, ending), None
    return _finish(r, _Ending(AgentResult("CRASHED"), "crash", _death(out))), None


def _death(out: _isolated.Outcome) -> str:
    if out.result is not None:
        return f"the run's result could not be sent back from its process: {out.result['unsendable']}"
    if out.cut:
        return f"the run streamed more than {_isolated.STREAM_CAP >> 20} MiB of trace; its process was stopped"
    ended = out.ended
    if ended.signal is not None:
        try:
            name = signal.Signals(ended.signal).name
        except ValueError:
            name = f"signal {ended.signal}"
        return f"the agent's process died of {name} before the run ended"
    return f"the agent's process exited (code {ended.returncode}) before the run ended"


def _from_child(r: RunState, data: dict[str, Any], events: list[Event]) -> RunResult:
    toolset = r.toolset
    _isolated.restore_ledger(toolset.ledger, data["ledger"])
    _isolated.restore_world(toolset.world, data["world"])
    if isinstance(r.store, dict):
        r.store.clear()
        r.store.update(data["store"])
    return RunResult(r.run_id, r.seed, r.task, data["state"], data["answer"], data["report"], Trace(events),
                     toolset.ledger, [Usage(i, o) for i, o in data["usage"]], data["harness_stop"], data["error"],
                     data["virtual_seconds"], dict(toolset.tools), toolset.world,
                     {k: tuple(v) for k, v in data["rules_fired"].items()},
                     {k: dict(v) for k, v in data["rule_hits"].items()}, list(data.get("warnings", [])),
                     watchdog=data.get("watchdog"))


def _interruption(raised: Any) -> BaseException | None:
    """What interrupted the child's run (Ctrl-C, the policy's own bug), raised again here."""
    if raised is None:
        return None
    name, text = raised
    kind = getattr(builtins, str(name), None)
    if isinstance(kind, type) and issubclass(kind, BaseException):
        try:
            return kind(text)
        except Exception:
            pass
    return RuntimeError(text)
