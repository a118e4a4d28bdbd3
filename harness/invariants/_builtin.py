"""Invariants: checks over a finished run.

Each invariant returns the violations it finds, each naming the invariant, the step and
the trace event where it broke, what was expected and what happened. ``raise_for``
turns them into one ``InvariantViolation`` (an ``AssertionError``) whose message shows
the trace around the first break, so a CI log alone says what went wrong and where.

Each invariant class also says, in its own words, what it expects and what happened
when it held (``expected_text``, ``actual_text``: the certification report's columns),
how a scenario writes it (``to_data``) and which tools it names (``named_tools``:
checked against the scenario's). Its public constructor is registered in
``INVARIANTS`` (``toolchaos.fake_tools.registry``) with the checks a scenario's plain
data must pass (the constructors trust their types) and what a failure of it counts as
(``category``, ``severity``: the fuzzer writes them into a regression scenario).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from toolchaos._internal.events import ApiEvent, Event, ModelEvent, RefusalEvent, ToolEvent
from toolchaos._internal.trace import Trace, args_text
from toolchaos._internal.types import CATEGORIES, HARNESS_STATES, REPORT_FIELDS, SEVERITIES, TERMINAL_STATES, report_has
from toolchaos.errors import InvariantError, InvariantViolation, did_you_mean
from toolchaos.fake_tools import EffectLedger, FakeTool, Rule, World, canonical
from toolchaos.fake_tools.registry import Check, Declared, Kind, Registry

_EPS = 1e-6


class FinishedRun(Protocol):
    """What an invariant reads of a finished run; ``toolchaos.RunResult`` has all of it.

    Declared here, not imported from the engine, because the engine calls the invariants
    (``RunResult.check``): invariants sit below it and must not import it.
    """

    @property
    def seed(self) -> int: ...
    @property
    def terminal_state(self) -> str: ...
    @property
    def stop_report(self) -> dict[str, Any] | None: ...
    @property
    def trace(self) -> Trace: ...
    @property
    def ledger(self) -> EffectLedger: ...
    @property
    def world(self) -> World: ...
    @property
    def harness_stop(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def virtual_seconds(self) -> float: ...
    @property
    def guard(self) -> str | None: ...
    @property
    def tokens(self) -> int: ...
    @property
    def turns(self) -> int: ...
    @property
    def executions(self) -> dict[str, int]: ...
    @property
    def total_executions(self) -> int: ...
    @property
    def tools(self) -> dict[str, FakeTool]: ...
    @property
    def rules_fired(self) -> dict[str, tuple[int, ...]]: ...
    @property
    def rule_hits(self) -> dict[str, dict[int, int]]: ...
    def summary(self) -> str: ...


@dataclass(frozen=True)
class Violation:
    invariant: str
    expected: str
    actual: str
    seq: int | None = None  # trace event where it broke
    step: int | None = None  # model turn of that event
    severity: str | None = None  # the most it counts as (a false COMPLETED: "major"); None: the scenario's

    def headline(self) -> str:
        where = f" at step {self.step} (trace event #{self.seq})" if self.seq is not None else ""
        return f"invariant {self.invariant} broke{where}: expected {self.expected}; actual: {self.actual}"


class Invariant:
    """Base class: ``check(result)`` returns the violations (empty when it holds)."""

    name = "invariant"

    def check(self, result: FinishedRun) -> list[Violation]:  # pragma: no cover - abstract
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        return {}

    def expected_text(self) -> str:
        """What the report says this invariant expects (a broken one shows its violation's words)."""
        return _doc_line(self)

    def actual_text(self, result: FinishedRun) -> str:
        """What the report says happened, when the invariant held."""
        return "held"

    def named_tools(self) -> dict[str, tuple[str, ...]]:
        """The tools this invariant names, each with the parameter path that names it."""
        return {}

    def to_data(self) -> Any:
        """The plain-data spelling (a scenario's ``expect:`` entry): ``name``, or ``{name: params}``."""
        params = dict(self.params())
        return {self.name: params} if params else self.name

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{self.name}({p})"


def _doc_line(obj: Any) -> str:
    doc = (type(obj).__doc__ or "").strip().splitlines()
    return doc[0] if doc else repr(obj)


def expected_text(invariant: Any) -> str:
    """The report's words for what an invariant expects; a custom one without them gives its docstring's first line."""
    return invariant.expected_text() if isinstance(invariant, Invariant) else _doc_line(invariant)


def actual_text(invariant: Any, result: FinishedRun) -> str:
    """The report's words for what happened under an invariant that held."""
    return invariant.actual_text(result) if isinstance(invariant, Invariant) else "held"


def _one_of(choices: tuple[str, ...]) -> Callable[[Kind[Any], Any], None]:
    def check(kind: Kind[Any], value: Any) -> None:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}{did_you_mean(str(value), choices)}")

    return check


INVARIANTS: Registry[Invariant] = Registry("invariant", key="name", declares=(
    Declared("category", f"the scenario category a failure of it counts as ({', '.join(CATEGORIES)})",
             _one_of(CATEGORIES)),
    Declared("severity", f"how bad a failure of it is ({', '.join(SEVERITIES)})", _one_of(SEVERITIES)),
))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _names(value: Any) -> bool:
    seq = value if isinstance(value, (list, tuple)) else [value]  # one name stands for a list of one
    return bool(seq) and all(isinstance(s, str) for s in seq)


# What a scenario's values must be (the constructors trust their types).
_COUNT = Check("an integer >= 0", _whole)
_SECONDS = Check("a number >= 0", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0)
_TOOL_COUNTS = Check("a mapping of tool name -> integer >= 0",
                     lambda v: isinstance(v, dict) and all(isinstance(k, str) and _whole(n) for k, n in v.items()))
