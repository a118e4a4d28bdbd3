"""A port of the framework-independent LoopGuard design: budgets, progress windows, error classes, a ledger.

Design: a guard the runtime asks before and after each tool execution, with these thresholds:

- step budget 20 (a step is one tool call the model asked for, refused or not) and wall-clock
  budget 60 s (virtual, from ``tools.now()``); a tighter ``tools.budgets`` (``max_steps``,
  ``max_executions``, ``max_seconds``) wins;
- fingerprint = tool name + arguments normalised where a difference means nothing (key order,
  whitespace, schema defaults, request ids, the idempotency-key argument);
- same-fingerprint limit 2 within the current progress window; an A-B-A short cycle in the window
  stops; no-progress limit 3 (a fourth execution without progress is refused). Progress is a
  monotonic version bumped by external state only: a result (or a pending job's status) whose
  content was not seen before, e.g. a new page behind an advanced cursor or a job whose state
  changed. A progress step opens a new window, so polling that moves and pagination survive;
- result classes read from the error payload (or the raised exception's type): FATAL
  permission_denied / policy_blocked / needs_human -> NEEDS_HUMAN, other FATAL -> FAILED;
  RETRYABLE -> may be retried once the server's wait (Retry-After, a pending job's poll interval)
  has passed: the guard sleeps it off (virtual time) unless that would overrun the wall clock;
  PRECONDITION -> only with changed input (an unchanged resend is refused and the run stops);
- an operation-key ledger in ``tools.store`` (it survives a restart): a side effect that already
  succeeded under the same operation key is not executed again, the cached success goes back to
  the model; the key is also sent as the tool's idempotency-key argument when the tool has one.

Every stop refuses the call it stopped through ``tools.refuse`` (nothing runs after it) and
returns a StopReport with the design's keys: terminal_state, guard_reason, completed,
last_safe_checkpoint, unmet_precondition, resume_condition, next_allowed_action.

What it does not do: watch tokens or money; back off on a RETRYABLE error without a server wait
(the model's next turn is the retry); check a timed-out side effect's status before retrying it
(without an idempotency-key argument a lost response can mean a second effect); tell a
contradictory tool or a paraphrasing model from progress (new content is progress).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolchaos._agents._host import args_text
from toolchaos._internal.model import ToolCall, tool_message
from toolchaos._internal.types import AgentResult
from toolchaos.fake_tools import FakeTool

STEP_BUDGET = 20
WALL_CLOCK_BUDGET = 60.0
SAME_CALL_LIMIT = 2
NO_PROGRESS_LIMIT = 3
HUMAN_CODES = frozenset({"permission_denied", "policy_blocked", "needs_human"})
LEDGER = "loopguard.operations"  # the store key of the operation-key ledger
_VOLATILE = frozenset({"request_id", "requestId", "nonce", "trace_id", "traceparent"})
_PENDING_STATES = frozenset({"pending", "processing", "queued", "running", "in_progress"})


@dataclass(frozen=True)
class Outcome:
    """A tool result's class, as the guard reads it."""

    cls: str  # SUCCESS, PENDING, RETRYABLE, PRECONDITION or FATAL
    code: str | None = None
    retry_after: float | None = None
    field: str | None = None


@dataclass(frozen=True)
class Stop:
    """The guard's decision to end the run, and what the StopReport says about it."""

    state: str
    guard: str
    reason: str
    resume: str
    next_action: str
    unmet: str | None = None


