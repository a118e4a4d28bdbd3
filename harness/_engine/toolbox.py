"""What the agent calls: the fake tools of one run, each call recorded as a trace event.

This is the per-tool-call path (benchmarked: ``python benchmarks/run.py --only core``):
``call`` goes straight to ``_execute``, and a call the model never asked for skips the
request matching.

Calls from threads that outlive the run are refused and recorded (``late``); a thread
that keeps calling is stopped (``LeftoverStopped``). See docs/isolation.md.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from toolchaos._engine.plain import plain_text
from toolchaos._engine.state import RunState
from toolchaos._internal.events import late_event, refusal_event, tool_event
from toolchaos.errors import HardCeiling, LeftoverStopped, RunClosed, UnknownTool
from toolchaos.fake_tools import FakeTool, Outcome, OutcomeClass

LATE_RECORDED = 20  # late calls recorded per run; the next ones stop their thread (LeftoverStopped)

_CLASS = {c: c.value for c in OutcomeClass}  # an Enum's .value is a descriptor call; this is a dict hit


_SCALARS = frozenset({str, int, float, bool})  # call ids written to the trace as they are

class Toolbox:
    """The fake tools as the agent sees them.

    ``tools.call(name, args, call_id=...)`` executes one call (or ``tools[name](**args)``);
    ``tools.refuse(...)`` records a refusal the runtime decided before execution;
    ``tools.specs`` declares the tools to a model; ``tools.budgets`` are the limits the
    runtime should enforce; ``tools.store`` persists across a simulated restart.
    """

    def __init__(self, run: RunState) -> None:
        self._run = run
        self.budgets = run.budgets
        self.store = run.store
        self.seed = run.seed
        self.names = list(run.tools)
        self._specs: list[dict[str, Any]] | None = None

    @property
    def specs(self) -> list[dict[str, Any]]:
        """The tools' declarations, built on the first read of the run: agents pass them on every
        turn and the in-process model never reads them (a fresh list; the declarations are shared)."""
        if self._specs is None:
            self._specs = [t.spec() for t in self._run.tools.values()]
        return list(self._specs)

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
            await asyncio.sleep(outcome.latency)  # virtual: see toolchaos._plumbing.clock
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
            await asyncio.sleep(result[1].latency)  # virtual: see toolchaos._plumbing.clock
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
        if call_id is not None and call_id.__class__ not in _SCALARS:  # the agent's object: copied now, while the
            call_id = plain_text(call_id)  # watchdog watches (the trace's writer, later, must not call into it)
        if run.pending:  # an agent calling its tools unasked has no request to match
            call_id = run.take_request(name, fp, call_id)
        run.served[seq] = outcome  # before the event: the next turn reads the outcome with it (RunState.handled)
        event = tool_event(run.run_id, seq, run.step, started, outcome.latency, name, call_no, norm, fp, call_id,
                           outcome.kind, _CLASS[outcome.cls], outcome.code, outcome.retry_after,
                           count if tool.side_effect else None)
        attempt = run.attempt(name, fp, call_id)
        if attempt > 1:  # a transport retry: counted apart from the model's requests (bounded.attempts)
            event["attempt"] = attempt
        run.events.append(event)
        return tool, outcome

    def refuse(self, name: str, args: Mapping[str, Any] | None = None, *, guard: str, reason: str,
               call_id: str | None = None) -> dict[str, Any]:
        """Record that the runtime refused this call before executing it.

        Returns the content to hand back to the model in place of a result.
        """
        run = self._run
        if run.closed:
            self._late(name, args or {})
        if next(run.refusals) > run.ceiling.max_refusals:
            stop = HardCeiling(f"more than {run.ceiling.max_refusals} refusals (the harness ceiling)")
            run.stopped = run.stopped or stop
            raise stop
        # Plain copies: the trace and the reports never call into the agent's objects.
        name, guard, reason = plain_text(name), plain_text(guard), plain_text(reason)
        if call_id is not None and call_id.__class__ not in _SCALARS:
            call_id = plain_text(call_id)
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
        with run.lock:  # the engine may be sorting the events of the run that just ended
            if not run.ended:  # nothing is written after the end event
                name = plain_text(name)
                norm, fp = run.fp(name, args)
                run.events.append(late_event(run.run_id, next(run.seq), run.step, run.clock.t, name, norm, fp))
        raise RunClosed(f"{name} was called after the run had ended; the call was not executed")


@types.coroutine
def _yield() -> Any:
    """One trip through the event loop, as ``asyncio.sleep(0)`` without its two coroutine layers."""
    yield