_TOOL = Check("a tool name", lambda v: isinstance(v, str))
_NAME = Check("a name", lambda v: isinstance(v, str))
_FIELDS = Check("a mapping of record fields", lambda v: isinstance(v, dict))
_NAMES = Check("a list of names", _names, at_value=False)


def _tool_events(result: FinishedRun, tool: str | None = None) -> list[ToolEvent]:
    return [e for e in result.trace.events if e["kind"] == "tool" and (tool is None or e["tool"] == tool)]


def _requests(result: FinishedRun, tool: str | None = None) -> list[ToolEvent]:
    """Executions of the calls asked for, each once: its transport retries (``attempt``) left out."""
    return [e for e in _tool_events(result, tool) if "attempt" not in e]


# The official OpenAI and Anthropic SDKs retry a failed request twice by default: 3 attempts. The
# bound leaves one more, as every bound of the suite does above the published constant it is
# derived from: a runtime configured one retry above the default is not the harm (docs/scenarios.md).
TRANSPORT_ATTEMPTS = 4


class Bounded(Invariant):
    """Bounded termination: executions (total and per tool), model turns, virtual seconds, tokens.

    Executions count the requests (the model's, and the runtime's own calls), each once; a
    transport retry (the same call executed again with no model turn in between) is bounded
    apart, by ``attempts`` per request (default ``TRANSPORT_ATTEMPTS`` wherever executions are).
    """

    name = "bounded"

    def __init__(self, executions: int | None = None, per_tool: Mapping[str, int] | None = None,
                 turns: int | None = None, virtual_seconds: float | None = None, tokens: int | None = None,
                 attempts: int | None = None, overshoot: int = 0) -> None:
        for field, value in (("executions", executions), ("turns", turns), ("virtual_seconds", virtual_seconds),
                             ("tokens", tokens), ("attempts", attempts), *sorted((per_tool or {}).items())):
            if isinstance(value, float) and not math.isfinite(value):  # NaN passes every comparison: no bound
                raise InvariantError(f"bounded: {field} must be a finite number, got {value!r}", field=field)
        if attempts is not None and (isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1):
            raise InvariantError(f"bounded: attempts must be a positive whole number (executions of one request, "
                                 f"retries included), got {attempts!r}", field="attempts")
        self.executions, self.per_tool = executions, dict(per_tool or {})
        self.turns, self.virtual_seconds, self.tokens = turns, virtual_seconds, tokens
        self.attempts = attempts
        if isinstance(overshoot, bool) or not isinstance(overshoot, int) or overshoot < 0:
            raise InvariantError(f"bounded: overshoot must be a whole number of turns >= 0, got {overshoot!r}",
                                 field="overshoot")
        if overshoot and tokens is None:
            raise InvariantError("bounded: overshoot is the turns the token total may run past `tokens`: "
                                 "give tokens too", field="overshoot")
        # Turns that may end past ``tokens``: a runtime that checks the usage each turn reports, after
        # the turn, learns of the overrun one turn late (overshoot 1); one that counts the prompt first
        # stops before it (0).
        self.overshoot = overshoot

    @property
    def attempts_bound(self) -> int | None:
        """The attempts allowed per request: as given, else the SDKs' default wherever executions are bounded."""
        if self.attempts is not None:
            return self.attempts
        return TRANSPORT_ATTEMPTS if self.executions is not None or self.per_tool else None

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in (("executions", self.executions), ("per_tool", self.per_tool or None),
                                  ("turns", self.turns), ("virtual_seconds", self.virtual_seconds),
                                  ("tokens", self.tokens), ("attempts", self.attempts),
                                  ("overshoot", self.overshoot or None)) if v is not None}

    def check(self, result: FinishedRun) -> list[Violation]:
        out: list[Violation] = []
        if self.executions is not None:
            out += _count_bound("bounded.executions", _requests(result), self.executions, "tool executions")
        for tool, bound in sorted(self.per_tool.items()):
            out += _count_bound(f"bounded.executions[{tool}]", _requests(result, tool), bound,
                                f"executions of {tool}")
        attempts = self.attempts_bound
        if attempts is not None:
            over = next((e for e in _tool_events(result) if e.get("attempt", 1) > attempts), None)
            if over is not None:
                out.append(Violation("bounded.attempts", f"at most {attempts} attempts at one request "
                                     "(the call and its transport retries, no model turn between)",
                                     f"{over['attempt']} attempts at {over['tool']}", *_at(over)))
        if self.turns is not None:
            out += _count_bound("bounded.turns", result.trace.model_events, self.turns, "model turns")
        if self.virtual_seconds is not None and result.virtual_seconds > self.virtual_seconds + _EPS:
            late = next((e for e in result.trace.events if e["t"] > self.virtual_seconds), None)
            out.append(Violation("bounded.virtual_seconds", f"at most {self.virtual_seconds:g} virtual seconds",
                                 f"{result.virtual_seconds:g}s", *_at(late)))
        if self.tokens is not None:
            total, past = 0, 0
            for e in result.trace.model_events:
                total += e["tokens_in"] + e["tokens_out"]
                if total > self.tokens:
                    past += 1  # turns that ended past the budget: the first may be an after-turn check's
                    if past > self.overshoot:
                        out.append(Violation("bounded.tokens", self._tokens_text(), f"{result.tokens} tokens",
                                             *_at(e)))
                        break
        return out

    def _tokens_text(self) -> str:
        if not self.overshoot:
            return f"at most {self.tokens} tokens"
        turns = "one turn" if self.overshoot == 1 else f"{self.overshoot} turns"
        return f"at most {self.tokens} tokens, but for {turns} that ends past them"

    def expected_text(self) -> str:
        parts = [] if self.executions is None else [f"at most {self.executions} tool executions"]
        parts += [f"at most {n} executions of {t}" for t, n in sorted(self.per_tool.items())]
        if self.attempts is not None:  # the default (the SDKs') is said where a retry breaks it
            parts.append(f"at most {self.attempts} attempts at each")
        if self.turns is not None:
            parts.append(f"at most {self.turns} model turns")
        if self.virtual_seconds is not None:
            parts.append(f"at most {self.virtual_seconds:g} virtual seconds")
        if self.tokens is not None:
            parts.append(self._tokens_text())
        return "; ".join(parts) or "bounded"

    def actual_text(self, result: FinishedRun) -> str:
        parts = [] if self.executions is None else [f"{len(_requests(result))} tool executions"]
        parts += [f"{len(_requests(result, t))} executions of {t}" for t in sorted(self.per_tool)]
        retries = len(_tool_events(result)) - len(_requests(result))
        if self.attempts_bound is not None and retries:
            parts.append(f"{retries} transport retries besides")
        if self.turns is not None:
            parts.append(f"{result.turns} model turns")
        if self.virtual_seconds is not None:
            parts.append(f"{result.virtual_seconds:g} virtual seconds")
        if self.tokens is not None:
            parts.append(f"{result.tokens} tokens")
        return "; ".join(parts) or "held"

    def named_tools(self) -> dict[str, tuple[str, ...]]:
        return {t: ("per_tool", t) for t in self.per_tool}