@dataclass
class LoopGuard:
    """The guard itself: framework independent, fed fingerprints and outcomes."""

    now: Callable[[], float]  # virtual seconds (tools.now)
    step_budget: int = STEP_BUDGET
    seconds_budget: float = WALL_CLOCK_BUDGET
    execution_budget: int | None = None
    started: float = 0.0
    steps: int = 0
    executions: int = 0
    progress_version: int = 0
    no_progress: int = 0
    window: list[str] = field(default_factory=list)  # fingerprints executed since the last progress
    seen: set[str] = field(default_factory=set)  # digests of result content already seen
    not_before: dict[str, float] = field(default_factory=dict)  # tool or fingerprint -> earliest retry
    bad_input: dict[str, str] = field(default_factory=dict)  # fingerprint -> the field a PRECONDITION named
    completed: list[str] = field(default_factory=list)
    checkpoint: dict[str, Any] | None = None

    def before(self, tool: str, fp: str) -> Stop | float:
        """Check a call before it executes: a Stop, or the seconds to wait before running it."""
        self.steps += 1
        elapsed = self.now() - self.started
        stop = self._budget_stop(elapsed) or self._loop_stop(tool, fp)
        if stop:
            return stop
        wait = max(self.not_before.get(tool, 0.0), self.not_before.get(fp, 0.0)) - self.now()
        if wait > 0 and elapsed + wait >= self.seconds_budget:
            return Stop("STOPPED_LOOP_GUARD", "budget.wall_clock",
                        f"the server asks to wait {wait:g}s, past the {self.seconds_budget:g}s budget",
                        "the service recovers", f"retry {tool} in a new run after {wait:g}s")
        self.window.append(fp)
        return max(wait, 0.0)

    def _budget_stop(self, elapsed: float) -> Stop | None:
        if self.steps > self.step_budget:
            return Stop("STOPPED_LOOP_GUARD", "budget.steps", f"{self.step_budget} steps used",
                        "a larger step budget", "resume from the last safe checkpoint")
        if self.execution_budget is not None and self.executions >= self.execution_budget:
            return Stop("STOPPED_LOOP_GUARD", "budget.executions", f"{self.execution_budget} executions used",
                        "a larger execution budget", "resume from the last safe checkpoint")
        if elapsed >= self.seconds_budget:
            return Stop("STOPPED_LOOP_GUARD", "budget.wall_clock", f"{elapsed:g}s of {self.seconds_budget:g}s used",
                        "a larger wall-clock budget", "resume from the last safe checkpoint")
        return None

    def _loop_stop(self, tool: str, fp: str) -> Stop | None:
        if fp in self.bad_input:
            name = self.bad_input[fp]
            return Stop("STOPPED_LOOP_GUARD", "precondition_unchanged",
                        f"{tool} resent unchanged after it was rejected for {name!r}",
                        f"a corrected {name!r}", f"call {tool} with a changed {name!r}", unmet=name)
        if self.window.count(fp) >= SAME_CALL_LIMIT:
            return Stop("STOPPED_LOOP_GUARD", "same_call_limit",
                        f"{tool} called {SAME_CALL_LIMIT} times with the same arguments without progress",
                        "the tool's answer changes", f"a different call than this {tool}")
        if len(self.window) >= 2 and self.window[-2] == fp != self.window[-1]:
            return Stop("STOPPED_LOOP_GUARD", "short_cycle", f"{tool} again after one other call, no progress between",
                        "one of the two tools answers differently", "a call outside the cycle")
        if self.no_progress >= NO_PROGRESS_LIMIT:
            return Stop("STOPPED_LOOP_GUARD", "no_progress", f"{self.no_progress} executions without progress",
                        "the external state changes", "a call that can make progress")
        return None

    def after(self, tool: str, fp: str, call_text: str, outcome: Outcome, content: Any) -> Stop | None:
        """Record an execution's outcome: progress, waits, rejected inputs; a Stop on FATAL."""
        self.executions += 1
        self._progress(outcome, content)
        if outcome.cls == "SUCCESS":
            self.completed.append(call_text)
            self.checkpoint = {"step": self.steps, "call": call_text, "progress_version": self.progress_version}
        elif outcome.cls == "RETRYABLE" and outcome.retry_after:
            self.not_before[tool] = self.now() + outcome.retry_after
        elif outcome.cls == "PENDING" and outcome.retry_after:
            self.not_before[fp] = self.now() + outcome.retry_after  # the job's poll interval
        elif outcome.cls == "PRECONDITION":
            self.bad_input[fp] = outcome.field or "arguments"
        elif outcome.cls == "FATAL":
            human, code = outcome.code in HUMAN_CODES, outcome.code or "fatal_error"
            return Stop("NEEDS_HUMAN" if human else "FAILED", f"fatal.{code}", f"{tool} failed: {code}",
                        "a human grants access or lifts the block" if human else "the failing resource is fixed",
                        "hand over to a human" if human else "none until the cause is fixed",
                        unmet=f"{tool} must be allowed ({code})" if human else f"{tool} must succeed ({code})")
        return None

    def _progress(self, outcome: Outcome, content: Any) -> None:
        if outcome.cls in ("SUCCESS", "PENDING"):
            digest = hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
            if digest not in self.seen:
                self.seen.add(digest)
                self.progress_version += 1
                self.no_progress = 0
                self.window.clear()  # a progress step opens a new window
                return
        self.no_progress += 1


def fingerprint(spec: FakeTool, args: Any) -> str:
    """Tool name + arguments normalised where a difference means nothing."""
    defaults = {k: p["default"] for k, p in spec.parameters.get("properties", {}).items() if "default" in p}
    ignored = _VOLATILE | {spec.idempotency_key}
    values = {**defaults, **{k: v for k, v in dict(args).items() if k not in ignored}}
    return spec.name + json.dumps(_normalised(values), sort_keys=True, default=str)


def _normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalised(v) for v in value]
    return " ".join(value.split()) if isinstance(value, str) else value


