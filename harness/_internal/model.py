"""The model side of a run: turns, tool calls, usage, and what the model reads back.

The in-process agent contract speaks a neutral chat format (close to OpenAI's):

- ``{"role": "user", "content": task}``
- ``{"role": "assistant", "content": text, "tool_calls": [{"id", "name", "arguments"}]}``
- ``{"role": "tool", "tool_call_id": id, "content": anything}``

What became of each call the model asked for is the harness's own record, not the runtime's
words: ``read_feedback`` takes it (``Handled``, by call id: executed, refused through
``tools.refuse``, or never executed) and, for an executed call, the outcome the harness served
(ok, empty, an error retryable or not with its code and Retry-After, pending, malformed: what
the fake tool returned, as the trace's tool event records it). So a refusal reads as one
whatever the runtime told the model ("Potential loop detected", "Tool call limit exceeded", an
``{"error": ...}`` mapping), and an executed call reads as what it served whatever the runtime
wrapped it in (Codex's ``Wall time: 0.0503 seconds\nOutput:...``) or however it reworded an
error. A refused call that repeats a side effect already applied and answered (same tool and
operation key, ledger status ok) reads as a refusal marked ``duplicate``: the work is done, and
the policies go on as after a ledger's recorded result. Two answers are taken from the
runtime: a call it answered with nothing reads as empty, and a call the harness did not
execute but the runtime answered with result-shaped data (a ledger's recorded result) reads as
that data. Over MCP, where a call carries no id, the
served result's bytes inside the runtime's text say which call it answers.

``interpret`` reads content the harness did not serve (a recorded log, a call id the runtime
made up): structurally first (JSON, also inside the known wrappers of ``unwrap``), then prose
by its words, never by digits (a wall time of 0.0503 s is no HTTP 503).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from operator import is_
from typing import Any

from toolchaos.fake_tools import Outcome, OutcomeClass
from toolchaos.fake_tools.internals import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@quick_init
@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@quick_init
@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One answer of the model: tool calls to make, or a final text."""

    step: int
    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage

    @property
    def final(self) -> bool:
        return not self.tool_calls

    def as_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls]
        return msg


def tool_message(call: ToolCall, content: Any) -> dict[str, Any]:
    """The message that hands a tool's result (or an error, or a refusal) back to the model."""
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