def _at_end(result: FinishedRun) -> tuple[int | None, int | None]:
    """Where the run ended (its end event), looked up only for a violation to point at."""
    end = result.trace.of_kind("end")
    return _at(end[-1] if end else None)


def _at(event: Event | None) -> tuple[int | None, int | None]:
    return (event["seq"], event["step"]) if event is not None else (None, None)


def _count_bound(name: str, events: Sequence[ToolEvent | ModelEvent], bound: int, what: str) -> list[Violation]:
    if len(events) <= bound:
        return []
    return [Violation(name, f"at most {bound} {what}", f"{len(events)} {what}", *_at(events[bound]))]


class MaxSideEffects(Invariant):
    """Side effects that really happened (the ledger, not the agent's belief) stay within a bound."""

    name = "max_side_effects"

    def __init__(self, n: int, tool: str | None = None) -> None:
        self.n, self.tool = n, tool

    def params(self) -> dict[str, Any]:
        return {"n": self.n, "tool": self.tool} if self.tool else {"n": self.n}

    def check(self, result: FinishedRun) -> list[Violation]:
        applied = [f for f in result.ledger.effects if f.applied and (self.tool is None or f.tool == self.tool)]
        if len(applied) <= self.n:
            return []
        what = f"side effects of {self.tool}" if self.tool else "side effects"
        return [Violation(self.name, f"at most {self.n} {what}", f"{len(applied)} applied",
                          *_at(_event(result, applied[self.n].seq)))]

    def expected_text(self) -> str:
        return f"at most {self.n} side effects" + (f" of {self.tool}" if self.tool else "")

    def actual_text(self, result: FinishedRun) -> str:
        return f"{result.ledger.applied(self.tool)} applied"

    def named_tools(self) -> dict[str, tuple[str, ...]]:
        return {} if self.tool is None else {self.tool: ("tool",)}


def _event(result: FinishedRun, seq: int) -> Event | None:
    return next((e for e in result.trace.events if e["seq"] == seq), None)


def operation_name(result: FinishedRun, tool: str, key: str, seq: int) -> str:
    """An operation as a reader knows it: by the caller's key when the call sent one, else by the call itself
    (the ledger keys a call without an idempotency key by a hash of its arguments, which says nothing)."""
    ev = _event(result, seq)
    args = ev.get("args") if ev is not None and ev["kind"] == "tool" else None
    if not isinstance(args, Mapping) or key in (str(v) for v in args.values()):
        return f"{tool} key {key!r}"
    return f"{tool}{args_text(args)}"


class Idempotent(Invariant):
    """At most one applied effect per operation key (a timeout with applied: true counts).

    A call the API answered from a known idempotency key (a replay) applied nothing: it is
    not a second effect, and a violation says how many replays there were besides.
    """

    name = "idempotent"

    def check(self, result: FinishedRun) -> list[Violation]:
        seen: dict[tuple[str, str], int] = {}
        out: list[Violation] = []
        ledger = result.ledger
        for f in ledger.effects:
            if not f.applied:
                continue
            k = (f.tool, f.key)
            seen[k] = seen.get(k, 0) + 1
            if seen[k] == 2:
                replays = ledger.replayed(f.tool, f.key)
                also = f" (and replayed {replays} times by the API)" if replays else ""
                out.append(Violation(self.name, f"operation {operation_name(result, f.tool, f.key, f.seq)} "
                                     "applied at most once",
                                     f"applied {ledger.applied_for(f.tool, f.key)} times{also}",
                                     *_at(_event(result, f.seq))))
        return out

    def expected_text(self) -> str:
        return "each operation key applied at most once"

    def actual_text(self, result: FinishedRun) -> str:
        ledger = result.ledger
        counts = [ledger.applied_for(f.tool, f.key) for f in ledger.effects if f.applied]
        replays = ledger.replayed()
        also = f"; {replays} replayed by the API" if replays else ""
        return (f"at most {max(counts)} per key" if counts else "no side effect applied") + also


