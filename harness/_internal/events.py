"""The trace event, the project's central data contract: its kinds, its keys and their order.

Every event is a plain ``dict`` (so writing JSON and the per-call path cost nothing extra),
typed here with one ``TypedDict`` per kind so mypy checks the keys its readers use. Each
kind is built only by its constructor below, which writes the keys in the order of its
``TypedDict``: the JSON bytes of a trace depend on that order (traces are byte-identical
per seed) and the analyzer's fast path slices lines on it (``KEYS``).

Every event starts ``run seq step kind t`` (``t``: virtual seconds, rounded to the
microsecond). The kinds:

- ``model``: a model turn: the calls it asked for or its final text, token usage, and
  (over the wire) what the agent showed the model of the previous turn's results
- ``tool``: an executed tool call: normalised arguments, fingerprint, outcome class and
  code, latency, the effect-ledger count after it
- ``refusal``: a call the runtime refused before execution, with the guard it named
- ``skipped``: a call the model asked for that the runtime neither executed nor refused
- ``late``: a tool call that arrived after the run had ended (a leftover thread)
- ``api``: a model-API request the wire answered with a fault
- ``side``: a side request the wire answered itself (a title, a loop check, a classifier: see
  ``toolchaos.wire``): never a model turn of the policy
- ``end``: how the run ended: terminal state, guard, harness stop, error
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class AskedCall(TypedDict):
    """A model turn's request for one call, as its model event lists it."""

    id: str
    tool: str
    args: dict[str, Any]
    fp: str


class Shown(TypedDict):
    """One result of the previous turn as the agent sent it back to the model (wire runs only)."""

    call_id: str
    tool: str
    read_as: str  # ok, empty, error, refused, malformed, pending, missing; duplicate: refused, its effect applied before
    content: Any  # text clipped to 300 characters, or a number, a bool or None as sent


# Every kind spells out the common head, so each TypedDict reads as its event's key order.


class _ModelEvent(TypedDict):
    run: str
    seq: int
    step: int
    kind: Literal["model"]
    t: float
    calls: list[AskedCall]
    final: str | None
    tokens_in: int
    tokens_out: int


class ModelEvent(_ModelEvent, total=False):
    shown: list[Shown]  # added after the turn by the wire (``RunState.show``), so it comes last


# The functional syntax because ``class`` is a key.
ToolEvent = TypedDict("ToolEvent", {
    "run": str, "seq": int, "step": int, "kind": Literal["tool"], "t": float,
    "latency": float, "tool": str, "call_no": int, "args": dict[str, Any], "fp": str, "call_id": str | None,
    "outcome": str, "class": str, "code": str, "retry_after": float | None, "executed": Literal[True],
    "effects": int | None,
    "attempt": NotRequired[int],  # only on a transport retry: the 2nd, 3rd... execution of one request
})


class RefusalEvent(TypedDict):
    run: str
    seq: int
    step: int
    kind: Literal["refusal"]
    t: float
    tool: str
    args: dict[str, Any]
    fp: str
    call_id: str | None
    guard: str
    reason: str
    executed: Literal[False]


class SkippedEvent(TypedDict):
    run: str
    seq: int
    step: int
    kind: Literal["skipped"]
    t: float
    tool: str
    fp: str
    call_id: str
    executed: Literal[False]


class LateEvent(TypedDict):
    run: str
    seq: int
    step: int
    kind: Literal["late"]
    t: float
    tool: str
    args: dict[str, Any]
    fp: str
    executed: Literal[False]


class ApiEvent(TypedDict):
    run: str
    seq: int
    step: int
    kind: Literal["api"]
    t: float
    tool: str  # the model API (``openai.chat``, ``anthropic.messages``, ...)
    request: int
    code: str
    status: int | None
    retry_after: float | None
    args: dict[str, Any]  # {"url": ...}


class SideEvent(TypedDict):
    run: str
    seq: int
    step: int  # the policy's turn it came after: a side request takes none
    kind: Literal["side"]
    t: float
    tool: str  # the model API (``openai.chat``, ``gemini``, ...), as an ``api`` event names it
    request: int
    why: str  # ``schema`` (a response schema or a forced output tool), ``no_tools``, or ``probe`` (one output token)
    answer: str  # the text answered, or the JSON of the instance
    tokens_in: int
    tokens_out: int


