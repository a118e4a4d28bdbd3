"""Import real agent logs: the model's decisions (to replay) and the calls (to analyse).

Formats (``format="auto"`` detects them):

- ``toolchaos``: the harness's own JSON Lines traces (one session per ``run``).
- ``openai-chat``: OpenAI Chat Completions messages: a list of messages, a request body
  (``{"messages": [...]}``, optionally with its ``response``), or a ``chat.completion``
  response; assistant ``tool_calls`` (``function.name``, ``function.arguments`` as JSON
  text) and ``tool`` messages answering them by ``tool_call_id``.
- ``openai-responses``: OpenAI Responses items: ``function_call`` (``call_id``, ``name``,
  ``arguments``), ``function_call_output`` (``call_id``, ``output``) and ``message``
  items, as a list, a request (``{"input": [...]}``), a response (``{"output": [...]}``)
  or both.
- ``anthropic``: Anthropic Messages conversations: ``tool_use`` blocks (``id``, ``name``,
  ``input``) in assistant messages, ``tool_result`` blocks (``tool_use_id``, ``content``,
  ``is_error``) in user messages; a list, a request (``{"messages": [...]}``) or a
  ``message`` response.
- ``otel``: OpenTelemetry spans with the GenAI semantic conventions, exported as JSON
  (OTLP ``resourceSpans``, or a list / JSON Lines of spans with ``attributes``):
  ``execute_tool`` spans (``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``, the span status) and
  ``chat`` spans (``gen_ai.usage.input_tokens``, ``gen_ai.output.messages``); sessions
  by ``gen_ai.conversation.id``, else by trace id.

A file is one JSON document or JSON Lines (one record per line; each record is one of
the shapes above). A log that cannot be read raises ``LogFormatError`` naming the file,
the record (line) and the field (``messages[3].tool_calls[0].function.arguments``).

Replay: ``conversation(path, format, session)`` is the one session to replay and
``Conversation.decisions()`` its model turns: the one conversion ``toolchaos replay``
and the ``recorded`` policy (``policy: {recorded: {path, format, session}}`` in a
scenario) both use (``toolchaos.policies.recorded(path)``); ``replay_tools(conversation)``
gives fake tools whose schedules answer each call as the log says it was answered (a
timeout, a 503, the recorded data), so the pre-fix call sequence meets the same tool
behaviour.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from toolchaos._internal.model import Decision, interpret
from toolchaos.errors import LogFormatError, did_you_mean
from toolchaos.fake_tools import FakeTool, catalogue, fake_tool
from toolchaos.fake_tools import faults as F
from toolchaos.fake_tools._faults import Fault
from toolchaos.fake_tools._fingerprint import canonical, digest, normalise

FORMATS = ("toolchaos", "openai-chat", "openai-responses", "anthropic", "otel")


class _Bad(Exception):
    """Raised by the parsers with the field path; re-raised as ``LogFormatError`` with the record."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field, self.problem = field, problem


# --- the imported conversation ----------------------------------------------------------------

_NO_RESULT: Any = object()


@dataclass
class RecordedCall:
    """One tool call as the log records it, with its answer when the log has one."""

    id: str | None
    tool: str
    args: dict[str, Any]
    result: Any = _NO_RESULT  # what the tool answered (content), _NO_RESULT when unknown
    is_error: bool | None = None
    t: float | None = None  # seconds (epoch or since the run began), when the log has times
    executed: bool = True  # False for a call the runtime refused
    outcome: Mapping[str, Any] | None = None  # toolchaos traces: the tool event (outcome, class, code, ...)

    @property
    def has_result(self) -> bool:
        return self.result is not _NO_RESULT

    @property
    def fp(self) -> str:
        """The call's fingerprint, as the harness computes it (name + normalised arguments)."""
        if self.outcome is not None and isinstance(self.outcome.get("fp"), str):
            return str(self.outcome["fp"])
        return digest(self.tool + "\x00" + canonical(normalise(self.args)))


@dataclass
class RecordedTurn:
    """One model turn: the calls it asked for, or its final text."""

    calls: list[RecordedCall] = field(default_factory=list)
    text: str | None = None
    t: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    estimated: bool = False  # tokens estimated from the conversation's length (the log has no usage)

    def decision(self) -> Decision:
        if self.calls:
            return Decision.many([(c.tool, dict(c.args)) for c in self.calls])
        return Decision.final(self.text or "")


@dataclass
class Conversation:
    """One session of a log: its model turns, in order."""

    session: str
    format: str
    turns: list[RecordedTurn] = field(default_factory=list)
    source: str = "<log>"

    def decisions(self) -> list[Decision]:
        return [t.decision() for t in self.turns]

    @property
    def calls(self) -> list[RecordedCall]:
        return [c for t in self.turns for c in t.calls]

    def tool_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.calls:
            seen.setdefault(c.tool, None)
        return list(seen)