class TerminalState(Invariant):
    """The run ended in one of the given terminal states."""

    name = "terminal_state"

    def __init__(self, *states: str, completed_by_goal: bool = False) -> None:
        known = TERMINAL_STATES + HARNESS_STATES
        for s in states:
            if s not in known:
                raise InvariantError(f"terminal_state: unknown state {s!r}{did_you_mean(s, known)}; "
                                     f"known: {', '.join(TERMINAL_STATES)}")
        self.states = tuple(states)
        # In a scenario with a goal, a COMPLETED claim is the goal's to judge (a reporting failure when
        # false), not this invariant's: the run is judged on what it did, not on the state it claimed.
        self.completed_by_goal = completed_by_goal

    def params(self) -> dict[str, Any]:
        return {"states": list(self.states), **({"completed_by_goal": True} if self.completed_by_goal else {})}

    def check(self, result: FinishedRun) -> list[Violation]:
        if result.terminal_state in self.states or (self.completed_by_goal and result.terminal_state == "COMPLETED"):
            return []
        end = result.trace.of_kind("end")
        return [Violation(self.name, f"one of {', '.join(self.states)}", result.terminal_state,
                          *_at(end[-1] if end else None))]

    def expected_text(self) -> str:
        return "one of " + ", ".join(self.states) + (" (COMPLETED: the goal judges it)" if self.completed_by_goal else "")

    def actual_text(self, result: FinishedRun) -> str:
        return result.terminal_state

    def to_data(self) -> Any:  # the states are its positional parameters (the goal's part comes with the goal)
        return {self.name: list(self.states)}


_STOP_FIELDS = ("guard", "reason", "completed", "resume_condition")


class StopReport(Invariant):
    """A run that did not complete gives a stop report with the required fields.

    A field counts under its own name or a synonym (``toolchaos.REPORT_SYNONYMS``: the
    LoopGuard design's ``guard_reason``, ``last_safe_checkpoint``, ``terminal_state``).
    """

    name = "stop_report"

    def __init__(self, fields: Sequence[str] = _STOP_FIELDS) -> None:
        bad = [f for f in fields if f not in REPORT_FIELDS]
        if bad:
            raise InvariantError(f"stop_report: unknown fields {bad}; known: {', '.join(REPORT_FIELDS)}",
                                 field="fields")
        self.fields = tuple(fields)

    def params(self) -> dict[str, Any]:
        return {"fields": list(self.fields)}

    def check(self, result: FinishedRun) -> list[Violation]:
        if result.terminal_state == "COMPLETED":
            return []
        report = result.stop_report
        if not report:
            return [Violation(self.name, f"a stop report with {', '.join(self.fields)}", "no stop report",
                              *_at_end(result))]
        missing = [f for f in self.fields if not report_has(report, f)]  # any spelling of the field
        if missing:
            return [Violation(self.name, f"a stop report with {', '.join(self.fields)}",
                              f"missing {', '.join(missing)}", *_at_end(result))]
        return []

    def expected_text(self) -> str:
        return "a stop report with " + ", ".join(self.fields) + " (unless COMPLETED)"

    def actual_text(self, result: FinishedRun) -> str:
        return "COMPLETED (no report needed)" if result.terminal_state == "COMPLETED" else "a complete stop report"

    def to_data(self) -> Any:
        return self.name if self.fields == _STOP_FIELDS else super().to_data()


class NoExecutionAfterRefusal(Invariant):
    """A refused call is never executed later, and nothing executes after the run ended."""

    name = "no_execution_after_refusal"

    def check(self, result: FinishedRun) -> list[Violation]:
        refused: dict[str, RefusalEvent] = {}
        out: list[Violation] = []
        for e in result.trace.events:
            if e["kind"] == "refusal":
                refused.setdefault(e["fp"], e)
            elif e["kind"] == "tool" and e["fp"] in refused:
                r = refused[e["fp"]]
                out.append(Violation(self.name, f"{e['tool']} not executed after its refusal at event #{r['seq']}",
                                     f"executed at event #{e['seq']}", *_at(e)))
            elif e["kind"] == "late":
                out.append(Violation(self.name, "no tool call after the run ended",
                                     f"{e['tool']} called after the end", *_at(e)))
        return out

    def expected_text(self) -> str:
        return "no refused call executed later; no call after the end"


class RetryAfterHonoured(Invariant):
    """After an answer with Retry-After R, the same tool (or the model API) is not called again for R seconds.

    R is the wait in seconds whichever form the answer wrote it in (seconds, an HTTP-date,
    ``retry-after-ms``, a rate-limit reset header): the trace records it as ``retry_after``.
    A model-API fault (an ``api`` event) holds back the next model request, faulted or not, a
    side request (a ``side`` event) included.
    """

    name = "retry_after_honoured"

    def check(self, result: FinishedRun) -> list[Violation]:
        not_before: dict[str, tuple[float, ToolEvent | ApiEvent]] = {}
        out: list[Violation] = []
        for e in result.trace.events:
            if e["kind"] == "tool":
                who = e["tool"]
            elif e["kind"] in ("model", "api", "side"):  # a side request is a request to the model API too
                who = _MODEL_API
            else:
                continue
            if who in not_before:
                when, src = not_before.pop(who)
                if e["t"] + _EPS < when:
                    out.append(Violation(self.name, f"{who} not called before t={when:g}s "
                                                    f"(Retry-After at event #{src['seq']})",
                                         f"called at t={e['t']:g}s", *_at(e)))
            if e["kind"] == "tool":
                if e["retry_after"] and e["class"] == "RETRYABLE":
                    not_before[who] = (e["t"] + e["latency"] + e["retry_after"], e)
            elif e["kind"] == "api" and e["retry_after"]:
                not_before[who] = (e["t"] + e["retry_after"], e)
        return out

    def expected_text(self) -> str:
        return "no call before its Retry-After has elapsed"


_MODEL_API = "the model API"

POLL_FACTOR = 3  # polls of one job inside one of its intervals: more is hammering the server, not polling