class EndEvent(TypedDict):
    run: str
    seq: int
    step: int
    kind: Literal["end"]
    t: float
    state: str
    guard: str | None
    reason: str | None
    harness_stop: str | None
    error: str | None


Event = ModelEvent | ToolEvent | RefusalEvent | SkippedEvent | LateEvent | ApiEvent | SideEvent | EndEvent
# A call that reached the toolbox: executed, refused, or asked for and left, or too late.
CallEvent = ToolEvent | RefusalEvent | SkippedEvent | LateEvent

_TYPES: dict[str, type[Any]] = {"model": ModelEvent, "tool": ToolEvent, "refusal": RefusalEvent,
                                "skipped": SkippedEvent, "late": LateEvent, "api": ApiEvent, "side": SideEvent,
                                "end": EndEvent}
KINDS: tuple[str, ...] = tuple(_TYPES)
# The key order each kind is written in (a TypedDict's annotations keep their order).
KEYS: dict[str, tuple[str, ...]] = {kind: tuple(td.__annotations__) for kind, td in _TYPES.items()}


# --- constructors: positional, since the tool event's is on the per-call path ---------------


def model_event(run: str, seq: int, step: int, t: float, calls: list[AskedCall], final: str | None,
          tokens_in: int, tokens_out: int) -> ModelEvent:
    return {"run": run, "seq": seq, "step": step, "kind": "model", "t": round(t, 6), "calls": calls,
            "final": final, "tokens_in": tokens_in, "tokens_out": tokens_out}


def tool_event(run: str, seq: int, step: int, t: float, latency: float, name: str, call_no: int, args: dict[str, Any],
         fp: str, call_id: str | None, outcome: str, cls: str, code: str, retry_after: float | None,
         effects: int | None) -> ToolEvent:
    return {"run": run, "seq": seq, "step": step, "kind": "tool", "t": round(t, 6), "latency": latency,
            "tool": name, "call_no": call_no, "args": args, "fp": fp, "call_id": call_id, "outcome": outcome,
            "class": cls, "code": code, "retry_after": retry_after, "executed": True, "effects": effects}


def refusal_event(run: str, seq: int, step: int, t: float, name: str, args: dict[str, Any], fp: str,
            call_id: str | None, guard: str, reason: str) -> RefusalEvent:
    return {"run": run, "seq": seq, "step": step, "kind": "refusal", "t": round(t, 6), "tool": name,
            "args": args, "fp": fp, "call_id": call_id, "guard": guard, "reason": reason, "executed": False}


def skipped_event(run: str, seq: int, step: int, t: float, name: str, fp: str, call_id: str) -> SkippedEvent:
    return {"run": run, "seq": seq, "step": step, "kind": "skipped", "t": round(t, 6), "tool": name, "fp": fp,
            "call_id": call_id, "executed": False}


def late_event(run: str, seq: int, step: int, t: float, name: str, args: dict[str, Any], fp: str) -> LateEvent:
    return {"run": run, "seq": seq, "step": step, "kind": "late", "t": round(t, 6), "tool": name, "args": args,
            "fp": fp, "executed": False}


def api_event(run: str, seq: int, step: int, t: float, name: str, request: int, code: str, status: int | None,
        retry_after: float | None, url: str) -> ApiEvent:
    return {"run": run, "seq": seq, "step": step, "kind": "api", "t": round(t, 6), "tool": name,
            "request": request, "code": code, "status": status, "retry_after": retry_after, "args": {"url": url}}


def side_event(run: str, seq: int, step: int, t: float, name: str, request: int, why: str, answer: str,
               tokens_in: int, tokens_out: int) -> SideEvent:
    return {"run": run, "seq": seq, "step": step, "kind": "side", "t": round(t, 6), "tool": name, "request": request,
            "why": why, "answer": answer, "tokens_in": tokens_in, "tokens_out": tokens_out}


def end_event(run: str, seq: int, step: int, t: float, state: str, guard: str | None, reason: str | None,
        harness_stop: str | None, error: str | None) -> EndEvent:
    return {"run": run, "seq": seq, "step": step, "kind": "end", "t": round(t, 6), "state": state, "guard": guard,
            "reason": reason, "harness_stop": harness_stop, "error": error}
