"""``otel``: OpenTelemetry spans with the GenAI semantic conventions, exported as JSON.

OTLP ``resourceSpans``, or a list / JSON Lines of spans with ``attributes``:
``execute_tool`` spans (``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``, the span status) and
``chat`` spans (``gen_ai.usage.input_tokens``, ``gen_ai.output.messages``); sessions by
``gen_ai.conversation.id``, else by trace id.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolchaos.errors import LogFormatError
from toolchaos.logs._conversation import NO_RESULT, Conversation, RecordedCall, RecordedTurn
from toolchaos.logs._fields import BadField, as_args, as_list, as_map, as_str, kind_of
from toolchaos.logs._files import Record
from toolchaos.logs._format import LogFormat

NAME = "otel"
_OPERATIONS = ("execute_tool", "chat", "text_completion", "generate_content")
_PARALLEL = 1e-3  # seconds: tool spans no chat span asked for, started this close, ran as one turn


@dataclass
class _Span:
    trace: str
    name: str
    start: float
    attrs: dict[str, Any]
    error: bool
    where: str


def read(records: Sequence[Record], source: str, jsonl: bool = False) -> list[Conversation]:
    """The sessions of a file's spans (JSON Lines or not: every record holds spans)."""
    sessions = _sessions(_read_spans(records, source))
    if not sessions:
        raise LogFormatError("no GenAI spans (gen_ai.operation.name execute_tool or chat) in the file", source,
                             fmt=NAME)
    out = []
    for session, group in sessions.items():
        group.sort(key=lambda s: s.start)
        turns = _Turns()
        try:
            for sp in group:
                if sp.attrs["gen_ai.operation.name"] == "execute_tool":
                    turns.tool(sp)
                else:
                    turns.chat(sp)
        except BadField as exc:  # the span's place is in the field path: no record to name
            raise LogFormatError(exc.problem, source, None, exc.field, NAME) from None
        out.append(Conversation(session, NAME, turns.turns, source))
    return out


def parse(data: Any, source: str) -> list[Conversation]:
    return read([("document", data)], source)


def _read_spans(records: Sequence[Record], source: str) -> list[_Span]:
    spans: list[_Span] = []
    for label, data in records:
        try:
            for sp in _spans_of(data, ""):
                sp.where = f"{label}: {sp.where}" if label != "document" else sp.where
                spans.append(sp)
        except BadField as exc:
            raise LogFormatError(exc.problem, source, label, exc.field, NAME) from None
    return spans


def _sessions(spans: list[_Span]) -> dict[str, list[_Span]]:
    """The GenAI spans by session: the conversation id any span of their trace names, else the trace."""
    conv_of_trace: dict[str, str] = {}
    for sp in spans:
        cid = sp.attrs.get("gen_ai.conversation.id")
        if isinstance(cid, str) and cid:
            conv_of_trace.setdefault(sp.trace, cid)
    sessions: dict[str, list[_Span]] = {}
    for sp in spans:
        op = sp.attrs.get("gen_ai.operation.name")
        if op is None and sp.name.startswith(("execute_tool", "chat")):
            op = sp.name.split()[0]
        if op not in _OPERATIONS:
            continue
        sp.attrs["gen_ai.operation.name"] = op
        sessions.setdefault(conv_of_trace.get(sp.trace, sp.trace), []).append(sp)
    return sessions


class _Turns:
    """The turns of one session, built span by span in time order."""

    def __init__(self) -> None:
        self.turns: list[RecordedTurn] = []
        self.current: RecordedTurn | None = None
        self.explicit = False  # the current turn is a chat span's that recorded its output (its calls)

    def chat(self, sp: _Span) -> None:
        tin, tout = sp.attrs.get("gen_ai.usage.input_tokens"), sp.attrs.get("gen_ai.usage.output_tokens")
        calls = _calls_of_chat(sp)
        turn = RecordedTurn(t=sp.start, tokens_in=int(tin) if isinstance(tin, (int, float)) else None,
                            tokens_out=int(tout) if isinstance(tout, (int, float)) else None)
        if calls:
            turn.calls = calls
        else:
            turn.text = _text_of_chat(sp)
        # no output messages recorded: the tool spans that follow tell what the turn asked for
        self.explicit = calls is not None
        self.turns.append(turn)
        self.current = turn

    def tool(self, sp: _Span) -> None:
        name = as_str(sp.attrs.get("gen_ai.tool.name"), f"{sp.where}.attributes[gen_ai.tool.name]")
        cid = sp.attrs.get("gen_ai.tool.call.id")
        args = as_args(sp.attrs.get("gen_ai.tool.call.arguments"), f"{sp.where}.attributes[gen_ai.tool.call.arguments]")
        result = _result(sp)
        call = self._asked(cid, name)
        if call is None:
            call = self._unasked(cid, name, args, sp.start)
        call.result, call.is_error, call.t = result, sp.error, sp.start
        if not call.args:
            call.args = args

    def _asked(self, cid: Any, name: str) -> RecordedCall | None:
        """The call of the current chat turn this tool span executed (by id, else the next of its name)."""
        if self.current is None or not self.explicit:
            return None
        return next((c for c in self.current.calls if (cid is not None and c.id == cid)
                     or (cid is None and c.tool == name and not c.has_result)), None)

    def _unasked(self, cid: Any, name: str, args: dict[str, Any], start: float) -> RecordedCall:
        """A tool span no chat span asked for: its own turn, unless it ran in parallel with the previous one."""
        current = self.current
        if current is None or self.explicit or current.t is None or abs(start - current.t) > _PARALLEL:
            current = self.current = RecordedTurn(t=start)
            self.explicit = False
            self.turns.append(current)
        call = RecordedCall(cid, name, args)
        current.calls.append(call)
        return call