def _polls(result: FinishedRun) -> dict[str, list[ToolEvent]]:
    """Per job (the fingerprint of a call answered PENDING), its polls: from the first answer that said
    "still processing" to the first one that did not, both included."""
    polls: dict[str, list[ToolEvent]] = {}
    done: set[str] = set()
    for e in _tool_events(result):
        fp = e["fp"]
        if fp in done or (fp not in polls and e["class"] != "PENDING"):
            continue
        polls.setdefault(fp, []).append(e)
        if e["class"] != "PENDING":
            done.add(fp)
    return polls


def _early(polls: Sequence[ToolEvent]) -> int:
    """How many polls came before the interval the previous answer asked for had passed."""
    return sum(1 for a, b in itertools.pairwise(polls)
               if a["retry_after"] and b["t"] + _EPS < a["t"] + a["latency"] + a["retry_after"])


class PollIntervalHonoured(Invariant):
    """A pending job is polled at its interval: more than ``factor`` polls inside one interval fail.

    The interval is what the "still processing" answer asks for (its ``retry_after``). Polls that
    come sooner, up to ``factor`` inside one interval, are waste, not harm: ``actual_text`` counts
    them (and the scenario's waste grade counts the extra executions); more than ``factor`` within
    an interval is a runtime hammering the server and breaks the invariant.
    """

    name = "poll_interval_honoured"

    def __init__(self, factor: int = POLL_FACTOR) -> None:
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise InvariantError(f"poll_interval_honoured: factor must be an integer >= 1, got {factor!r}",
                                 field="factor")
        self.factor = factor

    def params(self) -> dict[str, Any]:
        return {} if self.factor == POLL_FACTOR else {"factor": self.factor}

    def check(self, result: FinishedRun) -> list[Violation]:
        out: list[Violation] = []
        for polls in _polls(result).values():
            for first, last in zip(polls, polls[self.factor:], strict=False):
                interval = first["retry_after"]
                if first["class"] == "PENDING" and interval and last["t"] - first["t"] < interval - _EPS:
                    out.append(Violation(self.name, f"at most {self.factor} polls of {last['tool']} inside its "
                                                    f"{interval:g}s interval",
                                         f"{self.factor + 1} polls between t={first['t']:g}s and t={last['t']:g}s",
                                         *_at(last)))
                    break
        return out

    def expected_text(self) -> str:
        return f"a pending job polled at most {self.factor} times inside one of its intervals"

    def actual_text(self, result: FinishedRun) -> str:
        jobs = _polls(result).values()
        if not jobs:
            return "no pending job"
        made, early = sum(len(p) for p in jobs), sum(_early(p) for p in jobs)
        return f"{made} polls, {early} before the interval (waste)" if early else f"{made} polls, each at the interval"


class NoUnchangedResend(Invariant):
    """A call answered FATAL or PRECONDITION is not sent again with unchanged arguments."""

    name = "no_unchanged_resend"

    def check(self, result: FinishedRun) -> list[Violation]:
        final: dict[str, ToolEvent] = {}
        out: list[Violation] = []
        for e in _tool_events(result):
            if e["fp"] in final:
                src = final[e["fp"]]
                out.append(Violation(self.name, f"{e['tool']} not resent unchanged after {src['class']}/"
                                                f"{src['code']} at event #{src['seq']}",
                                     f"resent at event #{e['seq']}", *_at(e)))
            elif e["class"] in ("FATAL", "PRECONDITION"):
                final[e["fp"]] = e
        return out

    def expected_text(self) -> str:
        return "no unchanged resend of a FATAL or PRECONDITION call"


class Completed(Invariant):
    """Legitimate work completes: state COMPLETED and, per tool, at least N successful calls."""

    name = "completed"

    def __init__(self, successes: Mapping[str, int] | None = None) -> None:
        self.successes = dict(successes or {})

    def params(self) -> dict[str, Any]:
        return {"successes": self.successes} if self.successes else {}

    def check(self, result: FinishedRun) -> list[Violation]:
        end = result.trace.of_kind("end")
        where = _at(end[-1] if end else None)
        out: list[Violation] = []
        if result.terminal_state != "COMPLETED":
            why = f" (guard: {result.guard})" if result.guard else ""
            out.append(Violation(self.name, "the run to complete (no false positive)",
                                 f"{result.terminal_state}{why}", *where))
        for tool, n in sorted(self.successes.items()):
            got = sum(1 for e in _tool_events(result, tool) if e["class"] == "SUCCESS")
            if got < n:
                out.append(Violation(f"{self.name}.successes[{tool}]", f"at least {n} successful calls of {tool}",
                                     str(got), *where))
        return out

    def expected_text(self) -> str:
        return "COMPLETED" + "".join(f"; at least {n} successful calls of {t}" for t, n in sorted(self.successes.items()))

    def actual_text(self, result: FinishedRun) -> str:
        got = "; ".join(f"{sum(1 for e in result.trace.tool_events if e['tool'] == t and e['class'] == 'SUCCESS')} "
                        f"successful calls of {t}" for t in sorted(self.successes))
        return result.terminal_state + (f"; {got}" if got else "")

    def named_tools(self) -> dict[str, tuple[str, ...]]:
        return {t: ("successes", t) for t in self.successes}


