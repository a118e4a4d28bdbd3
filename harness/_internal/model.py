"""The model side of a run: turns, tool calls, usage, and what the model reads back.

The in-process agent contract speaks a neutral chat format (close to OpenAI's):

- ``{"role": "user", "content": task}``
- ``{"role": "assistant", "content": text, "tool_calls": [{"id", "name", "arguments"}]}``
- ``{"role": "tool", "tool_call_id": id, "content": anything}``

``interpret`` reads a tool message's content the way a model would: as data, an error
(retryable or not), something empty or something malformed. Policies decide from that
reading, so an agent that hides an error from the model is tested as it really behaves.

Whether a call was executed at all is not read from words: ``read_feedback`` takes the
harness's own record of each requested call (``Handled``: executed, refused through
``tools.refuse``, or never executed), so a refusal reads as one whatever the runtime told
the model ("Potential loop detected", "Tool call limit exceeded", a ``json.dumps``'d
dict). Only content the harness has no record of (a recorded log, a call id the runtime
made up) is read for refusal words.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

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
_RETRY_WORDS = ("timeout", "timed out", "unavailable", "503", "429", "rate limit", "reset", "try again", "temporar")
_FATAL_WORDS = ("denied", "not found", "invalid", "permission", "forbidden", "blocked", "not allowed")
_ERROR_WORDS = ("error", "exception", "failed", "failure", *_RETRY_WORDS, *_FATAL_WORDS)
_REFUSAL_WORDS = ("refused", "loop guard", "not executed", "guard:", "stopped by")


@quick_init
@dataclass(frozen=True, slots=True)
class Feedback:
    """A tool result as the model reads it."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    content: Any
    kind: str  # ok | empty | error | refused | malformed | pending | missing
    retryable: bool | None = None
    code: str | None = None
    retry_after: float | None = None
    executed: bool | None = None  # the harness's record of the call; None: no record (read from the words)

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


def interpret(content: Any, refusals: bool = True) -> tuple[str, bool | None, str | None, float | None]:
    """(kind, retryable, code, retry_after) of a tool message's content.

    ``refusals``: read refusal words and ``{"refused": true}`` as a refusal; off for a call
    the harness saw executed (its record, not the wording, says what happened).
    """
    kind = type(content)
    if kind is not dict and isinstance(content, (bytes, bytearray)):  # an exact dict (most results) is neither
        content = content.decode(errors="replace")
    if kind is not dict and isinstance(content, str):
        text = content.strip()
        if not text:
            return "empty", None, None, None
        if text[0] in "{[\"":
            try:
                parsed = json.loads(text)
            except ValueError:
                return "malformed", None, "malformed", None
            # A JSON string is a result the runtime json.dumps()'d: read what it holds.
            return interpret(parsed, refusals)
        return _interpret_text(text.lower(), refusals=refusals)
    if kind is dict or isinstance(content, Mapping):  # exact dicts, most results: no abstract check
        if refusals and content.get("refused"):
            return "refused", False, str(content.get("guard") or "refused"), None
        err = content.get("error")
        if err:
            return _interpret_error(err, refusals)
        status = content.get("status")
        if isinstance(status, str) and status.lower() in PENDING_STATES:
            return "pending", True, "processing", None
    if is_empty(content):
        return "empty", None, None, None
    return "ok", None, None, None


def _interpret_error(err: Any, refusals: bool) -> tuple[str, bool | None, str | None, float | None]:
    """A result's ``error`` field: a structured error says what it is; any other is read from its words.

    Apart from ``interpret`` because an error is the rarer result: the ok path stays one call.
    """
    if type(err) is dict or isinstance(err, Mapping):
        retryable, retry_after = err.get("retryable"), err.get("retry_after")
        return ("error", retryable if isinstance(retryable, bool) else None, str(err.get("code") or "error"),
                float(retry_after) if isinstance(retry_after, (int, float)) else None)
    return _interpret_text(str(err).lower(), default="error", refusals=refusals)


def _interpret_text(low: str, default: str = "ok", refusals: bool = True
                    ) -> tuple[str, bool | None, str | None, float | None]:
    if refusals and any(w in low for w in _REFUSAL_WORDS):
        return "refused", False, "refused", None
    if default == "error" or any(w in low for w in _ERROR_WORDS):
        if any(w in low for w in _RETRY_WORDS):
            return "error", True, "retryable", None
        if any(w in low for w in _FATAL_WORDS):
            return "error", False, "fatal", None
        return "error", None, "error", None
    return default, None, None, None