@quick_init
@dataclass(frozen=True, slots=True)
class Decision:
    """What a policy answers: tool calls, or a final text."""

    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    text: str | None = None

    @classmethod
    def call(cls, name: str, args: Mapping[str, Any] | None = None) -> Decision:
        return cls(((name, dict(args or {})),))

    @classmethod
    def many(cls, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> Decision:
        return cls(tuple((n, dict(a)) for n, a in calls))

    @classmethod
    def final(cls, text: str) -> Decision:
        return cls((), text)


PENDING_STATES = ("processing", "pending", "running", "queued", "in_progress")
# Words only, never digits: a number in a result (a wall time of 0.0503 s, an id) is no status code.
_RETRY_WORDS = ("timeout", "timed out", "unavailable", "rate limit", "reset", "try again", "temporar")
_FATAL_WORDS = ("denied", "not found", "invalid", "permission", "forbidden", "blocked", "not allowed")
_ERROR_WORDS = ("error", "exception", "failed", "failure", *_RETRY_WORDS, *_FATAL_WORDS)
_REFUSAL_WORDS = ("refused", "loop guard", "not executed", "guard:", "stopped by")

Reading = tuple[str, bool | None, str | None, float | None]  # (kind, retryable, code, retry_after)
_EMPTY: Reading = ("empty", None, None, None)
_OK: Reading = ("ok", None, None, None)


@quick_init
@dataclass(frozen=True, slots=True)
class Feedback:
    """A tool result as the model reads it."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    content: Any  # the result as the model reads it: a runtime's known wrapper removed (``unwrap``)
    kind: str  # ok | empty | error | refused | malformed | pending | missing
    retryable: bool | None = None
    code: str | None = None
    retry_after: float | None = None
    executed: bool | None = None  # the harness's record of the call; None: no record (read from the content)
    sent: Any = None  # what the runtime sent, when a wrapper was removed from it (else None: ``content``)
    # Refused (or not run) although its effect was already applied: the work is done, and the model
    # reads it so, as it reads a ledger's recorded result (``Handled.duplicate``)
    duplicate: bool = False

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def is_empty(value: Any) -> bool:
    """None, an empty string or container, or a mapping whose values are all empty containers."""
    if type(value) is not dict and not isinstance(value, Mapping):  # an exact dict (most results): no abstract check
        return value is None or value == "" or value == [] or value == {}
    for v in value.values():  # an empty mapping too
        if not (isinstance(v, (list, dict)) and not v):
            return False
    return True


# Codex CLI hands an MCP tool's result to its model under a header: "Wall time: 0.0503 seconds\nOutput:",
# then the result's text after a newline (one text) or right after it (content items, which the wire joins).
CODEX_HEADER = re.compile(r"Wall time: [0-9]+(?:\.[0-9]+)? seconds\nOutput:\n?")
# gemini-cli answers an MCP tool error with {"error": "MCP tool 'NAME' reported tool error for function call:
# {CALL} with response: [PARTS]"}; the tool's own text is in PARTS (``functionResponse.response``).
_GEMINI_HEAD = "MCP tool '"
_GEMINI_CALL = "' reported tool error for function call: "
_GEMINI_RESPONSE = " with response: "
_decode = json.JSONDecoder().raw_decode


# gemini-cli (0.61) hands an MCP tool's text to its model inside <untrusted_context>, a closing tag
# in the text escaped as &lt;/untrusted_context&gt;.
_UNTRUSTED_OPEN, _UNTRUSTED_CLOSE = "<untrusted_context>\n", "\n</untrusted_context>"
_UNTRUSTED_ESCAPED = "&lt;/untrusted_context&gt;"


def unwrap(content: Any) -> Any:
    """The tool's result inside a runtime's known framing of it (Codex's header, gemini-cli's
    untrusted-context tags and error text); any other content as it is (the same object)."""
    if type(content) is str:
        if content.startswith("Wall time: "):
            header = CODEX_HEADER.match(content)
            if header is not None:
                return content[header.end():]
        elif content.startswith(_UNTRUSTED_OPEN) and content.endswith(_UNTRUSTED_CLOSE):
            tagged = content[len(_UNTRUSTED_OPEN):len(content) - len(_UNTRUSTED_CLOSE)]
            return tagged.replace(_UNTRUSTED_ESCAPED, "</untrusted_context>")
        return content
    if type(content) is dict and len(content) == 1:
        err = content.get("error")
        if type(err) is str and err.startswith(_GEMINI_HEAD):
            inner = _gemini_text(err)
            if inner is not None:
                return inner
    return content


def _gemini_text(err: str) -> str | None:
    """The texts of the tool's result in gemini-cli's MCP error message, or None: not that message."""
    at = err.find(_GEMINI_CALL)
    if at < 0:
        return None
    try:
        _, end = _decode(err, at + len(_GEMINI_CALL))  # the call's JSON, which may hold any text
        if not err.startswith(_GEMINI_RESPONSE, end):
            return None
        parts = json.loads(err[end + len(_GEMINI_RESPONSE):])
    except ValueError:
        return None
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else ():
        response = (part.get("functionResponse") or {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            # {"content": [...], "isError": true}, or older releases' {"error": {"content": [...]}}
            inner = response.get("content") or (response.get("error") or {}).get("content")
            texts += [c["text"] for c in inner if isinstance(c, dict) and isinstance(c.get("text"), str)] \
                if isinstance(inner, list) else []
    return "".join(texts) if texts else None


def interpret(content: Any, refusals: bool = True, words: bool = True) -> Reading:
    """(kind, retryable, code, retry_after) of a tool message's content, read structurally first.

    JSON is read as data (also inside a known wrapper, ``unwrap``); ``refusals``: read refusal
    words and ``{"refused": true}`` as a refusal (off for a call the harness saw executed);
    ``words``: read prose by its words (off for a payload the harness served: its class is known).
    """
    kind = type(content)
    if kind is not dict and isinstance(content, (bytes, bytearray)):  # an exact dict (most results) is neither
        content = content.decode(errors="replace")
    if kind is not dict and isinstance(content, str):
        text = unwrap(content.strip()).strip()
        if not text:
            return _EMPTY
        if text[0] in "{[\"":
            try:
                parsed = json.loads(text)
            except ValueError:
                return "malformed", None, "malformed", None
            # A JSON string is a result the runtime json.dumps()'d: read what it holds.
            return interpret(parsed, refusals, words)
        return _interpret_text(text.lower(), refusals=refusals) if words else _OK
    if kind is dict or isinstance(content, Mapping):  # exact dicts, most results: no abstract check
        if refusals and content.get("refused"):
            return "refused", False, str(content.get("guard") or "refused"), None
        err = content.get("error")
        if err:
            return _interpret_error(err, refusals, words)
        status = content.get("status")
        if isinstance(status, str) and status.lower() in PENDING_STATES:
            return "pending", True, "processing", None
    if is_empty(content):
        return _EMPTY
    return _OK


def _interpret_error(err: Any, refusals: bool, words: bool) -> Reading:
    """A result's ``error`` field: a structured error says what it is; any other is read from its words.

    Apart from ``interpret`` because an error is the rarer result: the ok path stays one call.
    """
    if type(err) is dict or isinstance(err, Mapping):
        retryable, retry_after = err.get("retryable"), err.get("retry_after")
        return ("error", retryable if isinstance(retryable, bool) else None, str(err.get("code") or "error"),
                float(retry_after) if isinstance(retry_after, (int, float)) else None)
    if type(err) is str and err.startswith(_GEMINI_HEAD):  # gemini-cli's MCP error message: the tool's text inside
        inner = _gemini_text(err)
        if inner is not None:
            reading = interpret(inner, refusals, words)
            return reading if reading[0] in ("error", "refused") else ("error", None, "error", None)
    if not words:
        return "error", None, "error", None
    return _interpret_text(str(err).lower(), default="error", refusals=refusals)


def _interpret_text(low: str, default: str = "ok", refusals: bool = True) -> Reading:
    if refusals and any(w in low for w in _REFUSAL_WORDS):
        return "refused", False, "refused", None
    if default == "error" or any(w in low for w in _ERROR_WORDS):
        if any(w in low for w in _RETRY_WORDS):
            return "error", True, "retryable", None
        if any(w in low for w in _FATAL_WORDS):
            return "error", False, "fatal", None
        return "error", None, "error", None
    return default, None, None, None


def served_reading(outcome: Outcome) -> Reading:
    """How the model reads an outcome the harness served: its class, never its wording.

    A success is read by its data's shape (empty, pending, malformed, an ``error`` field), an
    error by its class, code and the Retry-After its payload carries in seconds (a wait sent in
    another form, a header, is the caller's to read: none here, as in the payload).
    """
    cls = outcome.cls
    if cls is OutcomeClass.SUCCESS:
        return interpret(outcome.data, refusals=False, words=False)
    if cls is OutcomeClass.PENDING:
        return "pending", True, outcome.code, None
    return "error", outcome.retryable, outcome.code, None if outcome.headers else outcome.retry_after


_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


def served_text(outcome: Outcome) -> str:
    """The text an MCP tool result carries for an outcome: data as compact JSON (text as it is), or
    the error payload (``toolchaos serve`` answers with it; ``read_feedback`` finds it again)."""
    data = outcome.data if outcome.cls is OutcomeClass.SUCCESS or outcome.cls is OutcomeClass.PENDING \
        else outcome.error_payload()
    return data if isinstance(data, str) else _compact(data)


@dataclass
class ModelView:
    """Everything a policy may look at when it decides the next turn."""

    task: str
    step: int  # 1-based model turn
    # copies of the agent's messages: the same list, grown, turn after turn (TokenMeter.read)
    messages: list[dict[str, Any]]
    feedback: list[Feedback]  # results of the previous turn's calls, as the model reads them
    tools: list[str]
    rng: random.Random
    memory: dict[str, Any] = field(default_factory=dict)  # the policy's own notes for this run


@quick_init
@dataclass(frozen=True, slots=True)
class Handled:
    """What the harness recorded of one call the model asked for: executed (and what it served), or not (and why)."""

    executed: bool
    code: str | None = None  # not executed: the guard a refusal named, or ``not_executed``
    served: Outcome | None = None  # executed: the outcome the harness served (None: not known)
    # not executed, but the same operation (tool and operation key) had already applied its effect
    duplicate: bool = False

    @classmethod
    def of(cls, kind: str, guard: str | None = None, served: Outcome | None = None,
           duplicate: bool = False) -> Handled:
        """From the trace event kind that handled the call (``tool``, ``refusal``, ``skipped``)."""
        if kind == "tool":
            return _EXECUTED if served is None else cls(True, None, served)
        return cls(False, (guard or "refused") if kind == "refusal" else "not_executed", None, duplicate)


_EXECUTED = Handled(True)


def read_feedback(messages: Sequence[Mapping[str, Any]], record: Mapping[str, Handled] | None = None,
                  served: Sequence[Outcome] = ()) -> list[Feedback]:
    """The tool results after the last assistant message, matched to the calls they answer.

    ``record``: the harness's record of the calls by call id. An executed call reads as the
    outcome the harness served (when the record has it; else from its content, refusal words
    ignored), unless the runtime handed back nothing (empty). A call it did not execute reads
    as refused whatever the runtime wrote in its place (prose, an ``error`` or ``refused``
    mapping, nothing), unless the runtime answered it with result-shaped data (a recorded
    result, as a ledger that does not repeat an effect answers): that data is read as the
    result. A call without a record is read from its content (``interpret``).

    ``served``: every outcome served since the last turn. An answer that does not carry its own
    call's served result but carries another one's (``_carried``) reads as that one.
    """
    last = -1
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant":
            last = i
            break
    if last < 0:
        return []
    asked = {c["id"]: c for c in (messages[last].get("tool_calls") or [])}
    answers = [(str(msg.get("tool_call_id", "")), msg) for msg in messages[last + 1:] if msg.get("role") == "tool"]
    if record and len(served) > 1:  # one execution only: no other result an answer could carry
        record = _carried(record, answers, served)
    out: list[Feedback] = []
    answered = set()
    for cid, msg in answers:
        call = asked.get(cid, {})
        answered.add(cid)
        out.append(_feedback(cid, str(call.get("name", msg.get("name", "?"))), call, msg.get("content"),
                             record.get(cid) if record else None))
    for cid, call in asked.items():
        if cid not in answered:
            handled = record.get(cid) if record else None
            if handled is not None and not handled.executed:
                out.append(_feedback(cid, str(call.get("name")), call, None, handled))
            else:
                out.append(Feedback(cid, str(call.get("name")), dict(call.get("arguments") or {}), None, "missing",
                                    executed=None if handled is None else True))
    return out


def _carried(record: Mapping[str, Handled], answers: Sequence[tuple[str, Mapping[str, Any]]],
             served: Sequence[Outcome]) -> Mapping[str, Handled]:
    """The record, each executed call's answer given the served outcome it carries.

    Over MCP a call carries no id: the harness matched it to the model's request by its
    arguments, or by its tool's name when the runtime changed them, so two calls of one tool
    answered in another order would swap their outcomes; and a runtime may answer a call whose
    response was lost with the record its own lookup found. The answer's content says which
    execution it is: the served result's bytes in its text, or the served value in (or around)
    its value. An answer that carries its own call's result, or no other, or others that read
    differently, keeps its record.
    """
    moved: dict[str, Handled] | None = None
    for cid, msg in answers:
        own = record.get(cid)
        if own is None or own.served is None:
            continue
        content = unwrap(msg.get("content"))
        if _carries(content, own.served):
            continue
        others = [o for o in served if o is not own.served and _carries(content, o)]
        if others and len({served_reading(o) for o in others}) == 1:
            moved = moved if moved is not None else dict(record)
            moved[cid] = Handled(True, None, others[-1])
    return record if moved is None else moved


def _carries(content: Any, outcome: Outcome) -> bool:
    """Whether an answer's content carries a served outcome: the same value, its bytes in the text,
    or its value in or around the answer's (a runtime's excerpt of a result, or its wrapper)."""
    payload = outcome.data if outcome.cls is OutcomeClass.SUCCESS or outcome.cls is OutcomeClass.PENDING \
        else outcome.error_payload()
    if content is payload:
        return True
    if isinstance(content, str):
        text = served_text(outcome)
        if len(text) > 2 and text in content:  # "[]", "{}", "" are inside too much to tell anything
            return True
        try:
            content = json.loads(content)
        except ValueError:
            return False
    return _within(content, payload) or _within(payload, content)


def _within(part: Any, whole: Any, depth: int = 0) -> bool:
    """``part`` is ``whole`` or a non-empty mapping or list inside it (a few levels down)."""
    if part == whole:
        return True
    if not part or not isinstance(part, (Mapping, list)) or depth > 3:
        return False
    children = whole.values() if isinstance(whole, Mapping) else whole if isinstance(whole, list) else ()
    return any(_within(part, child, depth + 1) for child in children)


def _feedback(cid: str, tool: str, call: Mapping[str, Any], content: Any, handled: Handled | None) -> Feedback:
    args = dict(call.get("arguments") or {})
    shown = unwrap(content)
    sent = None if shown is content else content
    if handled is None:  # read from the content as sent: a wrapper that says "error" (gemini-cli's) counts
        return Feedback(cid, tool, args, shown, *interpret(content), sent=sent)
    if handled.executed:
        if handled.served is None:  # no outcome on record (a hand-built record): the content, structurally first
            reading = interpret(content, refusals=False)
        elif shown is None or (isinstance(shown, str) and not shown.strip()):
            reading = _EMPTY  # the runtime handed back nothing: the model read nothing, whatever was served
        else:
            reading = served_reading(handled.served)
        return Feedback(cid, tool, args, shown, *reading, executed=True, sent=sent)
    if result_shaped(shown):  # not run, but answered with data (a ledger's recorded result): read the data
        return Feedback(cid, tool, args, shown, *interpret(content), executed=False, sent=sent)
    # Prose in place of a result ("Potential loop detected ...", "Tool call limit exceeded"), an
    # ``{"error": "You are repeating ..."}`` mapping, or nothing: the refusal it stands for. A refused
    # duplicate of an applied effect is still a refusal, one that says the work is done.
    return Feedback(cid, tool, args, shown, "refused", False, handled.code, None, executed=False, sent=sent,
                    duplicate=handled.duplicate)


def is_data(content: Any) -> bool:
    """A payload as a tool answers (a mapping, a list, JSON-shaped text even if broken); not prose."""
    if isinstance(content, (bytes, bytearray)):
        content = content.decode(errors="replace")
    if isinstance(content, str):
        text = content.strip()
        if text[:1] in ("{", "["):
            return True
        if text[:1] != '"':
            return False
        try:  # a payload the runtime json.dumps()'d into a string
            return is_data(json.loads(text))
        except ValueError:
            return False
    return isinstance(content, (Mapping, list, tuple))


def result_shaped(content: Any) -> bool:
    """Data as a tool answers with a result (``is_data``), not an ``error`` or ``refused`` mapping in its place.

    Text that looks like JSON but does not parse is result-shaped: a recorded payload, broken as it was.
    """
    if not is_data(content):
        return False
    value = content.decode(errors="replace") if isinstance(content, (bytes, bytearray)) else content
    while isinstance(value, str):  # JSON text, maybe json.dumps()'d again
        try:
            value = json.loads(value)
        except ValueError:
            return True
    return not (isinstance(value, Mapping) and (value.get("error") or value.get("refused")))


def _encoder() -> Callable[[Any], int]:
    """The length of ``json.dumps(obj, default=str, ensure_ascii=False, separators=(",", ":"))``.

    Token estimates run on every model turn; ``json.dumps`` builds an encoder per call, so the
    C encoder is built once here (no circular check: a message that contains itself fails
    with RecursionError instead of ValueError). Without the C accelerator, plain JSONEncoder.
    """
    if c_make_encoder is None:  # pragma: no cover - CPython always has it
        encode = json.JSONEncoder(default=str, ensure_ascii=False, separators=(",", ":")).encode
        return lambda obj: len(encode(obj))
    chunks = c_make_encoder(None, str, encode_basestring, None, ":", ",", False, False, True)
    # one C join, not a Python sum over the chunks: the C encoder returns a single chunk, which
    # join hands back as it is (about 1 us less an encode; the fuzzer encodes ~15 messages a run)
    return lambda obj: len("".join(chunks(obj, 0)))


_encoded_size = _encoder()


def estimate_tokens(messages: Sequence[Any]) -> int:
    """A deterministic token estimate (~4 characters a token) that grows with the conversation."""
    return 8 + _encoded_size(messages) // 4


_HEAD = 1  # the first message: a system prompt a runtime may rewrite in place every turn
_TAIL = 8  # the last messages seen: the latest answer and its results, which a runtime may still patch


class _Copy(dict):  # type: ignore[type-arg]
    """The reader's copy of a message: its first edit keeps it as it was measured, in the meter's marks.

    ``TokenMeter`` compares some copies with the caller's messages on its next call; a copy the
    reader edited is first put back as it was measured (the reader gets a fresh one), without
    looking at every copy to find it. A plain dict in every other respect (``copy.copy`` and
    pickles are plain dicts).
    """

    __slots__ = ("_at", "_marks")
    _marks: dict[int, tuple[_Copy, dict[Any, Any]]]
    _at: int

    def _edited(self) -> None:
        marks = self._marks
        if id(self) not in marks:  # the first edit: keep what was measured
            marks[id(self)] = (self, dict(self))

    def __setitem__(self, key: Any, value: Any) -> None:
        self._edited()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self._edited()
        dict.__delitem__(self, key)

    def pop(self, *args: Any) -> Any:
        self._edited()
        return dict.pop(self, *args)

    def popitem(self) -> tuple[Any, Any]:
        self._edited()
        return dict.popitem(self)

    def clear(self) -> None:
        self._edited()
        dict.clear(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._edited()
        dict.update(self, *args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self._edited()
        return dict.setdefault(self, key, default)

    def __ior__(self, other: Any) -> _Copy:  # type: ignore[misc]
        self.update(other)
        return self

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


class _View(list):  # type: ignore[type-arg]
    """The list of copies ``TokenMeter.read`` hands out: the same list, grown, turn after turn.

    Copying the list for every turn would cost the whole history each turn. A reader that changes
    the list itself (adds, removes, replaces or reorders its items) marks it ``changed``, and the
    next read hands out a new list. A plain list in every other respect (``copy.copy`` and pickles
    are plain lists).
    """

    __slots__ = ("changed",)

    def __init__(self, items: Iterable[Any] = ()) -> None:
        list.__init__(self, items)
        self.changed = False

    def __reduce__(self) -> Any:
        return (list, (list(self),))


def _changing(name: str) -> Callable[..., Any]:
    """``list``'s method ``name``, marking the view changed first."""
    method = getattr(list, name)

    def change(self: _View, *args: Any, **kwargs: Any) -> Any:
        self.changed = True
        return method(self, *args, **kwargs)

    change.__name__ = change.__qualname__ = name
    return change


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop", "remove",
              "clear", "sort", "reverse"):
    setattr(_View, _name, _changing(_name))


