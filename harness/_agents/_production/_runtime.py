"""The runtime: a tool loop with error classes, retries, a side-effect ledger, budgets and a loop detector."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from toolchaos._agents._production._budget import Budget
from toolchaos._agents._production._classes import FIX_INPUT, RETRY, STOP, ErrorClass, Reading, read_exception, read_result
from toolchaos._agents._production._ledger import (
    APPLIED,
    UNKNOWN,
    Ledger,
    Lookup,
    find_lookup,
    fingerprint,
    holds_record,
    operation_key,
)
from toolchaos._agents._production._loops import LoopDetector
from toolchaos._agents._production._retry import MAX_ATTEMPTS, RUN_RETRY_BUDGET, backoff
from toolchaos._internal.model import ToolCall, tool_message
from toolchaos._internal.types import AgentResult

CHECKPOINT = "production.checkpoint"  # the store key of the last safe checkpoint
MAX_REFUSALS = 2  # the model is told once; asking for a refused call again ends the run


@dataclass(frozen=True)
class Stop:
    """The runtime's decision to end the run, and what its stop report says."""

    state: str
    guard: str
    reason: str
    unmet: str
    resume: str
    next_action: str


@dataclass
class Open:
    """An error the model was told about and never got past: why the task is not done."""

    cls: ErrorClass
    tool: str
    code: str | None
    field: str | None


def _now_utc() -> datetime:
    return datetime.now(UTC)  # absolute retry times are compared with the wall clock


def _describe(name: str, args: Any) -> str:
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in sorted(dict(args).items())) + ")"


