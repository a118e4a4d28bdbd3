"""``run()``: one agent, its fake tools and a policy, under the virtual clock, ended by the agent or the harness.

The agent runs under a real-time watchdog, the socket guard and the run's virtual clock;
whatever ends it (a return, a ceiling, the watchdog, a crash, Ctrl-C) becomes an
``_Ending``, then the checks that only a returned agent allows (a ceiling hit in a worker
thread, a connection refused in another thread, threads still calling), then the ``end``
event and the ``RunResult``.
"""

from __future__ import annotations

import builtins
import inspect
import itertools
import operator
import signal
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolchaos._agents import invoke, label, resolve_agent
from toolchaos._engine import isolated as _isolated
from toolchaos._engine.client import ModelClient
from toolchaos._engine.result import RunResult
from toolchaos._engine.state import RunState
from toolchaos._engine.subject import AgentUnderTest
from toolchaos._engine.toolbox import Toolbox
from toolchaos._internal import clock as _clock
from toolchaos._internal import isolation as _isolation
from toolchaos._internal import watchdog as _watchdog
from toolchaos._internal.events import Event, end_event
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.model import Usage
from toolchaos._internal.trace import Trace
from toolchaos._internal.types import AgentResult, report_value
from toolchaos.errors import AgentCallError, HardCeiling, NetworkBlocked, PolicyCrashed, UserError, WatchdogExpired
from toolchaos.fake_tools import EffectLedger, FakeTool, ToolSet, World
from toolchaos.policies._builtin import as_policy


def run(agent: Any, *, task: str, tools: Iterable[FakeTool], policy: Any, seed: int = 0,
        budgets: Budgets | Mapping[str, Any] | None = None, ceiling: Ceiling | None = None,
        store: MutableMapping[str, Any] | None = None, name: str = "run", artifacts: str | Path | None = None,
        ledger: EffectLedger | None = None, world: World | Mapping[str, Any] | None = None,
        api_faults: Any = None) -> RunResult:
    """Run ``agent(task, model, tools)`` once and return what happened.

    ``agent`` is a callable, a reference (``"builtin:guarded"``, ``"pkg.mod:attr"``) or an
    ``AgentUnderTest`` of any kind (``toolchaos.adapters.agent_under_test``), whose own run
    this calls. An agent the harness cannot call at all ends ``ERROR`` (harness stop
    ``uncallable``) with a message naming the call forms it accepts.
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
    if isinstance(agent, AgentUnderTest):
        extra = {} if api_faults is None else {"api_faults": api_faults}
        with _isolated.in_process():  # its runner calls this engine, and keeps what the HTTP side recorded
            return agent.runner(task=task, tools=tools, policy=policy, seed=seed, budgets=budgets, ceiling=ceiling,
                                store=store, name=name, artifacts=artifacts, ledger=ledger, world=world, **extra)
    if api_faults is not None:
        raise UserError("api_faults: an in-process agent's model is not answered over HTTP, so model-API faults "
                        "cannot reach it; run an SDK or framework agent (KIND:pkg.mod:attr) or toolchaos serve",
                        field="api_faults")
    agent_fn = resolve_agent(agent)
    _clock.install()
    _isolation.install()
    r = _state(name, task, seed, tools, policy, budgets, ceiling or Ceiling(), store, ledger,
               world if isinstance(world, World) else World(world))
    agent_label = label(agent)

    def execute() -> tuple[RunResult, BaseException | None]:
        ending = _drive(agent_fn, agent_label, r)
        return _finish(r, ending), ending.interrupted

    res, interrupted = _in_child(execute, r) if _isolated.wanted(r.store) else execute()
    if artifacts is not None:
        res.trace.write(Path(artifacts) / f"{safe_name(name)}.trace.jsonl")
    if interrupted is not None:
        raise interrupted
    return res


def safe_name(name: str) -> str:
    """A file name from a test or scenario id."""
    out = "".join(ch if ch.isalnum() or ch in "-_.=" else "_" for ch in name).strip("._")
    return out[:180] or "run"


@dataclass(slots=True)
class _Ending:
    """How a run ended: the agent's result, and the harness's stop when the harness ended it."""

    result: AgentResult
    harness_stop: str | None = None  # ceiling | watchdog | network | policy | interrupted | crash | threads | uncallable
    error: str | None = None
    interrupted: BaseException | None = None  # re-raised once the trace is kept (Ctrl-C, the policy's bug)


def _state(name: str, task: str, seed: int, tools: Iterable[FakeTool], policy: Any,
           budgets: Budgets | Mapping[str, Any] | None, ceiling: Ceiling, store: MutableMapping[str, Any] | None,
           ledger: EffectLedger | None, world: World) -> RunState:
    clock = _clock.VirtualClock()
    if not isinstance(budgets, Budgets):
        budgets = Budgets(**dict(budgets or {}))
    if ledger is None and isinstance(getattr(store, "ledger", None), EffectLedger):
        ledger = store.ledger  # type: ignore[union-attr]
    toolset = ToolSet(tools, seed=seed, clock=clock, ledger=ledger, world=world)
    return RunState(f"{name}#{seed}", task, seed, toolset, as_policy(policy), ceiling, budgets,
                    {} if store is None else store)


def _drive(agent_fn: Callable[..., Any], name: str, r: RunState) -> _Ending:
    """Run the agent under the watchdog, the socket guard and the run's clock; close the run."""
    toolbox, model = Toolbox(r), ModelClient(r)
    clock = r.clock
    previous = _clock.activate(clock)
    net_mark = _isolation.begin()
    real_seconds, limit_source = r.ceiling.watchdog_limit()
    token = _watchdog.arm(real_seconds)
    threads_before = set(threading.enumerate())
    try:
        try:
            out = invoke(agent_fn, name, r.task, model, toolbox)
            if inspect.isawaitable(out):
                out = _clock.run_awaitable(out, clock)  # asyncio.run, virtual time
        finally:
            _watchdog.disarm(token)  # first: nothing is injected into the code below
        ending = _Ending(_as_agent_result(out, r))
    except BaseException as exc:  # the agent crashed, SystemExit included: a failed run, not a dead session
        ending = _stopped_by(exc, real_seconds, limit_source)
    finally:
        _watchdog.disarm(token)  # again, in case the first was cut short by a late firing
        _clock.activate(previous)
        r.closed = True
        attempts = _isolation.end(net_mark)
    return _after_return(ending, r, attempts, threads_before, min(r.ceiling.thread_grace, real_seconds))