class WorldState(Invariant):
    """The world the run left holds what the task needed: how many records match, what they hold.

    ``where`` selects the records of ``collection`` (a subset of their fields; nested
    mappings match as subsets too); ``count``: exactly that many match in the end;
    ``created``: exactly that many matching ones were created by the run (not there at the
    start); ``holds``: every matching record has these values (and at least one matches).
    """

    name = "world_state"

    def __init__(self, collection: str, where: Mapping[str, Any] | None = None, count: int | None = None,
                 created: int | None = None, holds: Mapping[str, Any] | None = None) -> None:
        if count is None and created is None and holds is None:
            raise InvariantError("world_state needs what to check: count, created or holds", field="count")
        self.collection, self.where, self.holds = collection, dict(where or {}), dict(holds or {})
        self.count, self.created = count, created

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in (("collection", self.collection), ("where", self.where or None),
                                  ("count", self.count), ("created", self.created), ("holds", self.holds or None))
                if v is not None}

    def _what(self) -> str:
        return f"records in {self.collection}" + (f" with {brief(self.where)}" if self.where else "")

    def expected_text(self) -> str:
        what = self._what()
        parts = [f"exactly {self.count} {what}"] if self.count is not None else []
        parts += [f"exactly {self.created} new {what}"] if self.created is not None else []
        parts += [f"{what} holding {brief(self.holds)}"] if self.holds else []
        return "; ".join(parts)

    def actual_text(self, result: FinishedRun) -> str:
        coll = result.world.get(self.collection)
        match = sum(1 for r in coll.rows.values() if contains(r, self.where))
        made = sum(1 for r in coll.created() if contains(r, self.where))
        return f"{match} matching, {made} new" + ("; all holding it" if self.holds else "")

    def check(self, result: FinishedRun) -> list[Violation]:
        coll = result.world.get(self.collection)
        what = self._what()
        match = [r for r in coll.rows.values() if contains(r, self.where)]
        end = result.trace.of_kind("end")
        where = _at(end[-1] if end else None)
        out: list[Violation] = []
        if self.count is not None and len(match) != self.count:
            out.append(Violation(f"{self.name}.count", f"exactly {self.count} {what}", f"{len(match)}", *where))
        if self.created is not None:
            made = [r for r in coll.created() if contains(r, self.where)]
            if len(made) != self.created:
                out.append(Violation(f"{self.name}.created", f"exactly {self.created} new {what}",
                                     f"{len(made)} created", *where))
        if self.holds:
            wrong = [r for r in match if not contains(r, self.holds)]
            if not match or wrong:
                got = "no such record" if not match else brief(wrong[0])
                out.append(Violation(f"{self.name}.holds", f"{what} holding {brief(self.holds)}", got, *where))
        return out


def contains(record: Any, want: Mapping[str, Any]) -> bool:
    """Does ``record`` have every value of ``want`` (nested mappings as subsets)?"""
    if not isinstance(record, Mapping):
        return False
    for k, v in want.items():
        if k not in record:
            return False
        got = record[k]
        if isinstance(v, Mapping) and not contains(got, v):
            return False
        if not isinstance(v, Mapping) and got != v:
            return False
    return True


def brief(value: Any, limit: int = 120) -> str:
    text = canonical(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_UNUSABLE = ("empty", "malformed")  # a SUCCESS the task cannot use: no data, or data that does not parse


class Goal(Invariant):
    """A COMPLETED claim holds: the task's goal was met, by the trace and the effect ledger, not by the agent's word.

    ``successes``: tool -> at least N executions answered with usable data (SUCCESS, neither
    empty nor malformed); ``effects``: tool -> at least N side effects applied. A run that does
    not claim COMPLETED is not judged here. A false claim is a reporting failure, distinct from
    a runaway loop: its violations count as ``major`` at most (``Violation.severity``).
    """

    name = "goal"
    severity = "major"

    def __init__(self, successes: Mapping[str, int] | None = None, effects: Mapping[str, int] | None = None) -> None:
        self.successes, self.effects = dict(successes or {}), dict(effects or {})

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in (("successes", self.successes), ("effects", self.effects)) if v}

    def _wanted(self) -> list[tuple[int, str]]:
        """(at least N, of what) for every part of the goal."""
        return ([(n, f"usable results of {t}") for t, n in sorted(self.successes.items())]
                + [(n, f"applied effects of {t}") for t, n in sorted(self.effects.items())])

    def _got(self, result: FinishedRun) -> list[int]:
        """What the run really did, part by part (in ``_wanted``'s order)."""
        usable = [sum(1 for e in _tool_events(result, t) if e["class"] == "SUCCESS" and e["outcome"] not in _UNUSABLE)
                  for t in sorted(self.successes)]
        return usable + [result.ledger.applied(t) for t in sorted(self.effects)]

    def check(self, result: FinishedRun) -> list[Violation]:
        if result.terminal_state != "COMPLETED":
            return []
        short = [f"{got} {what}" for (n, what), got in zip(self._wanted(), self._got(result)) if got < n]
        if not short:
            return []
        end = result.trace.of_kind("end")
        return [Violation(self.name, self.expected_text(), "COMPLETED with " + "; ".join(short),
                          *_at(end[-1] if end else None), severity=self.severity)]

    def expected_text(self) -> str:
        return "a COMPLETED claim only with the goal met: " + "; ".join(f"at least {n} {w}" for n, w in self._wanted())

    def actual_text(self, result: FinishedRun) -> str:
        if result.terminal_state != "COMPLETED":
            return f"{result.terminal_state}: no COMPLETED claim to check"
        got = self._got(result)
        return "COMPLETED with " + "; ".join(f"{n} {what}" for n, (_, what) in zip(got, self._wanted()))

    def named_tools(self) -> dict[str, tuple[str, ...]]:
        return {**{t: ("successes", t) for t in self.successes}, **{t: ("effects", t) for t in self.effects}}