@dataclass
class Production:
    model: Any
    tools: Any
    budget: Budget = field(init=False)
    loops: LoopDetector = field(default_factory=LoopDetector)
    ledger: Ledger = field(init=False)
    completed: list[str] = field(default_factory=list)
    open_errors: dict[str, Open] = field(default_factory=dict)
    not_before: dict[str, float] = field(default_factory=dict)  # tool or fingerprint -> earliest next call
    refusals: list[tuple[str, str]] = field(default_factory=list)
    retries: int = 0
    turn: int = 0

    def __post_init__(self) -> None:
        self.budget = Budget.from_limits(self.tools.budgets, self.tools.now())
        self.ledger = Ledger.of(self.tools.store)
        self.completed = self.ledger.applied_calls()  # what an earlier run already did

    # -- the loop -------------------------------------------------------------------------------

    def run(self, task: str) -> AgentResult:
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        while True:  # ends: every turn is budgeted
            over = self.budget.before_turn(messages, self.tools.now())
            if over is not None:
                return self.stopped(self._budget_stop(*over))
            turn = self.model.complete(messages, self.tools.specs)
            self.turn = turn.step
            self.budget.spent_turn(turn.usage.input_tokens, turn.usage.output_tokens)
            messages.append(turn.as_message())
            if turn.final:
                return self.finished(turn.text)
            for call in turn.tool_calls:
                answer = self.handle(call)
                if isinstance(answer, Stop):
                    return self.stopped(answer)
                messages.append(tool_message(call, answer))

    def handle(self, call: ToolCall) -> Any:
        try:
            spec = self.tools.spec(call.name)
        except Exception:  # a tool the toolbox does not have: tell the model, as an API would
            self.loops.failed(call.name)
            return {"error": {"code": "unknown_tool", "class": "PRECONDITION", "message": f"no tool {call.name!r}"}}
        fp = fingerprint(spec, call.name, call.arguments)
        refused = self.loops.check(fp)
        if refused is not None:
            return self.refuse(call, *refused)
        over = self.budget.before_execution(self.tools.now())
        if over is not None:
            self.tools.refuse(call.name, call.arguments, guard=over[0], reason=over[1], call_id=call.id)
            return self._budget_stop(*over)
        if spec.side_effect:
            return self.side_effect(call, spec, fp)
        return self.read(call, spec, fp)

    def refuse(self, call: ToolCall, guard: str, reason: str) -> Any:
        self.refusals.append((guard, reason))
        told = self.tools.refuse(call.name, call.arguments, guard=guard, reason=reason, call_id=call.id)
        if len(self.refusals) >= MAX_REFUSALS:
            return Stop("STOPPED_LOOP_GUARD", guard, f"{call.name}: {reason}; asked for again after a refusal",
                        "a call that brings new information", "the tools' answers change or the task is narrowed",
                        "a different approach, in a new run")
        return {**told, "advice": "answer with what you have, or try a different approach"}

    # -- reads ----------------------------------------------------------------------------------

    def read(self, call: ToolCall, spec: Any, fp: str) -> Any:
        args = dict(call.arguments)
        attempt = 0
        while True:
            attempt += 1
            waited = self.wait_for(call.name, fp)
            if isinstance(waited, Stop):
                return waited
            result, reading = self.execute(call.name, args, call.id)
            if reading.cls in RETRY:
                self.not_before[call.name] = self.tools.now() + (reading.wait or 0.0)
                again = self.retry_after(attempt, reading, fp)
                if again is True:
                    continue
                if isinstance(again, Stop):
                    return again
            return self.after(call, spec, fp, result, reading)

    def retry_after(self, attempt: int, reading: Reading, fp: str) -> bool | Stop:
        """Wait and go again (True), give the error to the model (False), or stop (a Stop)."""
        if attempt >= MAX_ATTEMPTS or self.retries >= RUN_RETRY_BUDGET:
            self.loops.spent.add(fp)
            return False
        delay = backoff(attempt, reading.wait, self.tools.seed, fp)
        if not self.budget.allows_wait(self.tools.now(), delay):
            return self._deadline_stop(delay)
        over = self.budget.before_execution(self.tools.now() + delay)
        if over is not None:
            return self._budget_stop(*over)
        self.retries += 1
        time.sleep(delay)  # virtual under the harness
        return True

    def wait_for(self, tool: str, fp: str) -> Stop | None:
        """Hold a call back until the server's wait (or a job's poll interval) has passed."""
        due = max(self.not_before.get(tool, 0.0), self.not_before.get(fp, 0.0)) - self.tools.now()
        if due <= 0:
            return None
        if not self.budget.allows_wait(self.tools.now(), due):
            return self._deadline_stop(due)
        time.sleep(due)
        return None

    def execute(self, name: str, args: dict[str, Any], call_id: str | None) -> tuple[Any, Reading]:
        self.budget.executions += 1
        try:
            result = self.tools.call(name, args, call_id=call_id)
        except Exception as exc:  # a client library raises; keep what the server said
            reading = read_exception(exc, _now_utc())
            return {"error": {"code": reading.code, "class": reading.cls.value, "message": str(exc),
                              "retry_after": reading.wait, "field": reading.field}}, reading
        return result, read_result(result, _now_utc())

    def after(self, call: ToolCall, spec: Any, fp: str, result: Any, reading: Reading) -> Any:
        """Record an answer the model will see, and stop where its class says to."""
        if not reading.is_error:
            self.loops.answered(fp, result, spec.volatile, pending=reading.cls is ErrorClass.PENDING)
            if reading.cls is ErrorClass.PENDING and reading.wait:
                self.not_before[fp] = self.tools.now() + reading.wait
            else:
                self.completed.append(_describe(call.name, call.arguments))
            self.open_errors.pop(call.name, None)
            self.checkpoint()
            return result
        self.loops.failed(fp)
        if reading.cls in FIX_INPUT:
            self.loops.rejected[fp] = reading.field or reading.code or "its arguments"
        if reading.cls in STOP:
            return self._fatal_stop(call.name, reading)
        self.open_errors[call.name] = Open(reading.cls, call.name, reading.code, reading.field)
        return result

    # -- side effects ---------------------------------------------------------------------------

    def side_effect(self, call: ToolCall, spec: Any, fp: str) -> Any:
        key = operation_key(fp)
        entry = self.ledger.get(key)
        if entry is not None and entry["state"] == UNKNOWN:  # an earlier answer was lost (maybe before a restart)
            settled = self.resolve(call, spec, key, entry)
            if isinstance(settled, Stop):
                return settled
            entry = settled
        if entry is not None and entry["state"] == APPLIED:
            return self.from_ledger(call, fp, key, entry)
        idem = self._idempotency_key(spec, call.arguments, key)
        return self.write(call, spec, fp, key, idem)

    def _idempotency_key(self, spec: Any, args: Any, key: str) -> str | None:
        if not spec.idempotency_key:
            return None
        entry = self.ledger.get(key)
        if entry is not None and entry.get("idempotency_key"):
            return str(entry["idempotency_key"])  # a resend goes under the key the first attempt used
        given = dict(args).get(spec.idempotency_key)
        return str(given) if given else key

    def write(self, call: ToolCall, spec: Any, fp: str, key: str, idem: str | None) -> Any:
        args = dict(call.arguments)
        if idem is not None:
            args[spec.idempotency_key] = idem
        attempt = 0
        while True:
            attempt += 1
            waited = self.wait_for(call.name, fp)
            if isinstance(waited, Stop):
                return waited
            self.ledger.sent(key, idem, _describe(call.name, call.arguments))
            result, reading = self.execute(call.name, args, call.id)
            if reading.cls is ErrorClass.OK:
                self.ledger.applied(key, result)
            elif reading.cls in RETRY and reading.outcome_unknown:
                settled = self.resolve(call, spec, key, self.ledger.get(key) or {})
                if isinstance(settled, Stop):
                    return settled
                if settled["state"] == APPLIED:
                    return self.after(call, spec, fp, settled["result"], Reading(ErrorClass.OK))
            elif reading.is_error:
                self.ledger.forget(key)  # the API answered that nothing was applied
            if reading.cls in RETRY:
                again = self.retry_after(attempt, reading, fp)
                if again is True:
                    continue
                if isinstance(again, Stop):
                    return again
            return self.after(call, spec, fp, result, reading)

    def resolve(self, call: ToolCall, spec: Any, key: str, entry: dict[str, Any]) -> dict[str, Any] | Stop:
        """Settle an operation whose answer was lost: look it up; without a lookup, resend only where that is safe.

        Returns the ledger entry (``applied`` with the record found, or ``unknown`` when a resend
        under the same idempotency key is safe), or a Stop handing the question to a person.
        """
        idem = entry.get("idempotency_key")
        lookup = find_lookup(self.tools, spec, call.arguments, idem)
        if lookup is not None:
            answered, found = self.look_up(lookup)
            if found is not None:
                self.ledger.applied(key, found)
                return {**entry, "state": APPLIED, "result": found}
            if answered:  # the record is not there: nothing was applied, a resend under the same key is safe
                return {**entry, "state": UNKNOWN}
        if idem and spec.idempotency == "honoured" and spec.honoured_after_applied:
            return {**entry, "state": UNKNOWN}  # the API answers a resend under the same key with the original
        return Stop("NEEDS_HUMAN", "side_effect.outcome_unknown",
                    f"{call.name} got no answer and may have been applied; it cannot be checked, and the API "
                    f"would apply a resend again", f"someone confirms whether {_describe(call.name, call.arguments)} "
                    f"was applied", "the operation's state is known", "check the operation, then resume")

    def look_up(self, lookup: Lookup) -> tuple[bool, Any]:
        """(did the read answer, the record it found or None)."""
        if self.budget.before_execution(self.tools.now()) is not None:
            return False, None
        result, reading = self.execute(lookup.tool, dict(lookup.args), None)
        if reading.cls is ErrorClass.OK:
            return True, (result if holds_record(result, lookup.expect) else None)
        return reading.cls is ErrorClass.NOT_FOUND, None  # "no such record" is an answer too

    def from_ledger(self, call: ToolCall, fp: str, key: str, entry: dict[str, Any]) -> Any:
        """An operation already applied is not executed again: the model gets the recorded result."""
        self.tools.refuse(call.name, call.arguments, guard="idempotency.ledger",
                          reason=f"already applied as operation {key}; the recorded result is returned",
                          call_id=call.id)
        self.loops.answered(fp, entry["result"])
        return entry["result"]

    # -- ending ---------------------------------------------------------------------------------

    def checkpoint(self) -> None:
        self.tools.store[CHECKPOINT] = {"step": self.turn, "completed": list(self.completed)}

    def finished(self, answer: str | None) -> AgentResult:
        """The model answered: COMPLETED, unless a guard refused a call or an error was never got past."""
        if self.refusals:
            guard, reason = self.refusals[-1]
            return self.stopped(Stop("STOPPED_LOOP_GUARD", guard, reason, "a call that brings new information",
                                     "the tools' answers change", "a different approach"), answer)
        if self.open_errors:  # the first error the model never got past says why the task is not done
            return self.stopped(self._open_stop(next(iter(self.open_errors.values()))), answer)
        return AgentResult("COMPLETED", answer=answer)

    def _open_stop(self, err: Open) -> Stop:
        if err.cls in FIX_INPUT:
            what = err.field or "the arguments"
            return Stop("NEEDS_HUMAN", f"input.{err.code or 'invalid'}", f"{err.tool} rejected {what}",
                        f"a valid {what} for {err.tool}", f"{what} is corrected", f"call {err.tool} with a valid {what}")
        return Stop("STOPPED_LOOP_GUARD", "retries_spent", f"{err.tool} kept failing ({err.code})",
                    f"{err.tool} answers", f"{err.tool} recovers", f"retry {err.tool} later")

    def _fatal_stop(self, tool: str, reading: Reading) -> Stop:
        code = reading.code or reading.cls.value.lower()
        if reading.cls is ErrorClass.AUTH:
            return Stop("NEEDS_HUMAN", f"auth.{code}", f"{tool}: {code}", f"permission for {tool} ({code})",
                        "a person grants the permission or lifts the block", "hand over to a person")
        return Stop("FAILED", f"fatal.{code}", f"{tool}: {code}", f"{tool} succeeds ({code})",
                    "the resource exists / the cause is fixed", "none until the cause is fixed")

    def _budget_stop(self, guard: str, reason: str) -> Stop:
        return Stop("STOPPED_LOOP_GUARD", guard, reason, f"more budget ({guard})", f"a larger {guard} budget",
                    "resume from the last checkpoint with a larger budget")

    def _deadline_stop(self, wait: float) -> Stop:
        return Stop("STOPPED_LOOP_GUARD", "budget.deadline", f"the server asks to wait {wait:g}s, past the deadline",
                    "the service accepts calls again", f"the service is back after {wait:g}s",
                    "retry in a new run after the wait")

    def stopped(self, stop: Stop, answer: str | None = None) -> AgentResult:
        checkpoint = self.tools.store.get(CHECKPOINT) or {"step": self.turn, "completed": list(self.completed)}
        return AgentResult(stop.state, answer=answer, report={
            "state": stop.state, "guard": stop.guard, "reason": stop.reason, "completed": list(self.completed),
            "unmet_precondition": stop.unmet, "last_checkpoint": dict(checkpoint),
            "resume_condition": stop.resume, "next_allowed_action": stop.next_action})
