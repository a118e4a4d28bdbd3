"""The runtime: a tool loop whose transport retries each request at the SDK default, with sound decisions on top."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from toolchaos._agents._sdk_retries._decisions import Decisions, Verdict, final_error_state, fingerprint, poll_interval
from toolchaos._agents._sdk_retries._ledger import APPLIED, SENT, Ledger, find_lookup, holds, idempotency_key, replay_safe
from toolchaos._agents._sdk_retries._transport import Response, Transport
from toolchaos._internal.model import ToolCall, tool_message
from toolchaos._internal.types import AgentResult

DEFAULT_MAX_TURNS = 50  # a ceiling when the caller sets none (the SDKs' agent loops take one)
CHECKPOINT = "sdk-retries.checkpoint"  # the store key of the last safe checkpoint


@dataclass(frozen=True)
class Stop:
    """The decision to end the run, and what its stop report says."""

    state: str
    guard: str
    reason: str
    unmet: str
    resume: str


@dataclass
class Budget:
    """``tools.budgets`` as the runtime enforces them: turns and the deadline before they are spent,
    executions before each attempt, tokens from the usage each turn reports (as the SDKs' agent
    loops check a budget: after the turn, so the last turn may overshoot it)."""

    limits: Any
    started: float
    turns: int = 0
    tokens: int = 0

    @property
    def deadline(self) -> float | None:
        seconds = self.limits.max_seconds
        return None if seconds is None else self.started + seconds

    def before_turn(self, now: float) -> Stop | None:
        max_turns = self.limits.max_steps or DEFAULT_MAX_TURNS
        if self.turns >= max_turns:
            return _budget("turns", f"{max_turns} model turns used")
        if self.limits.max_tokens is not None and self.tokens >= self.limits.max_tokens:
            return _budget("tokens", f"{self.tokens} tokens used of {self.limits.max_tokens}")
        return self.past_deadline(now)

    def before_attempt(self, now: float, executions: int) -> Stop | None:
        if self.limits.max_executions is not None and executions >= self.limits.max_executions:
            return _budget("executions", f"{self.limits.max_executions} tool executions used")
        return self.past_deadline(now)

    def past_deadline(self, now: float) -> Stop | None:
        deadline = self.deadline
        if deadline is not None and now >= deadline:
            return _budget("deadline", f"the {self.limits.max_seconds:g}s deadline has passed")
        return None

    def allows_wait(self, now: float, seconds: float) -> bool:
        deadline = self.deadline
        return deadline is None or now + seconds < deadline


def _budget(what: str, reason: str) -> Stop:
    return Stop("STOPPED_LOOP_GUARD", f"budget.{what}", reason, f"a larger {what} budget",
                "resume from the last checkpoint with a larger budget")


def _describe(name: str, args: Any) -> str:
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in sorted(dict(args).items())) + ")"


@dataclass
class SdkRetries:
    model: Any
    tools: Any
    transport: Transport = field(init=False)
    budget: Budget = field(init=False)
    decisions: Decisions = field(default_factory=Decisions)
    ledger: Ledger = field(init=False)
    specs: dict[str, dict[str, Any]] = field(init=False)  # what the runtime can see of each tool
    completed: list[str] = field(default_factory=list)
    open_errors: dict[str, tuple[int | None, str, bool]] = field(default_factory=dict)  # tool -> the error standing

    def __post_init__(self) -> None:
        self.transport = Transport(self.tools)
        self.budget = Budget(self.tools.budgets, self.tools.now())
        self.ledger = Ledger.of(self.tools.store)
        self.specs = {s["name"]: s for s in self.tools.specs}
        self.completed = self.ledger.applied_calls()  # what an earlier run already did

    def run(self, task: str) -> AgentResult:
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        while True:  # ends: every turn is budgeted
            over = self.budget.before_turn(self.tools.now())
            if over is not None:
                return self.stopped(over)
            turn = self.model.complete(messages, self.tools.specs)
            self.budget.turns += 1
            self.budget.tokens += turn.usage.input_tokens + turn.usage.output_tokens
            messages.append(turn.as_message())
            if turn.final:
                return self.finished(turn.text)
            for call in turn.tool_calls:
                answer = self.handle(call)
                if isinstance(answer, Stop):
                    return self.stopped(answer)
                messages.append(tool_message(call, answer))

    # -- one request of the model -----------------------------------------------------------

    def handle(self, call: ToolCall) -> Any:
        spec = self.specs.get(call.name)
        if spec is None:  # a tool the toolbox does not have: the model is told, as an API would
            return {"error": {"code": "unknown_tool", "message": f"no tool {call.name!r}"}}
        args = dict(call.arguments)
        fp = fingerprint(spec, call.name, args)
        refused = self.decisions.check(call.name, fp)
        if refused is not None:
            return self.refuse(call, refused)
        if spec.get("x-side-effect"):
            return self.side_effect(call, spec, args, fp)
        response = self.send(call, spec, args, fp, call.id)
        return response if isinstance(response, Stop) else self.after(call, fp, response)

    def refuse(self, call: ToolCall, verdict: Verdict) -> Stop:
        self.tools.refuse(call.name, call.arguments, guard=verdict.guard, reason=verdict.reason, call_id=call.id)
        return Stop(verdict.state, verdict.guard, verdict.reason, verdict.unmet, verdict.resume)

    def send(self, call: ToolCall, spec: dict[str, Any], args: dict[str, Any], fp: str,
             call_id: str | None) -> Response | Stop:
        """Hold the request until the server's wait has passed, then hand it to the transport.

        ``call_id``: the model's call id (every transport retry goes under it), None for a
        request the runtime makes itself (a lookup).
        """
        due = self.decisions.due(call.name, fp) - self.tools.now()
        over: Stop | None = None
        if due > 0 and not self.budget.allows_wait(self.tools.now(), due):
            over = _budget("deadline", f"the server asks to wait {due:g}s, past the deadline")
        elif due > 0:
            time.sleep(due)  # virtual under the harness
        over = over or self.budget.before_attempt(self.tools.now(), self.transport.executions)
        if over is not None:
            self.tools.refuse(call.name, call.arguments, guard=over.guard, reason=over.reason, call_id=call_id)
            return over
        return self.transport.send(call.name, args, call_id, replay_safe=replay_safe(spec), may_retry=self._may_retry)

    def _may_retry(self, wait: float) -> bool:
        """The budgets' veto on a transport retry: not past the deadline, not past the executions."""
        now = self.tools.now()
        return (self.budget.allows_wait(now, wait)
                and self.budget.before_attempt(now + wait, self.transport.executions) is None)

    def after(self, call: ToolCall, fp: str, response: Response) -> Any:
        """Record what the model will see; stop where nothing the model does can help."""
        if response.ok:
            self.decisions.answered(fp, response.result)
            interval = poll_interval(response.result)
            if interval is not None:
                self.decisions.not_before[fp] = self.tools.now() + interval  # the job's poll interval
            else:
                self.completed.append(_describe(call.name, call.arguments))
            self.open_errors.pop(call.name, None)
            self.checkpoint()
            return response.result
        if response.wait:
            self.decisions.not_before[call.name] = self.tools.now() + response.wait  # never before Retry-After
        self.decisions.failed(fp, response.status, response.code, response.retryable)
        self.open_errors[call.name] = (response.status, response.code or "error", response.retryable)
        return response.result

    # -- side effects -------------------------------------------------------------------------

    def side_effect(self, call: ToolCall, spec: dict[str, Any], args: dict[str, Any], fp: str) -> Any:
        key = idempotency_key(spec, args, fp)
        if spec.get("x-idempotency-key"):
            args = {**args, spec["x-idempotency-key"]: key}  # the key travels with every attempt and lookup
        entry = self.ledger.get(key)
        if entry is not None and entry["state"] == SENT:  # its answer was lost, maybe before a restart
            settled = self.settle(call, spec, args, key)
            if settled is not None:
                return settled
            entry = self.ledger.get(key)
        if entry is not None and entry["state"] == APPLIED:
            self.tools.refuse(call.name, call.arguments, guard="idempotency_key",
                              reason=f"already applied under idempotency key {key}; the recorded result is returned",
                              call_id=call.id)
            self.decisions.answered(fp, entry["result"])
            return entry["result"]
        return self.write(call, spec, args, fp, key)

    def write(self, call: ToolCall, spec: dict[str, Any], args: dict[str, Any], fp: str, key: str,
              resends: int = 0) -> Any:
        """Send a write; after a lost answer, look it up, and resend (as often as the transport would
        retry) only when the lookup says it is not there."""
        self.ledger.sent(key, _describe(call.name, call.arguments))
        response = self.send(call, spec, args, fp, call.id)
        if isinstance(response, Stop):
            self.ledger.forget(key)  # nothing went out
            return response
        if response.ok:
            self.ledger.applied(key, response.result)
        elif response.outcome_unknown:
            settled = self.settle(call, spec, args, key)
            if settled is not None:
                return settled
            if resends < self.transport.max_retries:  # looked up and not there: nothing applied
                return self.write(call, spec, args, fp, key, resends + 1)
            # still unknown: the model hears of the lost answer; the ledger keeps it to look up first
        else:
            self.ledger.forget(key)  # the API answered: nothing was applied
        return self.after(call, fp, response)

    def settle(self, call: ToolCall, spec: dict[str, Any], args: dict[str, Any], key: str) -> Any:
        """Look up a write whose answer was lost: the record found (now applied), a Stop, or None (not there)."""
        lookup = find_lookup(self.specs, spec, args)
        if lookup is None:
            return Stop("NEEDS_HUMAN", "side_effect.outcome_unknown",
                        f"{call.name} got no answer and may have been applied; no read can check it and its API "
                        f"does not declare that it honours the idempotency key", f"someone confirms whether "
                        f"{_describe(call.name, call.arguments)} was applied", "the operation's state is known")
        read = self.send(ToolCall(f"{call.id}:lookup", lookup.tool, lookup.args), self.specs[lookup.tool],
                         lookup.args, fingerprint(self.specs[lookup.tool], lookup.tool, lookup.args), None)
        if isinstance(read, Stop):
            return read
        if read.ok and holds(read.result, lookup.expect):
            self.ledger.applied(key, read.result)
            self.completed.append(_describe(call.name, call.arguments))
            self.checkpoint()
            return read.result
        if read.ok or read.status == 404:
            return None  # the record is not there: nothing was applied, a resend under the same key is safe
        return Stop("NEEDS_HUMAN", "side_effect.outcome_unknown", f"{call.name} got no answer and the lookup "
                    f"through {lookup.tool} failed ({read.code})", f"someone confirms whether "
                    f"{_describe(call.name, call.arguments)} was applied", "the operation's state is known")

    # -- ending -----------------------------------------------------------------------------

    def checkpoint(self) -> None:
        self.tools.store[CHECKPOINT] = {"turn": self.budget.turns, "completed": list(self.completed)}

    def finished(self, answer: str | None) -> AgentResult:
        """The model answered: COMPLETED, unless an error it never got past stands."""
        for tool, (status, code, retryable) in self.open_errors.items():
            if retryable:
                return self.stopped(Stop("STOPPED_LOOP_GUARD", "retries_spent", f"{tool} kept failing ({code})",
                                         f"{tool} answers", f"{tool} recovers"), answer)
            return self.stopped(Stop(final_error_state(status), f"final_error.{code}", f"{tool} was answered {code}",
                                     f"{tool} answers other than {code}", "a person fixes the cause"), answer)
        return AgentResult("COMPLETED", answer=answer)

    def stopped(self, stop: Stop, answer: str | None = None) -> AgentResult:
        checkpoint = self.tools.store.get(CHECKPOINT) or {"turn": self.budget.turns, "completed": list(self.completed)}
        return AgentResult(stop.state, answer=answer, report={
            "state": stop.state, "guard": stop.guard, "reason": stop.reason, "completed": list(self.completed),
            "unmet_precondition": stop.unmet, "last_checkpoint": dict(checkpoint), "resume_condition": stop.resume,
            "next_allowed_action": "resume from the last checkpoint once the condition holds"})