@dataclass
class ModelView:
    """Everything a policy may look at when it decides the next turn."""

    task: str
    step: int  # 1-based model turn
    messages: list[dict[str, Any]]
    feedback: list[Feedback]  # results of the previous turn's calls, as the model reads them
    tools: list[str]
    rng: random.Random
    memory: dict[str, Any] = field(default_factory=dict)  # the policy's own notes for this run


@quick_init
@dataclass(frozen=True, slots=True)
class Handled:
    """What the harness recorded of one call the model asked for: executed, or not (and why)."""

    executed: bool
    code: str | None = None  # not executed: the guard a refusal named, or ``not_executed``

    @classmethod
    def of(cls, kind: str, guard: str | None = None) -> Handled:
        """From the trace event kind that handled the call (``tool``, ``refusal``, ``skipped``)."""
        if kind == "tool":
            return _EXECUTED
        return cls(False, (guard or "refused") if kind == "refusal" else "not_executed")


_EXECUTED = Handled(True)


def read_feedback(messages: Sequence[Mapping[str, Any]], record: Mapping[str, Handled] | None = None
                  ) -> list[Feedback]:
    """The tool results after the last assistant message, matched to the calls they answer.

    ``record``: the harness's record of the calls by call id. An executed call is read from its
    content, refusal words ignored. A call it did not execute reads as refused whatever the
    runtime wrote in its place (or when it wrote nothing), unless the runtime answered it with
    data (a recorded result, as a ledger that does not repeat an effect answers): that data is
    read as the result. A call without a record is read from the words.
    """
    last = -1
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant":
            last = i
            break
    if last < 0:
        return []
    asked = {c["id"]: c for c in (messages[last].get("tool_calls") or [])}
    out: list[Feedback] = []
    answered = set()
    for msg in messages[last + 1:]:
        if msg.get("role") != "tool":
            continue
        cid = str(msg.get("tool_call_id", ""))
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


def _feedback(cid: str, tool: str, call: Mapping[str, Any], content: Any, handled: Handled | None) -> Feedback:
    args = dict(call.get("arguments") or {})
    if handled is None:
        kind, retryable, code, retry_after = interpret(content)
        return Feedback(cid, tool, args, content, kind, retryable, code, retry_after)
    if handled.executed:
        kind, retryable, code, retry_after = interpret(content, refusals=False)
        return Feedback(cid, tool, args, content, kind, retryable, code, retry_after, executed=True)
    if is_data(content):  # not run, but answered with data (a ledger's recorded result): read the data
        kind, retryable, code, retry_after = interpret(content)
        if kind != "refused":
            return Feedback(cid, tool, args, content, kind, retryable, code, retry_after, executed=False)
    # Prose in place of a result ("Potential loop detected ...", "Tool call limit exceeded"), or nothing.
    return Feedback(cid, tool, args, content, "refused", False, handled.code, None, executed=False)


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


class _Copy(dict):  # type: ignore[type-arg]
    """The policy's copy of a message: an edit marks its index in the meter's set of edited copies.

    So a meter told that the caller's messages are unchanged (``TokenMeter.read``'s
    ``unchanged``) finds the copies a policy edited without comparing every copy with its
    message. A plain dict in every other respect (``copy.copy`` and pickles are plain dicts).
    """

    __slots__ = ("_at", "_marks")
    _marks: set[int]
    _at: int

    def _edited(self) -> None:
        self._marks.add(self._at)

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