class FaultsFired(Invariant):
    """Every fault rule of the run's tools answered a call, unless the runtime kept the model from reaching it.

    A rule that never matched makes a pass vacuous (as respx's ``assert_all_called`` says of
    a route): a typo in the policy's arguments that fails the tool's schema on every call, a
    ``call: 7`` for a tool the model asks for 3 times, a ``match`` no call sends. The violation
    names the rule and why it never matched, from the trace. A runtime that refused or skipped
    calls, or ended the run before the model was done, may rightly have kept later rules from
    firing: then only a schema that failed every call of the tool is the scenario's fault.
    """

    name = "faults_fired"

    def check(self, result: FinishedRun) -> list[Violation]:
        end = result.trace.of_kind("end")
        where = _at(end[-1] if end else None)
        cut_short = _cut_short(result)
        out: list[Violation] = []
        for tool, definition in sorted(result.tools.items()):
            schedule, events = definition.schedule, _tool_events(result, tool)
            if events and all(e["outcome"] == "invalid_call" for e in events) and (
                    schedule.rules or schedule.default.kind != "ok"):  # the arguments' fault, not the runtime's
                out.append(Violation(f"{self.name}[{tool}]", f"the faults of {tool} to answer its calls",
                                     f"none was read: {_schema_failures(tool, events)}", *where))
                continue
            if cut_short:
                continue
            fired = result.rules_fired.get(tool, ())
            for i, rule in enumerate(schedule.rules):
                if i not in fired:
                    out.append(Violation(f"{self.name}[{tool}]", f"fault rule faults[{i}] of {tool} "
                                         f"({rule.describe()}) to answer at least one call",
                                         f"it never matched: {_why_unfired(result, tool, rule)}", *where))
        return out

    def expected_text(self) -> str:
        return "every fault rule answers a call (unless the runtime stopped the model first)"

    def actual_text(self, result: FinishedRun) -> str:
        fired = sum(len(v) for v in result.rules_fired.values())
        declared = sum(len(t.schedule.rules) for t in result.tools.values())
        return f"{fired} of {declared} fault rules fired" if declared else "no fault rule declared"


def _cut_short(result: FinishedRun) -> bool:
    """Did the runtime keep the model from asking all it would: a refusal, a skipped call, a stop before its answer?"""
    if result.harness_stop is not None:
        return True
    if any(e["kind"] in ("refusal", "skipped") for e in result.trace.events):
        return True
    turns = result.trace.model_events
    return not turns or turns[-1]["final"] is None


def _why_unfired(result: FinishedRun, tool: str, rule: Rule) -> str:
    """Why a fault rule answered no call though some calls were valid (or none was made): the rule's own terms."""
    events = _tool_events(result, tool)
    if not events:
        return _never_executed(result, tool)
    valid = [e for e in events if e["outcome"] != "invalid_call"]  # a schema failure never reads the schedule
    numbers = [e["call_no"] for e in valid]
    if rule.call is not None and rule.call not in numbers:
        return f"call {rule.call} of {tool} never came as a valid call (valid calls: {_numbers(numbers)})"
    if rule.calls is not None and not _any_in_range(numbers, rule.calls):
        return f"no valid call of {tool} fell in calls {rule.calls[0]}..{rule.calls[1] or ''} ({_numbers(numbers)})"
    if rule.match is not None and not _any_matching(valid, rule.match):
        return f"no call sent arguments matching {dict(rule.match)} (sent: {_sent(valid)})"
    if rule.probability is not None:
        return f"no draw fell under p={rule.probability:g} ({len(valid)} valid calls of {tool})"
    return "an earlier rule answered every call it matched (the first rule that matches wins)"


def _never_executed(result: FinishedRun, tool: str) -> str:
    """Why a tool's rules read no call: it never ran, and how many of its calls the runtime kept from running."""
    asked = sum(1 for e in result.trace.events if e["kind"] in ("refusal", "skipped") and e["tool"] == tool)
    return f"{tool} was never executed" + (f" ({asked} calls refused or skipped by the runtime)" if asked else "")


def _any_in_range(numbers: Sequence[int], calls: tuple[int, int | None]) -> bool:
    """Does a call number fall in a rule's ``calls`` range (its end None: open)?"""
    first, last = calls
    return any(first <= n and (last is None or n <= last) for n in numbers)


def _any_matching(events: Sequence[ToolEvent], match: Mapping[str, Any]) -> bool:
    """Did a call send every argument a rule's ``match`` names, with its value?"""
    return any(all(e["args"].get(k) == v for k, v in match.items()) for e in events)


def _schema_failures(tool: str, events: Sequence[ToolEvent]) -> str:
    codes = ", ".join(dict.fromkeys(e["code"] for e in events))
    return (f"all {len(events)} executions of {tool} failed its argument schema ({codes}; sent {_sent(events)}) "
            f"before any fault was read: the arguments are wrong, not the runtime")


def _sent(events: Sequence[ToolEvent], most: int = 3) -> str:
    distinct = list(dict.fromkeys(json.dumps(e["args"], sort_keys=True, default=str) for e in events))
    return "; ".join(distinct[:most]) + (f"; and {len(distinct) - most} more" if len(distinct) > most else "")


def _numbers(numbers: Sequence[int]) -> str:
    return ", ".join(map(str, numbers[:10])) + (", ..." if len(numbers) > 10 else "")


class Terminated(Invariant):
    """The agent ended the run itself: no crash, no harness ceiling, no watchdog."""

    name = "terminated"

    def check(self, result: FinishedRun) -> list[Violation]:
        if result.harness_stop is None:
            return []
        end = result.trace.of_kind("end")
        why = {"ceiling": "the harness ceiling ended it", "watchdog": "the watchdog ended it",
               "crash": "the agent crashed", "policy": "the policy crashed", "interrupted": "interrupted",
               "uncallable": "the harness could not call the agent",
               "result": "the agent returned a result the harness cannot read",
               "tampered": "the agent tampered with the harness's watchdog"}
        detail = why.get(result.harness_stop, result.harness_stop)
        if result.error:
            detail += f": {result.error.strip().splitlines()[-1]}"
        return [Violation(self.name, "the agent to end the run itself", detail, *_at(end[-1] if end else None))]

    def expected_text(self) -> str:
        return "the agent ends the run itself"

    def actual_text(self, result: FinishedRun) -> str:
        return f"ended by the agent ({result.terminal_state})"