def classify(result: Any) -> Outcome:
    """The class of a returned result (an error payload, a pending status, or data)."""
    if isinstance(result, dict):
        error = result.get("error")
        if isinstance(error, dict):
            cls = error.get("class") or ("RETRYABLE" if error.get("retryable") else "FATAL")
            return Outcome(str(cls), error.get("code"), error.get("retry_after"), error.get("field"))
        if str(result.get("status", "")).lower() in _PENDING_STATES:
            return Outcome("PENDING", retry_after=result.get("retry_after"))
    return Outcome("SUCCESS")


def classify_exception(exc: Exception) -> Outcome:
    """The class of a raised tool error, from its type (and its retry hints when it carries them)."""
    hints = getattr(exc, "outcome", None)
    retry_after, name = getattr(hints, "retry_after", None), getattr(hints, "field", None)
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return Outcome("RETRYABLE", "timeout" if isinstance(exc, TimeoutError) else "connection", retry_after)
    if isinstance(exc, PermissionError):
        return Outcome("FATAL", "permission_denied")
    if isinstance(exc, (ValueError, TypeError)):
        return Outcome("PRECONDITION", "invalid_argument", field=name)
    return Outcome("FATAL", "not_found" if isinstance(exc, LookupError) else type(exc).__name__)


class LoopGuardRuntime:
    """A tool loop with the LoopGuard asked before and after every execution."""

    def __init__(self, model: Any, tools: Any) -> None:
        self.model, self.tools = model, tools
        budgets = tools.budgets
        self.guard = LoopGuard(tools.now, started=tools.now(),
                               step_budget=min(STEP_BUDGET, budgets.max_steps or STEP_BUDGET),
                               seconds_budget=min(WALL_CLOCK_BUDGET, budgets.max_seconds or WALL_CLOCK_BUDGET),
                               execution_budget=budgets.max_executions)
        self.ledger = tools.store.setdefault(LEDGER, {})  # operation key -> the cached success

    def run(self, task: str) -> AgentResult:
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        while True:  # ends: every turn either answers or makes a step, and steps are budgeted
            turn = self.model.complete(messages, self.tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return AgentResult("COMPLETED", answer=turn.text)
            for call in turn.tool_calls:
                stop, content = self.step(call)
                if stop:
                    return self.stopped(stop)
                messages.append(tool_message(call, content))

    def step(self, call: ToolCall) -> tuple[Stop | None, Any]:
        spec = self.tools.spec(call.name)
        fp = fingerprint(spec, call.arguments)
        decision = self.guard.before(call.name, fp)
        if isinstance(decision, Stop):
            self.tools.refuse(call.name, call.arguments, guard=decision.guard, reason=decision.reason,
                              call_id=call.id)
            return decision, None
        if decision:
            time.sleep(decision)  # the server's wait (virtual time under the harness)
        key = self.operation_key(fp) if spec.side_effect else None
        if key is not None and key in self.ledger:
            self.tools.refuse(call.name, call.arguments, guard="operation_ledger",
                              reason="already done under this operation key; the cached result is returned",
                              call_id=call.id)
            return None, self.ledger[key]
        content, outcome = self.execute(call, spec, key)
        if key is not None and outcome.cls == "SUCCESS":
            self.ledger[key] = content
        return self.guard.after(call.name, fp, f"{call.name}({args_text(call.arguments)})", outcome, content), content

    def operation_key(self, fp: str) -> str:
        return "op_" + hashlib.sha256(fp.encode()).hexdigest()[:24]

    def execute(self, call: ToolCall, spec: FakeTool, key: str | None) -> tuple[Any, Outcome]:
        args = dict(call.arguments)
        if key is not None and spec.idempotency_key and not args.get(spec.idempotency_key):
            args[spec.idempotency_key] = key  # the tool deduplicates on it, as payment APIs do
        try:
            result = self.tools.call(call.name, args, call_id=call.id)
        except Exception as exc:  # a raised tool error is classified by its type, then shown as an error payload
            outcome = classify_exception(exc)
            return {"error": {"class": outcome.cls, "code": outcome.code, "message": str(exc),
                              "retry_after": outcome.retry_after, "field": outcome.field}}, outcome
        return result, classify(result)

    def stopped(self, stop: Stop) -> AgentResult:
        return AgentResult(stop.state, report={
            "terminal_state": stop.state, "guard_reason": f"{stop.guard}: {stop.reason}",
            "completed": list(self.guard.completed), "last_safe_checkpoint": self.guard.checkpoint,
            "unmet_precondition": stop.unmet, "resume_condition": stop.resume,
            "next_allowed_action": stop.next_action})


def loopguard(task: str, model: Any, tools: Any) -> AgentResult:
    """The LoopGuard design as a runtime."""
    return LoopGuardRuntime(model, tools).run(task)