class TokenMeter:
    """``estimate_tokens`` for a conversation that grows turn by turn, without re-encoding it.

    Encoding the whole conversation every turn made a long run quadratic. The meter keeps a
    shallow copy of each message beside the running total of the encoded sizes up to it, and
    re-encodes only the messages that are new or no longer equal to their copy (an agent that
    trims old tool results is measured again). The unchanged prefix is found by one list
    comparison (a C loop, each message against its copy), so a turn costs what is new in it
    plus a comparison, not a Python loop over the history. A caller that owns its messages
    and never edits them (the wire) may say how many are unchanged since its last call, and
    then not even the comparison is made. The figure is the one ``estimate_tokens`` gives for
    the same list.
    """

    __slots__ = ("_marks", "_seen", "_source", "_totals")

    def __init__(self) -> None:
        self._seen: list[Any] = []  # a shallow copy of each message measured
        self._totals: list[int] = [0]  # _totals[i]: the encoded sizes of the first i messages
        self._marks: set[int] = set()  # indices of the policy's copies it edited since they were made
        self._source: object | None = None  # who vouched for the messages of the last read, if anyone

    def estimate(self, messages: Sequence[Any]) -> int:
        self._update(messages)
        return self._total(len(messages))

    def count(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """``estimate`` of messages the next ``read`` will be given: measured as ``read`` measures them.

        So the copies a ``read`` right after hands out are made here, and that read finds
        nothing new to measure: a runtime that counts its prompt before sending it does not
        cost a second encoding of every message.
        """
        self._source = None  # the next read compares: a vouched read must follow a read
        self._update(messages, as_dicts=True)
        return self._total(len(messages))

    def _total(self, n: int) -> int:
        return 8 + (2 + self._totals[n] + max(n - 1, 0)) // 4

    def read(self, messages: Sequence[Mapping[str, Any]], unchanged: int = 0, source: object | None = None
             ) -> list[dict[str, Any]]:
        """Shallow copies of ``messages`` (measured): the copies of unchanged messages are last turn's.

        A caller that edits a copy gets a fresh one next turn. ``source`` and ``unchanged``: the
        caller vouches that its first ``unchanged`` messages are the very objects it passed to the
        last read with the same ``source``, never edited since; the meter then measures only the
        rest. Honoured only when that last read was the previous one (another caller in between,
        or another conversation of the same caller, and every message is compared as usual).
        """
        vouched = source is not None and source is self._source and unchanged <= min(len(self._seen), len(messages))
        self._source = source
        if not vouched:
            self._update(messages, as_dicts=True)
            self._marks.clear()  # the comparison has replaced every edited copy
            return list(self._seen)
        seen = self._seen
        for i in self._marks:  # the policy's edits: a fresh copy of the (unchanged) message
            if i < unchanged:
                seen[i] = self._copy(messages[i], i)
        self._marks.clear()
        self._remeasure(messages, unchanged, True)
        return list(seen)

    def _copy(self, m: Any, at: int) -> _Copy:
        copy = _Copy(m)
        copy._marks, copy._at = self._marks, at
        return copy

    def _update(self, messages: Sequence[Any], as_dicts: bool = False) -> None:
        seen, totals = self._seen, self._totals
        n, keep = len(messages), len(seen)
        if keep > n:
            head = None
        elif keep == n and type(messages) is list:  # nothing added (the turn's own estimate, a read after a count)
            head = messages
        else:
            head = list(messages[:keep])
        if head is None or (keep and seen != head):  # shorter, or changed: find the first change
            keep = min(keep, n)
            keep = next((i for i in range(keep) if seen[i] != messages[i]), keep)
            self._remeasure(messages, keep, as_dicts)
            return
        for m in messages[keep:] if keep else messages:  # the usual turn: new messages at the end
            copy = self._copy(m, len(seen)) if as_dicts else dict(m) if isinstance(m, Mapping) else m
            seen.append(copy)
            totals.append(totals[-1] + _encoded_size(copy if as_dicts else m))

    def _remeasure(self, messages: Sequence[Any], keep: int, as_dicts: bool) -> None:
        """From the first changed message on: each one equal to its copy keeps its size."""
        seen, totals = self._seen, self._totals
        old = [(seen[i], totals[i + 1] - totals[i]) for i in range(keep, len(seen))]
        del seen[keep:], totals[keep + 1:]
        for j, m in enumerate(messages[keep:]):
            if j < len(old) and old[j][0] == m:
                copy, size = old[j]
            else:  # as_dicts: measured as the dict the caller reads (a model object becomes its fields)
                copy = self._copy(m, len(seen)) if as_dicts else dict(m) if isinstance(m, Mapping) else m
                size = _encoded_size(copy if as_dicts else m)
            seen.append(copy)
            totals.append(totals[-1] + size)