class TokenMeter:
    """``estimate_tokens`` for a conversation that grows turn by turn: a call costs what is new in it.

    Encoding the whole conversation every turn made a long run quadratic, and so did comparing it
    with the last turn's. The meter keeps a shallow copy of each message it measured beside the
    running total of their encoded sizes, and checks that the messages of a call continue what it
    saw, without looking at the whole history:

    - **The same sequence object as last time, no shorter**, whose first message and last 8
      messages seen are the very objects seen there, each still equal (``==``) to its copy: only the
      messages after them are measured. The check looks at those 9 messages whatever the length.
    - **Anything else** (another list: a runtime that rebuilds, trims or converts its messages; a
      list shorter than last time; one of those 9 messages replaced or edited in place): every
      message is compared with its copy, and the conversation is measured again from the first that
      changed (a message equal to its copy at the same place keeps its size).
    - A caller that owns its messages and never edits them (the wire) may vouch for how many are
      unchanged since its last call (``read``'s ``unchanged``); those are not looked at.

    Not seen, by design: in the same list object, a message between the first and the last 8 seen
    edited in place (a value replaced, a key added or removed) or replaced by another object, while
    the list does not shrink; such a message keeps the size it was measured at until the meter
    next compares in full (a runtime that edits old messages in place hands a new list that turn,
    ``list(messages)``, to have them measured again). Never seen: a change inside a value the copy
    shares with the message (a list inside a tool result appended to in place): copies are
    shallow, so the copy changes with the message; it is seen once the message holds a value that
    differs from the copy's.

    ``work`` counts what the meter did: messages compared, copied or measured (tests and the
    benchmarks read it to check that a turn costs what is new in it).
    """

    __slots__ = ("_first", "_held", "_marks", "_mixed", "_seen", "_since", "_source", "_tail", "_totals", "_view",
                 "work")

    def __init__(self) -> None:
        self._seen: list[Any] = []  # a shallow copy of each message measured
        self._totals: list[int] = [0]  # _totals[i]: the encoded sizes of the first i messages
        self._held: object = None  # the sequence measured last: the same one, grown, is checked cheaply
        self._first: object = None  # its first message and its last ones: the objects the check expects
        self._tail: list[Any] = []
        self._marks: dict[int, tuple[_Copy, dict[Any, Any]]] = {}  # the reader's edited copies, as measured
        self._view: _View | None = None  # the list ``read`` hands out
        self._since = 0  # the first index of _seen changed since the view was last brought up to date
        self._mixed = False  # _seen holds copies ``estimate`` made (not _Copy): a read compares in full
        self._source: object | None = None  # who vouched for the messages of the last read, if anyone
        self.work = 0  # messages compared, copied or measured, over the meter's life

    def estimate(self, messages: Sequence[Any]) -> int:
        view = self._view
        if messages is view and not view.changed and len(view) == len(self._seen) == self._since:
            return self._total(len(view))  # the list the last read handed out, as it was: nothing to look at
        self._source = None  # the next read compares: a vouched read must follow a read
        self._update(messages, False)
        return self._total(len(messages))

    def count(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """``estimate`` of messages the next ``read`` will be given: measured as ``read`` measures them.

        So the copies a ``read`` right after hands out are made here, and that read finds
        nothing new to measure: a runtime that counts its prompt before sending it does not
        cost a second encoding of every message.
        """
        self._source = None  # the next read compares: a vouched read must follow a read
        self._update(messages, True)
        return self._total(len(messages))

    def _total(self, n: int) -> int:
        return 8 + (2 + self._totals[n] + max(n - 1, 0)) // 4

    def read(self, messages: Sequence[Mapping[str, Any]], unchanged: int = 0, source: object | None = None
             ) -> list[dict[str, Any]]:
        """Shallow copies of ``messages`` (measured), as the same list turn after turn (``_View``).

        A reader that edits a copy gets a fresh one next turn. ``source`` and ``unchanged``: the
        caller vouches that its first ``unchanged`` messages are the very objects it passed to the
        last read with the same ``source``, never edited since; the meter then looks only at the
        rest. Honoured only when that last read was the previous call (another caller in between,
        or another conversation of the same caller, and the messages are checked as usual).
        """
        vouched = source is not None and source is self._source and 0 < unchanged <= min(len(self._seen),
                                                                                         len(messages))
        self._source = source
        self._update(messages, True, unchanged if vouched else 0)
        return self._handed()

    def _copy(self, m: Any, at: int) -> _Copy:
        copy = _Copy(m)
        copy._marks, copy._at = self._marks, at
        return copy

    def _update(self, messages: Sequence[Any], as_dicts: bool, trusted: int = 0) -> None:
        """Bring the copies and totals up to ``messages``; ``trusted``: how many were vouched for."""
        if self._marks:
            self._restore()
        seen_n = len(self._seen)
        if trusted:
            keep = trusted
        elif self._continues(messages, seen_n) and not (as_dicts and self._mixed):
            keep = seen_n
        else:
            keep = 0
        if keep < seen_n:
            self._recount(messages, keep, as_dicts)
        else:
            self._append(messages, as_dicts)
        n = len(messages)
        self._held, self._first = messages, messages[0] if n else None
        tail = messages[max(n - _TAIL, min(n, _HEAD)):]
        self._tail = tail if type(tail) is list else list(tail)

    def _continues(self, messages: Sequence[Any], seen_n: int) -> bool:
        """The cheap check (see the class docstring): ``messages`` is what was seen, grown at the end."""
        if messages is not self._held or len(messages) < seen_n:
            return False
        if not seen_n:
            return True
        seen, lo = self._seen, max(seen_n - _TAIL, _HEAD)
        tail = messages[lo:seen_n]
        if type(tail) is not list:
            tail = list(tail)
        self.work += 1 + len(tail)
        first = messages[0]
        return (first is self._first and seen[0] == first
                and all(map(is_, tail, self._tail)) and seen[lo:seen_n] == tail)

    def _append(self, messages: Sequence[Any], as_dicts: bool) -> None:
        """The usual turn: new messages at the end, each copied and measured."""
        seen, totals = self._seen, self._totals
        start = len(seen)
        if len(messages) == start:
            return
        self._since = min(self._since, start)
        total = totals[-1]
        for m in messages[start:]:
            copy = self._copy(m, len(seen)) if as_dicts else dict(m) if isinstance(m, Mapping) else m
            total += _encoded_size(copy if as_dicts else m)
            seen.append(copy)
            totals.append(total)
        self._mixed = self._mixed or not as_dicts
        self.work += 2 * (len(seen) - start)

    def _recount(self, messages: Sequence[Any], start: int, as_dicts: bool) -> None:
        """Compare every message from ``start`` with its copy; measure again from the first that changed."""
        seen = self._seen
        keep = min(len(seen), len(messages))
        head = messages[start:keep]
        self.work += len(head)
        if seen[start:keep] != (head if type(head) is list else list(head)):  # one C loop, then find it
            keep = next((i for i in range(start, keep) if seen[i] != messages[i]), keep)
        if as_dicts and self._mixed:
            self._as_read(keep)
        self._since = min(self._since, keep)
        self._remeasure(messages, keep, as_dicts)

    def _as_read(self, n: int) -> None:
        """The first ``n`` copies as a reader is handed them: copies that report its edits (not ``estimate``'s)."""
        seen = self._seen
        for i in range(n):
            if type(seen[i]) is not _Copy:
                seen[i] = self._copy(seen[i], i)
                self._since = min(self._since, i)
        self.work += n

    def _remeasure(self, messages: Sequence[Any], keep: int, as_dicts: bool) -> None:
        """From ``keep`` on: a message equal to its copy at the same place keeps its size, the others are measured."""
        seen, totals = self._seen, self._totals
        old = seen[keep:]
        sizes = [totals[i + 1] - totals[i] for i in range(keep, len(seen))]
        del seen[keep:], totals[keep + 1:]
        total, plain = totals[-1], False
        for j, m in enumerate(messages[keep:]):
            if j < len(old) and old[j] == m and (not as_dicts or type(old[j]) is _Copy):
                copy, size = old[j], sizes[j]
                self.work += 1
            else:  # as_dicts: measured as the dict the caller reads (a model object becomes its fields)
                copy = self._copy(m, len(seen)) if as_dicts else dict(m) if isinstance(m, Mapping) else m
                size = _encoded_size(copy if as_dicts else m)
                plain = plain or not as_dicts
                self.work += 3
            seen.append(copy)
            total += size
            totals.append(total)
        self._mixed = not as_dicts and (self._mixed or plain)

    def _restore(self) -> None:
        """Put the copies the reader edited back as they were measured, in the view too."""
        seen, view = self._seen, self._view
        for copy, measured in self._marks.values():
            at = copy._at
            if at < len(seen) and seen[at] is copy:  # not a copy dropped since
                fresh = seen[at] = self._copy(measured, at)
                if view is not None and at < len(view) and view[at] is copy:
                    list.__setitem__(view, at, fresh)
        self.work += len(self._marks)
        self._marks.clear()

    def _handed(self) -> _View:
        """The list of copies for the reader: last turn's, brought up to date, unless the reader changed it."""
        seen, view = self._seen, self._view
        if view is None or view.changed:
            view = self._view = _View(seen)
            self.work += len(seen)
        elif self._since < len(view) or len(view) != len(seen):
            since = min(self._since, len(view))
            list.__setitem__(view, slice(since, None), seen[since:])
            self.work += len(seen) - since
        self._since = len(seen)
        return view