def _stopped_by(exc: BaseException, real_seconds: float, limit_source: str) -> _Ending:
    if isinstance(exc, AgentCallError):  # nothing ran: not the agent's failure, the harness's error
        return _Ending(AgentResult("ERROR"), "uncallable", str(exc))
    if isinstance(exc, HardCeiling):
        return _Ending(AgentResult("HARD_CEILING"), "ceiling", str(exc))
    if isinstance(exc, WatchdogExpired):
        error = f"the agent ran past the real-time limit of {real_seconds:g}s"
        if limit_source:
            error += f" (set by {limit_source})"
        return _Ending(AgentResult("WATCHDOG"), "watchdog", error)
    if isinstance(exc, NetworkBlocked):
        return _Ending(AgentResult("CRASHED"), "network", str(exc))
    if isinstance(exc, PolicyCrashed):
        return _Ending(AgentResult("CRASHED"), "policy", "".join(traceback.format_exception(exc.original)),
                       exc.original)
    if isinstance(exc, KeyboardInterrupt):
        return _Ending(AgentResult("CRASHED"), "interrupted", "interrupted (Ctrl-C)", exc)
    return _Ending(AgentResult("CRASHED"), "crash", "".join(traceback.format_exception(exc)))


def _after_return(ending: _Ending, r: RunState, attempts: list[str], threads_before: set[threading.Thread],
                  grace: float) -> _Ending:
    """What only shows once the agent has returned: stops in other threads, threads still calling."""
    if ending.harness_stop is None and isinstance(r.stopped, HardCeiling):  # hit in a worker thread
        ending = _Ending(AgentResult("HARD_CEILING"), "ceiling", str(r.stopped))
    if ending.harness_stop is None and attempts:  # refused in another thread, or swallowed by the agent
        ending = _Ending(AgentResult("CRASHED"), "network", str(NetworkBlocked(attempts[0])))
    if ending.interrupted is None:
        leftover = _leftover_threads(threads_before, r, grace)
        if leftover and ending.harness_stop is None:
            ending = _Ending(AgentResult("CRASHED"), "threads",
                             f"the agent returned while threads it started still called tools: {', '.join(leftover)}; "
                             f"their calls were refused")
    return ending


def _as_agent_result(out: Any, run: RunState) -> AgentResult:
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


def _leftover_threads(before: set[threading.Thread], r: RunState, grace: float) -> list[str]:
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


_SEQ = operator.itemgetter("seq")


def _finish(r: RunState, ending: _Ending) -> RunResult:
    """The events in order, the requests left unanswered, the ``end`` event: the result."""
    with r.lock:
        r.events.sort(key=_SEQ)  # concurrent workers append out of order
    r.flush_pending()
    result, error = ending.result, ending.error
    report = result.report
    r.events.append(end_event(r.run_id, next(r.seq), r.step, r.clock.t, result.state, report_value(report, "guard"),
                              report_value(report, "reason"), ending.harness_stop,
                              error.strip().splitlines()[-1] if error else None))
    toolset = r.toolset
    return RunResult(r.run_id, r.seed, r.task, result.state, result.answer, result.report, Trace(r.events),
                     toolset.ledger, r.usage, ending.harness_stop, error, r.clock.t, dict(toolset.tools),
                     toolset.world, toolset.rules_fired(), toolset.rule_hits())


# --- the run in a child process (toolchaos._engine.isolated) ------------------------------


def _in_child(execute: Callable[[], tuple[RunResult, BaseException | None]],
              r: RunState) -> tuple[RunResult, BaseException | None]:
    """Run in a contained child; the parent builds the result from what it streamed."""
    real_seconds, limit_source = r.ceiling.watchdog_limit()
    out = _isolated.fork_run(execute, r, real_seconds)
    if out.result is not None and "unsendable" not in out.result:
        return _from_child(r, out.result, out.events), _interruption(out.result.get("interrupted"))
    r.events = out.events
    _isolated.restore_ledger(r.toolset.ledger, [*r.toolset.ledger.effects, *out.effects])
    r.usage = [Usage(e["tokens_in"], e["tokens_out"]) for e in out.events if e["kind"] == "model"]
    r.step = max((e["step"] for e in out.events), default=0)
    r.seq = itertools.count(max((e["seq"] for e in out.events), default=0) + 1)
    r.clock.t = max((e["t"] for e in out.events), default=0.0)
    r.pending = []
    if out.timed_out:
        error = (f"the agent ran past the real-time limit of {real_seconds:g}s"
                 f"{f' (set by {limit_source})' if limit_source else ''} and did not stop: its process was killed")
        return _finish(r, _Ending(AgentResult("WATCHDOG"), "watchdog", error)), None
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
                     {k: tuple(v) for k, v in data["rules_fired"].items()})


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
