"""The guarded agent: a reference runtime that does what docs/domain.md asks of one.

It is the baseline every built-in scenario must pass, and an example to read. Each
guard can be switched off (``GuardConfig``) so the certification suite can prove that
it catches the absence of each one (ablations; see docs/certification-matrix.md).

What it does, in the order a call meets it:

1. **Budgets** (steps, executions, virtual seconds, tokens): checked before each turn
   and each execution; the prompt is counted before it is sent, so a turn that would
   overrun the token budget is not made. The run stops with STOPPED_LOOP_GUARD naming
   the budget.
2. **Fingerprint** (``loop_key``): tool name + arguments with key order, whitespace,
   case, word order and volatile ids removed, so jitter collides. A paraphrase (the same
   question in other words) is a different call; it is caught by what it returns (3.).
3. **Progress**: a successful result is *new* when its content was not seen before in
   the run (an empty result never is). Repetition that keeps bringing new results is
   legitimate (a feed, a queue, two feeds read in turn); repetition that brings nothing
   new is a loop, whatever the wording of the calls: a few answers in a row with nothing
   new stop the run.
4. **Admission** before execution: a call already refused or answered FATAL /
   PRECONDITION is not resent unchanged; a call asked for again after it brought
   nothing new is an exact repeat; a call whose retries are spent is refused; a second
   round of an A-B-A-B or A-B-C-A-B-C cycle of different calls is refused once the
   calls it already repeated brought nothing new; a side
   effect whose operation key was already applied is not executed again: the runtime
   answers from its ledger (the recorded result), and one whose outcome is unknown (a
   lost response) stops the run for a human.
5. **Execution by class**: RETRYABLE retries with jittered exponential backoff on the
   virtual clock, never sooner than Retry-After (in whichever form the server wrote it:
   seconds, an HTTP-date, ``retry-after-ms``, a rate-limit reset header); a side effect
   that timed out is first looked up (a read of the collection it writes, when the tools
   have one): found, it is done; not found, it is retried with the same key; with no
   lookup it is retried only when the API honours its idempotency key, else the run
   stops for a human; PRECONDITION hands the field back;
   FATAL stops (NEEDS_HUMAN, or FAILED for not_found); PENDING polls under a deadline,
   at the server's interval, else backing off from 5s to a minute; SUCCESS must bring
   a new fact, or the no-progress counter moves.
6. **Stop**: a terminal state and a stop report (guard, reason, completed operations,
   unmet precondition, last checkpoint, resume condition). After a stop the planner
   ends: the model is not asked again.
7. **Resume**: the ledger of applied operations and the checkpoint live in
   ``tools.store``, which survives a restart; a resumed run re-asks the model, and
   operations already applied are answered from the ledger instead of being redone.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolchaos._internal.model import TokenMeter, is_empty, tool_message
from toolchaos._internal.types import AgentResult
from toolchaos.fake_tools import ToolError, canonical, digest
from toolchaos.fake_tools.internals import deferred
from toolchaos.fake_tools.retry import wait

_RETRYABLE_CODES = {"timeout", "unavailable", "rate_limited", "connection_reset", "internal_error"}
_PRECONDITION_CODES = {"invalid_argument", "missing_argument", "wrong_type", "unknown_argument", "unknown_tool"}
_OUTPUT_RESERVE = 64  # tokens kept free for the model's answer when a prompt is counted


@dataclass(frozen=True)
class GuardConfig:
    """Switches (for ablations) and limits of the guarded runtime."""

    normalise_args: bool = True
    detect_cycles: bool = True
    check_progress: bool = True  # off: no result counts as new (repeats are counted blindly), no no-progress stop
    idempotency: bool = True
    honour_retry_after: bool = True
    classify_errors: bool = True
    budgets: bool = True
    stop_report: bool = True
    eager: bool = False  # the over-eager guard: stops on any second identical call, retries and polls included
    max_attempts: int = 3
    max_repeats: int = 2
    max_refusals: int = 2
    no_progress_limit: int = 3
    max_steps: int = 25
    max_executions: int = 30
    max_seconds: float = 3600.0
    max_tokens: int = 500_000
    poll_deadline: float = 900.0
    base_backoff: float = 1.0
    max_backoff: float = 60.0


class _Stop(Exception):
    def __init__(self, state: str, guard: str, reason: str, unmet: str | None = None) -> None:
        super().__init__(reason)
        self.state, self.guard, self.reason, self.unmet = state, guard, reason, unmet


@dataclass
class _CallState:
    asks: int = 0  # times the model asked for this call (executed or answered from the ledger)
    executions: int = 0
    failures: int = 0
    stale: int = 0  # answers in a row to this call that brought nothing new
    last_class: str | None = None
    blocked: tuple[str, str] | None = None  # (guard, reason) for refusing an unchanged resend
    first_pending: float | None = None


@dataclass
class _Guard:
    cfg: GuardConfig
    tools: Any
    ops: dict[str, str]
    results: dict[str, Any]
    calls: dict[str, _CallState] = field(default_factory=dict)
    history: list[str] = field(default_factory=list)  # loop keys of the answers, in order
    facts: set[str] = field(default_factory=set)
    stale: int = 0
    executions: int = 0
    tokens: int = 0
    prompt_meter: TokenMeter = field(default_factory=TokenMeter)
    refusals: int = 0
    completed: list[str] = field(default_factory=list)
    keys: dict[tuple[str, str], str] = field(default_factory=dict)  # loop keys by the arguments' repr
    # the jitter's generator; most runs never back off, so it is seeded on the first backoff
    rng: random.Random = field(default_factory=lambda: deferred(""), repr=False)
    # The run's limits, read once: checked before every turn and every execution, fixed for a run.
    max_steps: Any = field(default=None, init=False, repr=False)
    max_executions: Any = field(default=None, init=False, repr=False)
    max_seconds: Any = field(default=None, init=False, repr=False)
    max_tokens: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.max_steps, self.max_executions = self.limit("max_steps"), self.limit("max_executions")
        self.max_seconds, self.max_tokens = self.limit("max_seconds"), self.limit("max_tokens")

    # -- fingerprints -------------------------------------------------------------------

    def loop_key(self, name: str, args: Mapping[str, Any]) -> str:
        if not self.cfg.normalise_args:
            return name + json.dumps(args, default=str)  # exact text: key order and ids matter
        # A looping model sends the same arguments again and again: their key is worked out once a run.
        shown = (name, repr(args))
        key = self.keys.get(shown)
        if key is None:
            key = self.keys[shown] = self._loop_key(name, args)
        return key

    def _loop_key(self, name: str, args: Mapping[str, Any]) -> str:
        spec = self.tools.spec(name)
        vol = set(spec.volatile)
        norm = {k: _loose(v) for k, v in {**spec._defaults, **args}.items() if k not in vol}
        return name + canonical(norm)

    def op_key(self, name: str, args: Mapping[str, Any], key: str) -> str | None:
        spec = self.tools.spec(name)
        if not spec.side_effect:
            return None
        given = args.get(spec.idempotency_key) if spec.idempotency_key else None
        return f"{name}:{given}" if given is not None else f"{name}:op_{digest(key)}"

    # -- budgets ---------------------------------------------------------------------------

    def limit(self, name: str) -> Any:
        return self.tools.budgets.get(name, getattr(self.cfg, name))

    def check_budgets(self, step: int | None = None) -> None:
        if not self.cfg.budgets:
            return
        if step is not None and step >= self.max_steps:
            raise _Stop("STOPPED_LOOP_GUARD", "budget.steps", f"step budget of {self.max_steps} spent")
        if self.executions >= self.max_executions:
            raise _Stop("STOPPED_LOOP_GUARD", "budget.executions", f"execution budget of {self.max_executions} spent")
        if self.tools.now() >= self.max_seconds:
            raise _Stop("STOPPED_LOOP_GUARD", "budget.seconds", f"deadline of {self.max_seconds:g}s passed")
        if self.tokens >= self.max_tokens:
            raise _Stop("STOPPED_LOOP_GUARD", "budget.tokens", f"token budget of {self.max_tokens} spent")

    def check_prompt(self, messages: Sequence[Any], model: Any) -> None:
        """Count the prompt before sending it: a turn that would overrun the token budget is not made.

        Counted by the model's API when it has one (as Anthropic's ``count_tokens``), else by
        the agent's own meter: the same figure either way.
        """
        if not self.cfg.budgets:
            return
        count = getattr(model, "count_tokens", None)
        prompt = count(messages) if count is not None else self.prompt_meter.estimate(messages)
        projected = self.tokens + prompt + _OUTPUT_RESERVE
        if projected > self.max_tokens:
            raise _Stop("STOPPED_LOOP_GUARD", "budget.tokens",
                        f"the next turn would need ~{projected} tokens; the budget is {self.max_tokens}")

    # -- admission: refuse before execution -------------------------------------------

    def admit(self, name: str, args: Mapping[str, Any], key: str) -> tuple[str, str] | None:
        """None to execute, or (guard, reason) to refuse. May raise _Stop."""
        st = self.calls.get(key)
        cfg = self.cfg
        if st is not None:
            if cfg.eager:
                raise _Stop("STOPPED_LOOP_GUARD", "exact_repeat", f"{name} asked again with the same arguments")
            if st.blocked:
                return st.blocked
            if st.last_class == "PENDING":
                if self.tools.now() - (st.first_pending or 0.0) > cfg.poll_deadline:
                    raise _Stop("STOPPED_LOOP_GUARD", "pending_deadline",
                                f"{name} still pending after the {cfg.poll_deadline:g}s polling deadline")
                return None
            if st.last_class == "RETRYABLE" and st.failures >= cfg.max_attempts:
                return "retry_budget", f"{name} failed {st.failures} times; its retry budget is spent"
            if st.asks >= cfg.max_repeats and st.stale:
                return "exact_repeat", (f"{name} was already answered {st.asks} times with these arguments and "
                                        f"the last answer brought nothing new")
        if cfg.detect_cycles and self.closes_cycle(key) and (st is None or st.last_class != "PENDING"):
            return "cycle", f"{name} would repeat a cycle of calls"
        return None

    def closes_cycle(self, key: str) -> bool:
        """Would ``key`` complete a second identical round of 2 or 3 different calls that brings nothing new?

        The calls of the round already repeated must have brought nothing new: two feeds read
        in turn repeat a round on every read, and each read is progress, not a loop.
        """
        keys = [*self.history, key]
        for period in (2, 3):
            if len(keys) >= 2 * period:
                tail = keys[-2 * period:]
                if (tail[:period] == tail[period:] and len(set(tail[:period])) > 1
                        and all(self.calls[k].stale for k in tail[period:-1])):
                    return True
        return False

    def replay(self, name: str, args: Mapping[str, Any], key: str) -> tuple[bool, Any]:
        """(True, recorded result) when this side effect's operation was already applied. May raise _Stop."""
        op = self.op_key(name, args, key)
        if op is None or not self.cfg.idempotency:
            return False, None
        state = self.ops.get(op)
        if state == "applied":
            return True, self.results.get(op, {"status": "already_applied", "operation": op})
        if state == "unknown":
            raise _Stop("NEEDS_HUMAN", "idempotency", f"outcome of {op} is unknown (response lost)",
                        unmet=f"confirm whether {op} was applied before retrying")
        return False, None

    # -- execution by result class ------------------------------------------------------

    def execute(self, call: Any, args: dict[str, Any], key: str) -> Any:
        cfg, tools = self.cfg, self.tools
        st = self.calls.setdefault(key, _CallState())
        st.asks += 1
        op = self.op_key(call.name, args, key)
        spec = tools.spec(call.name)
        if op is not None and cfg.idempotency and spec.idempotency_key and args.get(spec.idempotency_key) is None:
            args = {**args, spec.idempotency_key: op.split(":", 1)[1]}  # a stable key travels with the write
        while True:
            self.check_budgets()
            try:
                result: Any = tools.call(call.name, args, call_id=call.id)
            except ToolError as exc:
                result = exc
            except (TimeoutError, ConnectionError) as exc:
                result = exc
            self.executions += 1
            cls, code, retry_after = self.classify(result)
            st.executions += 1
            st.last_class = cls
            content = _content(result)
            if cls == "SUCCESS":
                st.failures = 0
                self.answered(key, st, self.record_success(call.name, op, result, content))
                return content
            if cls == "PENDING":
                return self.wait_pending(key, st, retry_after, content)
            self.answered(key, st, False)
            if cls == "PRECONDITION" or cls == "FATAL":
                return self.not_retried(call.name, st, cls, code, content)
            # RETRYABLE
            st.failures += 1
            if op is not None and cfg.idempotency and code == "timeout":
                applied, record = self.settle_lost_response(call.name, op, spec, args)
                if applied:
                    return record
            if st.failures >= cfg.max_attempts:
                return {"error": {"code": code, "retryable": False,
                                  "message": f"{call.name} failed {st.failures} times ({code}); giving up on it"}}
            if cfg.eager:
                raise _Stop("STOPPED_LOOP_GUARD", "exact_repeat", f"{call.name} would be sent again unchanged")
            time.sleep(self.backoff(st.failures, retry_after))

    # execute's rarer outcomes, apart so the loop reads as the result classes it tells apart

    def wait_pending(self, key: str, st: _CallState, retry_after: float | None, content: Any) -> Any:
        """A job still running: note when its polling began and wait the poll interval before answering."""
        self.history.append(key)
        if st.first_pending is None:
            st.first_pending = self.tools.now()
        time.sleep(self.poll_interval(st.executions, retry_after))  # on the virtual clock
        return content

    def not_retried(self, name: str, st: _CallState, cls: str, code: str, content: Any) -> Any:
        """An error no retry mends: a rejected call (answered; sent again only changed), or a fatal one (stop)."""
        if cls == "PRECONDITION":
            st.blocked = ("unchanged_resend", f"{name} was rejected ({code}); resend it only with corrected arguments")
            return content
        state = "FAILED" if code == "not_found" else "NEEDS_HUMAN"
        raise _Stop(state, "fatal_error", f"{name} answered {code}; not retrying around it", unmet=f"{name}: {code}")

    def settle_lost_response(self, name: str, op: str, spec: Any, args: Mapping[str, Any]) -> tuple[bool, Any]:
        """After a write timed out: (True, its record) when a read shows it applied, else (False, None) to
        retry it. May raise _Stop: retrying a write that may have applied, with no key the API honours,
        could apply it twice."""
        found = self.look_up(name, args)
        if found is not None and found[0]:  # it did apply: the record is what the lost response carried
            self.record_success(name, op, found[1], found[1])
            return True, found[1]
        if found is None and not _key_honoured(spec, args):
            self.ops[op] = "unknown"
            raise _Stop("NEEDS_HUMAN", "idempotency", f"{name} timed out; whether {op} applied is unknown",
                        unmet=f"confirm whether {op} was applied before retrying")
        # not applied (the lookup says so), or the API answers the same key with its own record
        return False, None

    def look_up(self, name: str, args: Mapping[str, Any]) -> tuple[bool, Any] | None:
        """After a lost response: (True, the record) when a read finds the write, (False, None) when
        it finds none, None when no read of its collection is at hand or the read gave no answer."""
        tools = self.tools
        spec = tools.spec(name)
        if spec.writes is None:
            return None
        norm = spec.normalise(args)
        for other in tools.names:
            reads = tools.spec(other).reads
            if reads is None or reads.collection != spec.writes.collection or norm.get(reads.match) is None:
                continue
            self.check_budgets()
            try:
                result: Any = tools.call(other, {reads.by: norm[reads.match]})
            except (ToolError, TimeoutError, ConnectionError) as exc:
                result = exc
            self.executions += 1
            cls, code, _ = self.classify(result)
            if cls == "FATAL" and code == "not_found":
                return False, None
            if cls != "SUCCESS" or not isinstance(result, Mapping):
                return None
            hits = result.get(reads.collection, []) if reads.many else [result]
            mine = [h for h in hits if isinstance(h, Mapping) and all(h.get(k) == v for k, v in norm.items())]
            return (True, mine[-1]) if mine else (False, None)
        return None

    def poll_interval(self, polls: int, retry_after: float | None) -> float:
        """The server's interval when it gives one, else 5s doubling per poll up to ``max_backoff``."""
        if retry_after:
            return retry_after
        return min(self.cfg.max_backoff, 5.0 * 2.0 ** (polls - 1))

    def answered(self, key: str, st: _CallState, new: bool) -> None:
        new = new and self.cfg.check_progress  # without a progress check, nothing can be told apart as new
        st.stale = 0 if new else st.stale + 1
        self.history.append(key)

    def classify(self, result: Any) -> tuple[str, str, float | None]:
        cls, code, retry_after = _classify(result, self.tools.now())
        if not self.cfg.classify_errors and cls in ("PRECONDITION", "FATAL"):
            cls = "RETRYABLE"  # the ablation: one retry branch for every error
        return cls, code, retry_after

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        cfg = self.cfg
        delay: float = min(cfg.max_backoff, cfg.base_backoff * 2.0 ** (attempt - 1)) * (0.5 + self.rng.random() / 2)
        if cfg.honour_retry_after and retry_after:
            delay = max(delay, retry_after)
        return delay

    def record_success(self, name: str, op: str | None, result: Any, content: Any) -> bool:
        """Record a successful answer; True when it brought something new."""
        if op is not None:
            self.ops[op] = "applied"
            self.results[op] = content
            self.completed.append(op)
        if is_empty(result):
            new = False
        else:
            # the canonical text itself: a set of a run's few results needs no hash of its own
            fact = canonical(result) if not isinstance(result, str) else result
            new = fact not in self.facts
            self.facts.add(fact)
        if new:
            self.stale = 0
        else:
            self.stale += 1
            if self.cfg.check_progress and self.stale >= self.cfg.no_progress_limit:
                raise _Stop("STOPPED_LOOP_GUARD", "no_progress",
                            f"{self.stale} results in a row brought nothing new")
        return new


