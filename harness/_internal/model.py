"""The model side of a run: turns, tool calls, usage, and what the model reads back.

The in-process agent contract speaks a neutral chat format (close to OpenAI's):

- ``{"role": "user", "content": task}``
- ``{"role": "assistant", "content": text, "tool_calls": [{"id", "name", "arguments"}]}``
- ``{"role": "tool", "tool_call_id": id, "content": anything}``

``interpret`` reads a tool message's content the way a model would: as data, an error
(retryable or not), a refusal from the runtime, something empty or something
malformed. Policies decide from that reading, never from the harness's ground truth,
so an agent that hides an error from the model is tested as it really behaves.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


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

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def is_empty(value: Any) -> bool:
    """None, an empty string or container, or a mapping whose values are all empty containers."""
    if value is None or value == "" or value == [] or value == {}:
        return True
    if isinstance(value, Mapping):
        return all(isinstance(v, (list, dict)) and not v for v in value.values())
    return False


def interpret(content: Any) -> tuple[str, bool | None, str | None, float | None]:
    """(kind, retryable, code, retry_after) of a tool message's content."""
    if isinstance(content, (bytes, bytearray)):
        content = content.decode(errors="replace")
    if isinstance(content, str):
        text = content.strip()
        if not text:
            return "empty", None, None, None
        if text[0] in "{[\"":
            try:
                parsed = json.loads(text)
            except ValueError:
                return "malformed", None, "malformed", None
            if not isinstance(parsed, str):
                return interpret(parsed)
        return _interpret_text(text.lower())
    if isinstance(content, Mapping):
        if content.get("refused"):
            return "refused", False, str(content.get("guard") or "refused"), None
        err = content.get("error")
        if err:
            if isinstance(err, Mapping):
                retry_after = err.get("retry_after")
                return ("error", err.get("retryable") if isinstance(err.get("retryable"), bool) else None,
                        str(err.get("code") or "error"),
                        float(retry_after) if isinstance(retry_after, (int, float)) else None)
            return _interpret_text(str(err).lower(), default="error")
        status = content.get("status")
        if isinstance(status, str) and status.lower() in PENDING_STATES:
            return "pending", True, "processing", None
    if is_empty(content):
        return "empty", None, None, None
    return "ok", None, None, None


def _interpret_text(low: str, default: str = "ok") -> tuple[str, bool | None, str | None, float | None]:
    if any(w in low for w in _REFUSAL_WORDS):
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


def read_feedback(messages: Sequence[Mapping[str, Any]]) -> list[Feedback]:
    """The tool results after the last assistant message, matched to the calls they answer."""
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
        kind, retryable, code, retry_after = interpret(msg.get("content"))
        out.append(Feedback(cid, str(call.get("name", msg.get("name", "?"))), dict(call.get("arguments") or {}),
                            msg.get("content"), kind, retryable, code, retry_after))
    for cid, call in asked.items():
        if cid not in answered:
            out.append(Feedback(cid, str(call.get("name")), dict(call.get("arguments") or {}), None, "missing"))
    return out


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
    return lambda obj: sum(map(len, chunks(obj, 0)))


_encoded_size = _encoder()


def estimate_tokens(messages: Sequence[Any]) -> int:
    """A deterministic token estimate (~4 characters a token) that grows with the conversation."""
    return 8 + _encoded_size(messages) // 4


class TokenMeter:
    """``estimate_tokens`` for a conversation that grows turn by turn, without re-encoding it.

    Encoding the whole conversation every turn made a long run quadratic. The meter keeps each
    message's encoded size beside a shallow copy of it and re-encodes only the messages that are
    new or no longer equal to their copy (an agent that trims old tool results is measured
    again). The figure is the one ``estimate_tokens`` gives for the same list.
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: list[tuple[Any, int]] = []

    def estimate(self, messages: Sequence[Any]) -> int:
        seen = self._seen
        sizes = 0
        for i, m in enumerate(messages):
            if i < len(seen) and seen[i][0] == m:
                sizes += seen[i][1]
                continue
            size = _encoded_size(m)
            entry = (dict(m) if isinstance(m, Mapping) else m, size)
            if i < len(seen):
                seen[i] = entry
            else:
                seen.append(entry)
            sizes += size
        del seen[len(messages):]
        n = len(messages)
        return 8 + (2 + sizes + max(n - 1, 0)) // 4
