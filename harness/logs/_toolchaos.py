"""``toolchaos``: the harness's own JSON Lines traces, one session per ``run``.

A model event's calls are the turn's decisions; the tool, refusal and skipped events
that answer them (by ``call_id``) keep the whole event as the call's ``outcome``, so a
replay reproduces the outcome, the code and the latency the run recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolchaos._internal.events import KINDS
from toolchaos.errors import LogFormatError
from toolchaos.logs._conversation import Conversation, RecordedCall, RecordedTurn
from toolchaos.logs._fields import BadField, kind_of, number
from toolchaos.logs._files import Record
from toolchaos.logs._format import LogFormat

NAME = "toolchaos"
_CALL_KINDS = ("tool", "refusal", "skipped")  # events about one call the model asked for


def read(records: Sequence[Record], source: str, jsonl: bool = False) -> list[Conversation]:
    """The runs of a trace, in the order they first appear."""
    sessions: dict[str, _Session] = {}
    for label, event in records:
        if not isinstance(event, Mapping):
            raise LogFormatError(f"expected a trace event (an object), got {kind_of(event)}", source, label,
                                 fmt=NAME)
        # A hand-written trace (model turns only: {"kind": "model", "calls": [...]}) names no run:
        # its events are one session, named after the file as the other formats' sessions are.
        run = event.get("run", Path(source).name)
        kind = event.get("kind")
        if not isinstance(run, str) or not isinstance(kind, str):
            raise LogFormatError("missing: every trace event has a run and a kind", source, label,
                                 "run" if not isinstance(run, str) else "kind", NAME)
        session = sessions.get(run)
        if session is None:
            session = sessions[run] = _Session(Conversation(run, NAME, [], source))
        try:
            session.add(kind, event)
        except BadField as exc:
            raise LogFormatError(exc.problem, source, label, exc.field, NAME) from None
    return [s.conversation for s in sessions.values()]


def parse(data: Any, source: str) -> list[Conversation]:
    """A parsed trace: a list of events, or one event."""
    return read([("document", d) for d in (data if isinstance(data, list) else [data])], source)


class _Session:
    """One run's turns, and its calls by id for the events that answer them."""

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.asked: dict[str, RecordedCall] = {}

    def add(self, kind: str, event: Mapping[str, Any]) -> None:
        t = number(event.get("t"))
        if kind == "model":
            self._model(event, t)
        elif kind in _CALL_KINDS:
            self._call(kind, event, t)

    def _model(self, event: Mapping[str, Any], t: float | None) -> None:
        turn = RecordedTurn(t=t, tokens_in=event.get("tokens_in"), tokens_out=event.get("tokens_out"))
        for i, c in enumerate(event.get("calls") or []):
            if not isinstance(c, Mapping) or not isinstance(c.get("tool"), str):
                raise BadField(f"calls[{i}]", "expected {id, tool, args}")
            call = RecordedCall(c.get("id"), c["tool"], dict(c.get("args") or {}), t=t)
            turn.calls.append(call)
            if call.id is not None:
                self.asked[str(call.id)] = call
        if not turn.calls:
            turn.text = str(event.get("final") or "")
        self.conversation.turns.append(turn)

    def _call(self, kind: str, event: Mapping[str, Any], t: float | None) -> None:
        cid = event.get("call_id")
        call = self.asked.get(str(cid)) if cid is not None else None
        if call is None:  # executed outside any recorded request: keep it as a call of its own turn
            call = RecordedCall(cid, str(event.get("tool")), dict(event.get("args") or {}), t=t)
            self.conversation.turns.append(RecordedTurn([call], t=t))
        call.t = t
        call.executed = kind == "tool"
        call.outcome = dict(event)
        if kind == "tool":
            call.result = {"outcome": event.get("outcome"), "code": event.get("code")}
            call.is_error = event.get("class") not in ("SUCCESS", "PENDING")


def _is_trace_event(data: Mapping[str, Any]) -> bool:
    if "kind" not in data:
        return False
    if "run" in data:
        return True
    # Without a run: only a kind of ours, on a record no other format would write (OTel spans
    # have a `kind` too, but are told apart earlier by their span id and attributes).
    return data.get("kind") in KINDS and not ({"role", "type", "attributes"} & data.keys())


def _is_event(data: Mapping[str, Any]) -> bool:
    """A trace event: as the engine writes it (run and seq), or hand-written (no run)."""
    return _is_trace_event(data) and ("seq" in data or "run" not in data)


def _starts_with_event(data: list[Any]) -> bool:
    return isinstance(data[0], Mapping) and _is_trace_event(data[0])


FORMAT = LogFormat(NAME, "toolchaos traces: the harness's own JSON Lines, one session per run",
                   "a toolchaos trace", 20, read, parse, record=_is_event, listing=_starts_with_event)