def _result(sp: _Span) -> Any:
    """What the tool answered: the recorded result (JSON text parsed), else the span's error."""
    result = sp.attrs.get("gen_ai.tool.call.result", NO_RESULT)
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except json.JSONDecodeError:
            pass
    if sp.error and result is NO_RESULT:
        result = {"error": {"code": str(sp.attrs.get("error.type") or "error")}}
    return result


def _calls_of_chat(span: _Span) -> list[RecordedCall] | None:
    """The tool calls a chat span's output messages ask for; None when it recorded no output."""
    raw = span.attrs.get("gen_ai.output.messages")
    if raw is None:
        return None
    try:
        messages = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise BadField(f"{span.where}.attributes[gen_ai.output.messages]", f"not valid JSON ({exc.msg})") from None
    calls = []
    for i, m in enumerate(messages if isinstance(messages, list) else []):
        for j, part in enumerate((m or {}).get("parts") or []):
            if isinstance(part, Mapping) and part.get("type") == "tool_call":
                w = f"{span.where}.attributes[gen_ai.output.messages][{i}].parts[{j}]"
                calls.append(RecordedCall(part.get("id"), as_str(part.get("name"), f"{w}.name"),
                                          as_args(part.get("arguments"), f"{w}.arguments"), t=span.start))
    return calls


def _text_of_chat(span: _Span) -> str:
    raw = span.attrs.get("gen_ai.output.messages")
    try:
        messages = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return ""
    texts = [str(p.get("content", "")) for m in (messages or []) if isinstance(m, Mapping)
             for p in (m.get("parts") or []) if isinstance(p, Mapping) and p.get("type") == "text"]
    return "\n".join(texts)


# --- spans and their attributes, in the OTLP JSON encoding or flat -------------------------------------


def _spans_of(data: Any, where: str) -> Iterator[_Span]:
    if isinstance(data, list):
        for i, x in enumerate(data):
            yield from _spans_of(x, f"{where}[{i}]" if where else f"[{i}]")
        return
    d = as_map(data, where or "span")
    if "resourceSpans" in d:
        for i, rs in enumerate(as_list(d["resourceSpans"], f"{where}resourceSpans")):
            rw = f"{where}resourceSpans[{i}]"
            for j, ss in enumerate(as_list(as_map(rs, rw).get("scopeSpans", []), f"{rw}.scopeSpans")):
                sw = f"{rw}.scopeSpans[{j}]"
                for k, sp in enumerate(as_list(as_map(ss, sw).get("spans", []), f"{sw}.spans")):
                    yield _span(sp, f"{sw}.spans[{k}]")
        return
    if "scopeSpans" in d:
        yield from _spans_of({"resourceSpans": [d]}, where)
        return
    yield _span(d, where or "span")


def _span(raw: Any, where: str) -> _Span:
    s = as_map(raw, where)
    ctx: Mapping[str, Any] = s["context"] if isinstance(s.get("context"), Mapping) else {}
    trace = s.get("traceId", s.get("trace_id", ctx.get("trace_id")))
    if trace is None:
        raise BadField(f"{where}.traceId", "missing: every span names its trace")
    attrs = _attributes(s.get("attributes"), f"{where}.attributes")
    status: Mapping[str, Any] = s["status"] if isinstance(s.get("status"), Mapping) else {}
    code = status.get("code", status.get("status_code"))
    error = code in (2, "2", "STATUS_CODE_ERROR", "ERROR") or "error.type" in attrs
    start = _time(s.get("startTimeUnixNano", s.get("start_time")), f"{where}.startTimeUnixNano")
    return _Span(str(trace), str(s.get("name", "")), start, attrs, error, where)


def _attributes(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    out: dict[str, Any] = {}
    for i, kv in enumerate(as_list(raw, where)):
        kv = as_map(kv, f"{where}[{i}]")
        out[as_str(kv.get("key"), f"{where}[{i}].key")] = _attr_value(kv.get("value"))
    return out


def _attr_value(v: Any) -> Any:
    if not isinstance(v, Mapping):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "arrayValue" in v:
        return [_attr_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv.get("key"): _attr_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    return None


def _time(value: Any, where: str) -> float:
    """Seconds from Unix nanoseconds (a number or digits), seconds, or ISO 8601 text."""
    if value is None:
        return 0.0
    if isinstance(value, str) and value.isdigit():
        return int(value) / 1e9
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / 1e9 if value > 1e14 else float(value)
    if isinstance(value, str):
        try:
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    raise BadField(where, f"expected a time (Unix nanoseconds or ISO 8601), got {kind_of(value)}")


# --- recognition -----------------------------------------------------------------------------------------


def _is_span(data: Mapping[str, Any]) -> bool:
    return ("spanId" in data or "span_id" in data or (isinstance(data.get("context"), Mapping)
                                                      and "span_id" in data["context"])) and "attributes" in data


def _is_export(data: Mapping[str, Any]) -> bool:
    return "resourceSpans" in data or "scopeSpans" in data or _is_span(data)


def _are_spans(data: list[Any]) -> bool:
    return all(isinstance(x, Mapping) and _is_span(x) for x in data[:5])


FORMAT = LogFormat(NAME, "OpenTelemetry GenAI spans (execute_tool and chat), OTLP JSON or a list of spans",
                   "OpenTelemetry spans", 10, read, parse, record=_is_export, listing=_are_spans)