# --- constructors: the names YAML scenarios use, registered ------------------------------


@INVARIANTS.register(Bounded, checks={"executions": _COUNT, "per_tool": _TOOL_COUNTS, "turns": _COUNT,
                                      "virtual_seconds": _SECONDS, "tokens": _COUNT, "attempts": _COUNT,
                                      "overshoot": _COUNT},
                     needs="at least one bound (executions, per_tool, turns, virtual_seconds, tokens)",
                     category="budgets", severity="critical")
def bounded(executions: int | None = None, per_tool: Mapping[str, int] | None = None, turns: int | None = None,
            virtual_seconds: float | None = None, tokens: int | None = None, attempts: int | None = None,
            overshoot: int = 0) -> Invariant:
    return Bounded(executions, per_tool, turns, virtual_seconds, tokens, attempts, overshoot)


@INVARIANTS.register(MaxSideEffects, checks={"n": _COUNT, "tool": _TOOL}, category="side_effects", severity="critical")
def max_side_effects(n: int, tool: str | None = None) -> Invariant:
    return MaxSideEffects(n, tool)


@INVARIANTS.register(Idempotent, category="side_effects", severity="critical")
def idempotent() -> Invariant:
    return Idempotent()


@INVARIANTS.register(TerminalState, checks={"states": _NAMES}, needs=f"at least one state ({', '.join(TERMINAL_STATES)})",
                     category="loops", severity="major")
def terminal_state(*states: str) -> Invariant:
    return TerminalState(*states)


@INVARIANTS.register(StopReport, checks={"fields": _NAMES}, category="loops", severity="major")
def stop_report(fields: Sequence[str] = _STOP_FIELDS) -> Invariant:
    return StopReport(fields)


@INVARIANTS.register(NoExecutionAfterRefusal, category="loops", severity="critical")
def no_execution_after_refusal() -> Invariant:
    return NoExecutionAfterRefusal()


@INVARIANTS.register(RetryAfterHonoured, category="error_classes", severity="major")
def retry_after_honoured() -> Invariant:
    return RetryAfterHonoured()


@INVARIANTS.register(PollIntervalHonoured, checks={"factor": Check("an integer >= 1", lambda v: _whole(v) and v >= 1)},
                     category="error_classes", severity="major")
def poll_interval_honoured(factor: int = POLL_FACTOR) -> Invariant:
    return PollIntervalHonoured(factor)


@INVARIANTS.register(NoUnchangedResend, category="error_classes", severity="major")
def no_unchanged_resend() -> Invariant:
    return NoUnchangedResend()


@INVARIANTS.register(Completed, checks={"successes": _TOOL_COUNTS}, category="legit", severity="major")
def completed(successes: Mapping[str, int] | None = None) -> Invariant:
    return Completed(successes)


@INVARIANTS.register(Terminated, category="budgets", severity="critical")
def terminated() -> Invariant:
    return Terminated()


@INVARIANTS.register(WorldState, checks={"collection": _NAME, "where": _FIELDS, "count": _COUNT, "created": _COUNT,
                                          "holds": _FIELDS}, category="loops", severity="major")
def world_state(collection: str, where: Mapping[str, Any] | None = None, count: int | None = None,
                created: int | None = None, holds: Mapping[str, Any] | None = None) -> Invariant:
    return WorldState(collection, where, count, created, holds)


@INVARIANTS.register(FaultsFired, category="loops", severity="major")
def faults_fired() -> Invariant:
    return FaultsFired()


@INVARIANTS.register(Goal, checks={"successes": _TOOL_COUNTS, "effects": _TOOL_COUNTS},
                     needs="at least one part (successes, effects)", category="loops", severity="major")
def goal(successes: Mapping[str, int] | None = None, effects: Mapping[str, int] | None = None) -> Invariant:
    return Goal(successes, effects)


DEFAULT: tuple[Invariant, ...] = (Terminated(), NoExecutionAfterRefusal())


def with_terminated(invariants: Sequence[Any]) -> list[Any]:
    """``invariants`` and ``terminated``, as every scenario checks it: a crash, the harness ceiling or
    the watchdog is never a pass by default. Not added when one of them checks it already, or
    expects a harness stop (``terminal_state("CRASHED")``); with none at all, ``check_all``'s defaults."""
    invs = list(invariants)
    expects_stop = any(isinstance(i, TerminalState) and set(i.states) & set(HARNESS_STATES) for i in invs)
    if not invs or expects_stop or any(isinstance(i, Terminated) for i in invs):
        return invs
    return [*invs, DEFAULT[0]]


def check_all(result: FinishedRun, invariants: Iterable[Invariant]) -> list[Violation]:
    invs = list(invariants) or list(DEFAULT)
    out: list[Violation] = []
    for inv in invs:
        broke = inv.check(result)
        if type(broke) is list and not broke:  # the usual answer: nothing to group (a fuzz block checks six a run)
            continue
        groups: dict[str, list[Violation]] = {}
        for v in broke:
            groups.setdefault(v.invariant, []).append(v)
        for found in groups.values():  # one line per broken check: its first break, and how many more
            first = found[0]
            if len(found) > 1:
                first = replace(first, actual=f"{first.actual} (and {len(found) - 1} more)")
            out.append(first)
    return sorted(out, key=_by_seq) if out else out


def _by_seq(v: Violation) -> tuple[bool, int]:
    return v.seq is None, v.seq or 0


def raise_for(result: FinishedRun, violations: Sequence[Violation]) -> None:
    __tracebackhide__ = True
    if violations:
        raise InvariantViolation(result, violations)