# --- reading files ---------------------------------------------------------------------------------


def open_text(path: str | Path) -> IO[str]:
    """A text stream over a file, gunzipped when it is gzip (by its magic bytes)."""
    p = Path(path)
    with p.open("rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(p, "rt", encoding="utf-8")
    return p.open(encoding="utf-8")


def read_records(path: str | Path) -> tuple[list[tuple[str, Any]], bool]:
    """(record label, parsed JSON) for the file: one document, or one record per JSON Lines line.

    The second value tells whether the file was JSON Lines.
    """
    source = str(path)
    with open_text(path) as fh:
        text = fh.read()
    stripped = text.strip()
    if not stripped:
        raise LogFormatError("the file is empty", source)
    try:
        return [("document", json.loads(stripped))], False
    except json.JSONDecodeError as whole:
        records: list[tuple[str, Any]] = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append((f"line {n}", json.loads(line)))
            except json.JSONDecodeError as exc:
                if not records:  # not JSON Lines either: report the document's own error
                    raise LogFormatError(f"not valid JSON ({whole.msg} at line {whole.lineno}, column "
                                         f"{whole.colno})", source) from None
                raise LogFormatError(f"not valid JSON ({exc.msg} at column {exc.colno})", source,
                                     f"line {n}") from None
        return records, True


def _unknown_format(format: str, source: str) -> LogFormatError:
    return LogFormatError(f"unknown format {format!r}{did_you_mean(format, ('auto', *FORMATS))} "
                          f"(known: auto, {', '.join(FORMATS)})", source, option="format")


def load(path: str | Path, format: str = "auto") -> list[Conversation]:
    """The sessions of a log file (any of ``FORMATS``, gzip or not)."""
    source = str(path)
    if format != "auto" and format not in FORMATS:  # before reading: a typo is reported even for a missing file
        raise _unknown_format(format, source)
    records, jsonl = read_records(path)
    if format == "auto":
        format = detect(records[0][1], source, records[0][0])
    if format == "toolchaos":
        return _from_toolchaos(records, source)
    if format == "otel":
        return _from_otel(records, source)
    out: list[Conversation] = []
    parse = {"openai-chat": _chat, "openai-responses": _responses, "anthropic": _anthropic}[format]
    # JSON Lines of messages (or items) is one conversation; JSON Lines of documents is one each
    if jsonl and all(_is_message_like(r, format) for _, r in records):
        records = [("document", [r for _, r in records])]
    for label, data in records:
        try:
            turns = parse(data)
        except _Bad as exc:
            raise LogFormatError(exc.problem, source, label, exc.field, format) from None
        name = f"{Path(source).name}" if len(records) == 1 else f"{Path(source).name}:{label.replace(' ', '')}"
        out.append(Conversation(_session_id(data) or name, format, turns, source))
    return out


def parse(data: Any, format: str = "auto", source: str = "<data>") -> list[Conversation]:
    """The sessions of an already parsed JSON document."""
    if format == "auto":
        format = detect(data, source, "document")
    if format == "toolchaos":
        return _from_toolchaos([("document", d) for d in (data if isinstance(data, list) else [data])], source)
    if format == "otel":
        return _from_otel([("document", data)], source)
    fn = {"openai-chat": _chat, "openai-responses": _responses, "anthropic": _anthropic}.get(format)
    if fn is None:
        raise _unknown_format(format, source)
    try:
        return [Conversation(_session_id(data) or source, format, fn(data), source)]
    except _Bad as exc:
        raise LogFormatError(exc.problem, source, "document", exc.field, format) from None


def _session_id(data: Any) -> str | None:
    if isinstance(data, Mapping):
        for key in ("conversation_id", "session_id", "id"):
            if isinstance(data.get(key), str) and key != "id":
                return str(data[key])
        meta = data.get("metadata")
        if isinstance(meta, Mapping):
            for key in ("conversation_id", "session_id"):
                if isinstance(meta.get(key), str):
                    return str(meta[key])
    return None


def _is_message_like(record: Any, fmt: str) -> bool:
    if not isinstance(record, Mapping):
        return False
    if fmt == "openai-responses":
        return "type" in record and record.get("object") != "response" and "output" not in record
    return "role" in record and "messages" not in record


# --- detection ------------------------------------------------------------------------------------

# The event kinds the engine writes; a hand-written trace may give only ``kind`` (no run, no seq).
_TRACE_KINDS = ("model", "tool", "refusal", "skipped", "late", "end")


def _is_trace_event(data: Mapping[str, Any]) -> bool:
    if "kind" not in data:
        return False
    if "run" in data:
        return True
    # Without a run: only a kind of ours, on a record no other format would write (OTel spans
    # have a `kind` too, but are told apart earlier by their span id and attributes).
    return data.get("kind") in _TRACE_KINDS and not ({"role", "type", "attributes"} & data.keys())


_RESPONSE_ITEMS = {"function_call", "function_call_output", "reasoning", "message", "input_text", "web_search_call",
                   "file_search_call", "computer_call", "computer_call_output", "custom_tool_call",
                   "custom_tool_call_output"}


def detect(data: Any, source: str = "<log>", record: str = "document") -> str:
    """The format of one parsed record (see ``FORMATS``)."""
    if isinstance(data, Mapping):
        if "resourceSpans" in data or "scopeSpans" in data or _is_span(data):
            return "otel"
        if _is_trace_event(data) and ("seq" in data or "run" not in data):
            return "toolchaos"
        if data.get("object") == "response" or ("output" in data and isinstance(data.get("output"), list)) or (
                "input" in data and isinstance(data.get("input"), list)):
            return "openai-responses"
        if (data.get("type") in _RESPONSE_ITEMS and "role" not in data) or data.get("type") == "function_call":
            return "openai-responses"
        if data.get("type") == "message" and isinstance(data.get("content"), list):
            return "anthropic"
        if data.get("object") == "chat.completion" or "choices" in data:
            return "openai-chat"
        if "messages" in data:
            return detect(data["messages"], source, record)
        if "role" in data:
            return detect([data], source, record)
    if isinstance(data, list) and data:
        if all(isinstance(x, Mapping) and _is_span(x) for x in data[:5]):
            return "otel"
        if isinstance(data[0], Mapping) and _is_trace_event(data[0]):
            return "toolchaos"
        for item in data:
            if not isinstance(item, Mapping):
                continue
            t = item.get("type")
            if t in ("function_call", "function_call_output", "reasoning") or (
                    t == "message" and "role" in item and isinstance(item.get("content"), list)
                    and any(isinstance(b, Mapping) and str(b.get("type", "")).startswith(("input_", "output_"))
                            for b in item["content"])):
                return "openai-responses"
            content = item.get("content")
            if isinstance(content, list) and any(isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result")
                                                 for b in content):
                return "anthropic"
            if item.get("tool_calls") or item.get("role") == "tool":
                return "openai-chat"
        if all(isinstance(x, Mapping) and "role" in x for x in data):
            return "openai-chat"  # plain text messages: the chat shape reads them
    raise LogFormatError("cannot tell the log format (expected OpenAI chat messages, OpenAI Responses items, "
                         "Anthropic messages, OpenTelemetry spans or a toolchaos trace); name the format (--format, or "
                         "`format:` of a recorded policy)", source, record, option="format")


def _is_span(data: Mapping[str, Any]) -> bool:
    return ("spanId" in data or "span_id" in data or (isinstance(data.get("context"), Mapping)
                                                      and "span_id" in data["context"])) and "attributes" in data


# --- shared helpers -----------------------------------------------------------------------------


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad(where, f"expected a list, got {_kind(value)}")
    return value


def _map(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Bad(where, f"expected an object, got {_kind(value)}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Bad(where, f"expected a non-empty string, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})" if value else "an empty string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _args(value: Any, where: str) -> dict[str, Any]:
    """Tool arguments: an object, or JSON text of one (empty text = no arguments)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _Bad(where, f"not valid JSON ({exc.msg} at column {exc.colno}): {value[:60]!r}") from None
    if not isinstance(value, Mapping):
        raise _Bad(where, f"expected the arguments as an object, got {_kind(value)}")
    return dict(value)


def _text(content: Any) -> str | None:
    """The text of a message content: a string, or the text of its parts/blocks."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, Mapping):
                for key in ("text", "content", "output_text"):
                    if isinstance(b.get(key), str):
                        parts.append(b[key])
                        break
        return "\n".join(parts)
    return json.dumps(content, default=str)


class _Estimator:
    """Input tokens of each turn estimated from the conversation so far (~4 characters a token)."""

    def __init__(self) -> None:
        self.chars = 0

    def add(self, message: Any) -> None:
        self.chars += len(json.dumps(message, default=str, ensure_ascii=False, separators=(",", ":")))

    def tokens(self) -> int:
        return 8 + self.chars // 4


def _attach(turns: list[RecordedTurn], call_id: Any, result: Any, is_error: bool | None, where: str) -> None:
    for turn in reversed(turns):
        for c in turn.calls:
            if c.id == call_id:
                c.result, c.is_error = result, is_error
                if _refused(result):
                    c.executed = False
                return
    raise _Bad(where, f"answers the call id {call_id!r}, which no earlier turn asked for")


def _refused(result: Any) -> bool:
    if isinstance(result, Mapping) and result.get("refused"):
        return True
    return isinstance(result, str) and interpret(result)[0] == "refused"


def _usage(data: Any) -> tuple[int | None, int | None]:
    if not isinstance(data, Mapping):
        return None, None
    u = data.get("usage")
    if not isinstance(u, Mapping):
        return None, None
    tin = u.get("input_tokens", u.get("prompt_tokens"))
    tout = u.get("output_tokens", u.get("completion_tokens"))
    return (int(tin) if isinstance(tin, (int, float)) else None, int(tout) if isinstance(tout, (int, float)) else None)


# --- OpenAI Chat Completions --------------------------------------------------------------------


def _chat(data: Any) -> list[RecordedTurn]:
    messages: list[Any]
    prefix = "messages"
    tail: list[tuple[str, Any]] = []
    usage: tuple[int | None, int | None] = (None, None)
    if isinstance(data, Mapping):
        response = data.get("response") if isinstance(data.get("response"), Mapping) else None
        if "messages" in data:
            messages = _list(data["messages"], "messages")
        elif "choices" in data:
            messages, prefix = [], ""
            response = data
        else:
            raise _Bad("messages", "missing: expected a list of messages, a request with `messages` or a "
                                   "chat.completion response with `choices`")
        if response is not None:
            base = "response." if response is not data else ""
            for i, choice in enumerate(_list(response.get("choices"), f"{base}choices")):
                tail.append((f"{base}choices[{i}].message", _map(choice, f"{base}choices[{i}]").get("message")))
                break  # the first choice is the one the agent used
            usage = _usage(response)
    else:
        messages = _list(data, "messages")
    turns: list[RecordedTurn] = []
    est = _Estimator()
    items = [(f"{prefix}[{i}]" if prefix else f"[{i}]", m) for i, m in enumerate(messages)] + tail
    for where, msg in items:
        m = _map(msg, where)
        role = m.get("role")
        if role is None:
            raise _Bad(f"{where}.role", "missing: every message has a role (system, user, assistant, tool)")
        if role == "assistant":
            turn = RecordedTurn(t=_num(m.get("created")), tokens_in=est.tokens(), estimated=True)
            for j, call in enumerate(m.get("tool_calls") or []):
                cw = f"{where}.tool_calls[{j}]"
                c = _map(call, cw)
                fn = c.get("function")
                if fn is None and "name" in c:  # the harness's neutral format: {"id", "name", "arguments"}
                    fn = c
                fn = _map(fn, f"{cw}.function")
                name = _str(fn.get("name"), f"{cw}.function.name")
                turn.calls.append(RecordedCall(c.get("id"), name, _args(fn.get("arguments"), f"{cw}.function.arguments")))
            if not turn.calls:
                turn.text = _text(m.get("content")) or ""
            turns.append(turn)
        elif role in ("tool", "function"):
            cid = m.get("tool_call_id") if role == "tool" else None
            if role == "tool" and cid is None:
                raise _Bad(f"{where}.tool_call_id", "missing: a tool message names the call it answers")
            if role == "function":  # legacy function messages answer the last call of that name
                fname = m.get("name")
                cid = next((c.id for t in reversed(turns) for c in t.calls if c.tool == fname), None)
            _attach(turns, cid, m.get("content"), None, f"{where}.tool_call_id")
        est.add(m)
    _apply_usage(turns, usage)
    return turns


def _apply_usage(turns: list[RecordedTurn], usage: tuple[int | None, int | None]) -> None:
    """A response's real usage replaces the estimate only when it is the sole turn (mixing the
    two would make the growth per turn meaningless)."""
    if len(turns) == 1 and usage != (None, None):
        turns[0].tokens_in, turns[0].tokens_out, turns[0].estimated = usage[0], usage[1], False


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# --- OpenAI Responses -------------------------------------------------------------------------------


def _responses(data: Any) -> list[RecordedTurn]:
    items: list[tuple[str, Any]] = []
    usage: tuple[int | None, int | None] = (None, None)
    if isinstance(data, Mapping):
        found = False
        if "input" in data:
            inp = data["input"]
            if isinstance(inp, str):
                inp = [{"type": "message", "role": "user", "content": inp}]
            items += [(f"input[{i}]", x) for i, x in enumerate(_list(inp, "input"))]
            found = True
        response: Mapping[str, Any] = data["response"] if isinstance(data.get("response"), Mapping) else data
        if "output" in response:
            base = "response.output" if response is not data else "output"
            items += [(f"{base}[{i}]", x) for i, x in enumerate(_list(response["output"], base))]
            usage = _usage(response)
            found = True
        if not found:
            raise _Bad("input", "missing: expected a list of items, a request with `input` or a response with "
                                "`output`")
    else:
        items = [(f"[{i}]", x) for i, x in enumerate(_list(data, "items"))]
    turns: list[RecordedTurn] = []
    est = _Estimator()
    current: RecordedTurn | None = None
    for where, raw in items:
        item = _map(raw, where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind is None:
            raise _Bad(f"{where}.type", "missing: every item has a type (message, function_call, "
                                        "function_call_output, ...)")
        if kind in ("function_call", "custom_tool_call"):
            if current is None:
                current = RecordedTurn(tokens_in=est.tokens(), estimated=True)
                turns.append(current)
            cid = item.get("call_id", item.get("id"))
            if cid is None:
                raise _Bad(f"{where}.call_id", "missing: a function_call names its call_id")
            name = _str(item.get("name"), f"{where}.name")
            raw_args = item.get("arguments") if kind == "function_call" else {"input": item.get("input")}
            current.calls.append(RecordedCall(str(cid), name, _args(raw_args, f"{where}.arguments")))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            current = None
            cid = item.get("call_id")
            if cid is None:
                raise _Bad(f"{where}.call_id", "missing: a function_call_output names the call_id it answers")
            _attach(turns, str(cid), item.get("output"), None, f"{where}.call_id")
        elif kind == "message":
            current = None
            if item.get("role") == "assistant":
                turns.append(RecordedTurn(text=_text(item.get("content")) or "", tokens_in=est.tokens(),
                                          estimated=True))
        else:  # reasoning and hosted-tool items: not decisions of the agent's runtime
            pass
        est.add(item)
    _apply_usage(turns, usage)
    return turns


# --- Anthropic Messages --------------------------------------------------------------------------


def _anthropic(data: Any) -> list[RecordedTurn]:
    usage: tuple[int | None, int | None] = (None, None)
    if isinstance(data, Mapping):
        if data.get("type") == "message" and "content" in data:
            messages, prefix = [data], ""
            usage = _usage(data)
        elif "messages" in data:
            messages, prefix = _list(data["messages"], "messages"), "messages"
            response = data.get("response")
            if isinstance(response, Mapping):
                messages = [*messages, response]
                usage = _usage(response)
        else:
            raise _Bad("messages", "missing: expected a list of messages, a request with `messages` or a "
                                   "message response")
    else:
        messages, prefix = _list(data, "messages"), "messages"
    turns: list[RecordedTurn] = []
    est = _Estimator()
    for i, raw in enumerate(messages):
        where = f"{prefix}[{i}]" if prefix else "message"
        m = _map(raw, where)
        role = m.get("role")
        if role not in ("user", "assistant"):
            raise _Bad(f"{where}.role", f"expected 'user' or 'assistant', got {_kind(role)}")
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if role == "assistant":
            turn = RecordedTurn(tokens_in=est.tokens(), estimated=True)
            for j, raw_block in enumerate(blocks):
                bw = f"{where}.content[{j}]"
                b = _map(raw_block, bw)
                if b.get("type") == "tool_use":
                    cid = b.get("id")
                    if cid is None:
                        raise _Bad(f"{bw}.id", "missing: a tool_use block has an id")
                    turn.calls.append(RecordedCall(str(cid), _str(b.get("name"), f"{bw}.name"),
                                                   _args(b.get("input"), f"{bw}.input")))
            if not turn.calls:
                turn.text = _text([b for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"]) or ""
            turns.append(turn)
        else:
            for j, raw_block in enumerate(blocks):
                bw = f"{where}.content[{j}]"
                b = raw_block if isinstance(raw_block, Mapping) else {}
                if b.get("type") == "tool_result":
                    cid = b.get("tool_use_id")
                    if cid is None:
                        raise _Bad(f"{bw}.tool_use_id", "missing: a tool_result block names the tool_use_id it "
                                                        "answers")
                    result = b.get("content")
                    if isinstance(result, list):
                        result = _text(result)
                    err = b.get("is_error")
                    _attach(turns, str(cid), result, bool(err) if err is not None else None, f"{bw}.tool_use_id")
        est.add(m)
    _apply_usage(turns, usage)
    return turns


# --- OpenTelemetry GenAI spans -------------------------------------------------------------------


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


def _attributes(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    out: dict[str, Any] = {}
    for i, kv in enumerate(_list(raw, where)):
        kv = _map(kv, f"{where}[{i}]")
        out[_str(kv.get("key"), f"{where}[{i}].key")] = _attr_value(kv.get("value"))
    return out


@dataclass
class _Span:
    trace: str
    span: str
    parent: str | None
    name: str
    start: float
    attrs: dict[str, Any]
    error: bool
    where: str


def _time(value: Any, where: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, str) and value.isdigit():
        return int(value) / 1e9
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / 1e9 if value > 1e14 else float(value)
    if isinstance(value, str):
        import datetime as _dt

        try:
            return _dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    raise _Bad(where, f"expected a time (Unix nanoseconds or ISO 8601), got {_kind(value)}")


def _spans_of(data: Any, where: str) -> Iterator[_Span]:
    if isinstance(data, list):
        for i, x in enumerate(data):
            yield from _spans_of(x, f"{where}[{i}]" if where else f"[{i}]")
        return
    d = _map(data, where or "span")
    if "resourceSpans" in d:
        for i, rs in enumerate(_list(d["resourceSpans"], f"{where}resourceSpans")):
            rw = f"{where}resourceSpans[{i}]"
            for j, ss in enumerate(_list(_map(rs, rw).get("scopeSpans", []), f"{rw}.scopeSpans")):
                sw = f"{rw}.scopeSpans[{j}]"
                for k, sp in enumerate(_list(_map(ss, sw).get("spans", []), f"{sw}.spans")):
                    yield _span(sp, f"{sw}.spans[{k}]")
        return
    if "scopeSpans" in d:
        yield from _spans_of({"resourceSpans": [d]}, where)
        return
    yield _span(d, where or "span")


def _span(raw: Any, where: str) -> _Span:
    s = _map(raw, where)
    ctx: Mapping[str, Any] = s["context"] if isinstance(s.get("context"), Mapping) else {}
    trace = s.get("traceId", s.get("trace_id", ctx.get("trace_id")))
    span_id = s.get("spanId", s.get("span_id", ctx.get("span_id")))
    if trace is None:
        raise _Bad(f"{where}.traceId", "missing: every span names its trace")
    attrs = _attributes(s.get("attributes"), f"{where}.attributes")
    status: Mapping[str, Any] = s["status"] if isinstance(s.get("status"), Mapping) else {}
    code = status.get("code", status.get("status_code"))
    error = code in (2, "2", "STATUS_CODE_ERROR", "ERROR") or "error.type" in attrs
    start = _time(s.get("startTimeUnixNano", s.get("start_time")), f"{where}.startTimeUnixNano")
    return _Span(str(trace), str(span_id), s.get("parentSpanId") or s.get("parent_id") or None,
                 str(s.get("name", "")), start, attrs, error, where)


def _otel_calls_of_chat(span: _Span) -> list[RecordedCall] | None:
    raw = span.attrs.get("gen_ai.output.messages")
    if raw is None:
        return None
    try:
        messages = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise _Bad(f"{span.where}.attributes[gen_ai.output.messages]", f"not valid JSON ({exc.msg})") from None
    calls = []
    for i, m in enumerate(messages if isinstance(messages, list) else []):
        for j, part in enumerate((m or {}).get("parts") or []):
            if isinstance(part, Mapping) and part.get("type") == "tool_call":
                w = f"{span.where}.attributes[gen_ai.output.messages][{i}].parts[{j}]"
                calls.append(RecordedCall(part.get("id"), _str(part.get("name"), f"{w}.name"),
                                          _args(part.get("arguments"), f"{w}.arguments"), t=span.start))
    return calls


def _otel_text_of_chat(span: _Span) -> str:
    raw = span.attrs.get("gen_ai.output.messages")
    try:
        messages = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return ""
    texts = [str(p.get("content", "")) for m in (messages or []) if isinstance(m, Mapping)
             for p in (m.get("parts") or []) if isinstance(p, Mapping) and p.get("type") == "text"]
    return "\n".join(texts)


def _from_otel(records: Sequence[tuple[str, Any]], source: str) -> list[Conversation]:
    spans: list[_Span] = []
    for label, data in records:
        try:
            for sp in _spans_of(data, ""):
                sp.where = f"{label}: {sp.where}" if label != "document" else sp.where
                spans.append(sp)
        except _Bad as exc:
            raise LogFormatError(exc.problem, source, label, exc.field, "otel") from None
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
        if op not in ("execute_tool", "chat", "text_completion", "generate_content"):
            continue
        sp.attrs["gen_ai.operation.name"] = op
        sessions.setdefault(conv_of_trace.get(sp.trace, sp.trace), []).append(sp)
    if not sessions:
        raise LogFormatError("no GenAI spans (gen_ai.operation.name execute_tool or chat) in the file", source,
                             fmt="otel")
    out = []
    for session, group in sessions.items():
        group.sort(key=lambda s: s.start)
        turns: list[RecordedTurn] = []
        current: RecordedTurn | None = None
        explicit = False
        try:
            for sp in group:
                if sp.attrs["gen_ai.operation.name"] == "execute_tool":
                    name = _str(sp.attrs.get("gen_ai.tool.name"), f"{sp.where}.attributes[gen_ai.tool.name]")
                    cid = sp.attrs.get("gen_ai.tool.call.id")
                    args = _args(sp.attrs.get("gen_ai.tool.call.arguments"),
                                 f"{sp.where}.attributes[gen_ai.tool.call.arguments]")
                    result = sp.attrs.get("gen_ai.tool.call.result", _NO_RESULT)
                    if isinstance(result, str):
                        try:
                            result = json.loads(result)
                        except json.JSONDecodeError:
                            pass
                    if sp.error and result is _NO_RESULT:
                        result = {"error": {"code": str(sp.attrs.get("error.type") or "error")}}
                    match = None
                    if current is not None and explicit:
                        match = next((c for c in current.calls if (cid is not None and c.id == cid)
                                      or (cid is None and c.tool == name and not c.has_result)), None)
                    if match is None:
                        # a tool span no chat span asked for: its own turn, unless it ran in parallel
                        # with the previous one (started within a millisecond)
                        if current is None or explicit or current.t is None or abs(sp.start - current.t) > 1e-3:
                            current, explicit = RecordedTurn(t=sp.start), False
                            turns.append(current)
                        match = RecordedCall(cid, name, args)
                        current.calls.append(match)
                    match.result, match.is_error, match.t = result, sp.error, sp.start
                    if not match.args:
                        match.args = args
                else:
                    tin, tout = sp.attrs.get("gen_ai.usage.input_tokens"), sp.attrs.get("gen_ai.usage.output_tokens")
                    calls = _otel_calls_of_chat(sp)
                    turn = RecordedTurn(t=sp.start, tokens_in=int(tin) if isinstance(tin, (int, float)) else None,
                                        tokens_out=int(tout) if isinstance(tout, (int, float)) else None)
                    if calls:
                        turn.calls, explicit = calls, True
                    else:
                        turn.text, explicit = _otel_text_of_chat(sp), True
                        if calls is None:  # no output messages recorded: the tool spans that follow tell
                            explicit = False
                    turns.append(turn)
                    current = turn
        except _Bad as exc:
            raise LogFormatError(exc.problem, source, None, exc.field, "otel") from None
        # a chat turn without recorded output followed by tool spans holds those calls; one with neither is final
        for t in turns:
            if not t.calls and t.text is None:
                t.text = ""
        out.append(Conversation(session, "otel", turns, source))
    return out


# --- toolchaos traces ---------------------------------------------------------------------------------


def _from_toolchaos(records: Sequence[tuple[str, Any]], source: str) -> list[Conversation]:
    sessions: dict[str, Conversation] = {}
    pending: dict[str, dict[str, RecordedCall]] = {}
    for label, event in records:
        if not isinstance(event, Mapping):
            raise LogFormatError(f"expected a trace event (an object), got {_kind(event)}", source, label,
                                 fmt="toolchaos")
        # A hand-written trace (model turns only: {"kind": "model", "calls": [...]}) names no run:
        # its events are one session, named after the file as the other formats' sessions are.
        run = event.get("run", Path(source).name)
        kind = event.get("kind")
        if not isinstance(run, str) or not isinstance(kind, str):
            raise LogFormatError("missing: every trace event has a run and a kind", source, label,
                                 "run" if not isinstance(run, str) else "kind", "toolchaos")
        conv = sessions.setdefault(run, Conversation(run, "toolchaos", [], source))
        calls = pending.setdefault(run, {})
        t = _num(event.get("t"))
        if kind == "model":
            turn = RecordedTurn(t=t, tokens_in=event.get("tokens_in"), tokens_out=event.get("tokens_out"))
            for i, c in enumerate(event.get("calls") or []):
                if not isinstance(c, Mapping) or not isinstance(c.get("tool"), str):
                    raise LogFormatError("expected {id, tool, args}", source, label, f"calls[{i}]", "toolchaos")
                call = RecordedCall(c.get("id"), c["tool"], dict(c.get("args") or {}), t=t)
                turn.calls.append(call)
                if call.id is not None:
                    calls[str(call.id)] = call
            if not turn.calls:
                turn.text = str(event.get("final") or "")
            conv.turns.append(turn)
        elif kind in ("tool", "refusal", "skipped"):
            cid = event.get("call_id")
            found = calls.get(str(cid)) if cid is not None else None
            if found is None:  # executed outside any recorded request: keep it as a call of its own turn
                found = RecordedCall(cid, str(event.get("tool")), dict(event.get("args") or {}), t=t)
                conv.turns.append(RecordedTurn([found], t=t))
            call = found
            call.t = t
            call.executed = kind == "tool"
            call.outcome = dict(event)
            if kind == "tool":
                call.result = {"outcome": event.get("outcome"), "code": event.get("code")}
                call.is_error = event.get("class") not in ("SUCCESS", "PENDING")
    return list(sessions.values())


# --- replay -------------------------------------------------------------------------------------------


def select(conversations: Sequence[Conversation], session: str | None = None, source: str = "<log>") -> Conversation:
    """One session of a log: the one named, or the only one (else the first, by default)."""
    if not conversations:
        raise LogFormatError("no session in the log", source)
    if session is None:
        return conversations[0]
    for c in conversations:
        if c.session == session:
            return c
    names = [c.session for c in conversations]
    more = f" and {len(names) - 10} more" if len(names) > 10 else ""
    raise LogFormatError(f"no session {session!r}{did_you_mean(session, names)} (sessions: {', '.join(names[:10])}"
                         f"{more})", source, option="session")


def conversation(path: str | Path, format: str = "auto", session: str | None = None) -> Conversation:
    """The session of a log file to replay (default: the first): what ``toolchaos replay`` and the
    ``recorded`` policy read. Every problem, the file's included, is a ``LogFormatError``."""
    source = str(path)
    try:
        return select(load(path, format), session, source)
    except FileNotFoundError:
        raise LogFormatError("no such file", source, option="path") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # a directory, a truncated gzip, a binary file
        raise LogFormatError(f"cannot read the file ({exc})", source, option="path") from None


_TRANSIENT: dict[str, str | int] = {"unavailable": 503, "rate_limited": 429, "connection_reset": "reset",
                                    "internal_error": 500}


def fault_of(call: RecordedCall, previous_effects: int | None = None) -> Fault | None:
    """The fault that answers a call the way the log says it was answered (None: plain ok or unknown)."""
    if call.outcome is not None and call.outcome.get("kind") == "tool":
        return _fault_of_event(call.outcome, previous_effects)
    if not call.has_result:
        return F.timeout(30.0)  # the log never saw an answer: a lost response
    content = call.result
    kind, retryable, _, retry_after = interpret(content)
    text = json.dumps(content, default=str).lower() if not isinstance(content, str) else content.lower()
    if call.is_error and kind not in ("error", "refused"):
        kind, retryable = "error", None
    if kind == "error":
        if "timeout" in text or "timed out" in text:
            return F.timeout(30.0)
        if "429" in text or "rate limit" in text or "rate_limited" in text:
            return F.transient(429, retry_after=retry_after)
        if retryable:
            return F.transient(503)
        if "not found" in text or "not_found" in text:
            return F.fatal("not_found")
        if "invalid" in text or "missing" in text:
            return F.fatal("invalid_argument")
        if retryable is False or "denied" in text or "forbidden" in text or "permission" in text:
            return F.fatal("permission_denied")
        return F.transient(500)
    if kind == "empty":
        return F.empty(content if isinstance(content, (list, dict)) else None)
    if kind == "malformed":
        return F.malformed("invalid_json")
    if kind == "pending":
        return F.pending(polls=None)
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except json.JSONDecodeError:
            pass
    return F.ok(content) if content is not None else None


def _fault_of_event(e: Mapping[str, Any], previous_effects: int | None) -> Fault | None:
    outcome, code = e.get("outcome"), str(e.get("code") or "")
    latency = float(e.get("latency") or 0.0)
    fault: Fault | None
    if outcome == "timeout":
        effects = e.get("effects")
        applied = isinstance(effects, int) and effects > (previous_effects or 0)
        return F.timeout(latency or 30.0, applied=applied)
    if outcome == "transient":
        ra = e.get("retry_after")
        fault = F.transient(_TRANSIENT.get(code, 503), retry_after=float(ra) if ra else None)
    elif outcome == "fatal":
        fault = F.fatal(code if code in ("permission_denied", "not_found", "invalid_argument", "policy_blocked")
                        else "permission_denied")
    elif outcome == "pending":
        fault = F.pending(polls=None, interval=float(e.get("retry_after") or 5.0))
    elif outcome == "empty":
        fault = F.empty()
    elif outcome == "malformed":
        variant = code.removeprefix("malformed_")
        fault = F.malformed(variant if variant in ("invalid_json", "schema_violation", "truncated", "wrong_type")
                            else "invalid_json")
    elif outcome == "oversized":
        fault = F.oversized(100_000)
    else:  # ok, paginated, contradictory, invalid_call: the tool's own behaviour reproduces them
        fault = None
    if latency and fault is not None:
        return F.slow(latency, then=fault)
    if latency:
        return F.slow(latency)
    return fault


def replay_tools(conversation: Conversation, side_effects: Iterable[str] = ()) -> list[FakeTool]:
    """Fake tools answering each recorded call as the log says (by call number per tool).

    Catalogue names get the catalogue tool; any other name a permissive tool (any
    arguments), with a side effect when listed in ``side_effects``.
    """
    rules: dict[str, list[dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    effects: dict[str, int] = {}
    side = set(side_effects)
    for call in conversation.calls:
        if not call.executed:
            continue
        n = counts[call.tool] = counts.get(call.tool, 0) + 1
        fault = fault_of(call, effects.get(call.tool))
        if call.outcome is not None and isinstance(call.outcome.get("effects"), int):
            effects[call.tool] = int(call.outcome["effects"])
        if fault is not None:
            rules.setdefault(call.tool, []).append({"call": n, "outcome": fault})
    tools = []
    for name in conversation.tool_names():
        faults = rules.get(name)
        if name in catalogue.NAMES:
            tools.append(catalogue.get(name, faults))
        else:
            tools.append(fake_tool(name, f"{name} (replayed from a log)", {"type": "object", "properties": {}},
                                   side_effect=name in side, faults=faults))
    return tools


__all__ = ["FORMATS", "Conversation", "LogFormatError", "RecordedCall", "RecordedTurn", "conversation", "detect",
           "fault_of", "load", "open_text", "parse", "read_records", "replay_tools", "select"]