def _loose(value: Any) -> Any:
    if isinstance(value, str):  # the words it holds, in any order, case and spacing
        return " ".join(sorted(set(value.casefold().split())))
    if isinstance(value, Mapping):
        return {str(k): _loose(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_loose(v) for v in value]
    return value


def _key_honoured(spec: Any, args: Mapping[str, Any]) -> bool:
    """Does the API answer a retry with this call's idempotency key from its own record?"""
    return bool(spec.idempotency_key) and args.get(spec.idempotency_key) is not None and spec.idempotency == "honoured"


def _classify(result: Any, now: float) -> tuple[str, str, float | None]:
    if isinstance(result, ToolError):
        return result.cls.value, result.code, result.retry_after
    if isinstance(result, (TimeoutError, ConnectionError)):
        return "RETRYABLE", "timeout" if isinstance(result, TimeoutError) else "connection_reset", None
    if type(result) is dict or isinstance(result, Mapping):  # an exact dict needs no abstract-class check
        err = result.get("error")
        if type(err) is dict or isinstance(err, Mapping):
            code = str(err.get("code", "error"))
            cls = err.get("class")
            if cls not in ("RETRYABLE", "PRECONDITION", "FATAL", "PENDING"):
                cls = ("RETRYABLE" if code in _RETRYABLE_CODES else
                       "PRECONDITION" if code in _PRECONDITION_CODES else "FATAL")
            ra = err.get("retry_after")
            if not isinstance(ra, (int, float)) and isinstance(err.get("headers"), Mapping):
                ra = wait(err["headers"], now)  # an HTTP-date, retry-after-ms, a rate-limit reset time
            return str(cls), code, float(ra) if isinstance(ra, (int, float)) else None
        status = result.get("status")
        if isinstance(status, str) and status.lower() in ("processing", "pending", "running", "queued"):
            ra = result.get("retry_after")  # the server's polling interval, when it gives one
            return "PENDING", "processing", float(ra) if isinstance(ra, (int, float)) else None
    return "SUCCESS", "ok", None


def _content(result: Any) -> Any:
    if isinstance(result, ToolError):
        return result.outcome.error_payload()
    if isinstance(result, BaseException):
        return {"error": {"code": "timeout" if isinstance(result, TimeoutError) else "connection_reset",
                          "retryable": True, "message": str(result)}}
    return result


class GuardedAgent:
    """``builtin:guarded``: call it as ``agent(task, model, tools)``."""

    def __init__(self, config: GuardConfig | None = None, **overrides: Any) -> None:
        self.config = replace(config or GuardConfig(), **overrides)

    def __repr__(self) -> str:
        changed = {k: v for k, v in vars(self.config).items() if getattr(GuardConfig(), k) != v}
        return f"GuardedAgent({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def __call__(self, task: str, model: Any, tools: Any) -> AgentResult:
        ops = tools.store.setdefault("guarded.ops", {})
        results = tools.store.setdefault("guarded.results", {})
        guard = _Guard(self.config, tools, ops, results, rng=deferred(f"{tools.seed}:guarded"))
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        refused_last: tuple[str, str] | None = None
        step = 0
        try:
            while True:
                guard.check_budgets(step)
                guard.check_prompt(messages, model)
                turn = model.complete(messages, tools.specs)
                step += 1
                guard.tokens += turn.usage.total
                messages.append(turn.as_message())
                if turn.final:
                    if refused_last is not None:  # the model gave up because a guard refused: not a completion
                        raise _Stop("STOPPED_LOOP_GUARD", refused_last[0], refused_last[1])
                    return self._end(guard, "COMPLETED", None, "the model answered", None, turn.text, step)
                refused_last = None
                for call in turn.tool_calls:
                    content = self._one(guard, call)
                    if (type(content) is dict or isinstance(content, Mapping)) and content.get("refused"):
                        refused_last = (str(content["guard"]), str(content["reason"]))
                    messages.append(tool_message(call, content))
                tools.store["guarded.checkpoint"] = {"step": step, "completed": list(guard.completed)}
        except _Stop as stop:
            return self._end(guard, stop.state, stop.guard, stop.reason, stop.unmet, None, step)

    def _one(self, guard: _Guard, call: Any) -> Any:
        tools = guard.tools
        args = dict(call.arguments)
        if call.name not in tools.names:
            return {"error": {"code": "unknown_tool", "class": "PRECONDITION", "retryable": False,
                              "message": f"there is no tool {call.name!r}; tools: {', '.join(tools.names)}"}}
        key = guard.loop_key(call.name, args)
        verdict = guard.admit(call.name, args, key)
        if verdict is None:
            done, recorded = guard.replay(call.name, args, key)
            if not done:
                return guard.execute(call, args, key)
            # Not executed: the operation already happened; the model gets the recorded result.
            tools.refuse(call.name, args, guard="idempotency", call_id=call.id,
                         reason="operation already applied; answered from the ledger, not executed again")
            st = guard.calls.setdefault(key, _CallState())
            st.asks += 1
            guard.answered(key, st, False)
            return recorded
        guard.refusals += 1
        reason = verdict[1]
        tools.refuse(call.name, args, guard=verdict[0], reason=reason, call_id=call.id)
        st = guard.calls.setdefault(key, _CallState())
        st.blocked = st.blocked or verdict
        if guard.refusals > self.config.max_refusals:
            raise _Stop("STOPPED_LOOP_GUARD", verdict[0], f"{reason}; the model kept asking after "
                                                          f"{guard.refusals} refusals")
        return {"refused": True, "guard": verdict[0], "reason": reason}

    def _end(self, guard: _Guard, state: str, name: str | None, reason: str, unmet: str | None,
             answer: str | None, step: int) -> AgentResult:
        if not self.config.stop_report:
            return AgentResult(state, answer, None)
        checkpoint = guard.tools.store.get("guarded.checkpoint")
        report = {
            "state": state, "guard": name, "reason": reason, "completed": list(guard.completed),
            "unmet_precondition": unmet, "last_checkpoint": checkpoint,
            "resume_condition": None if state == "COMPLETED" else (
                f"resolve: {unmet}" if unmet else "change the task or the tool's state, then resume from the checkpoint"),
        }
        return AgentResult(state, answer, report)


guarded = GuardedAgent()
