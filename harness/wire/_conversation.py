"""Request bodies read per conversation: each request costs what is new in it, not its history.

An SDK agent sends the whole conversation with every request, so a run of n turns would
parse and convert n²/2 messages. ``Conversations`` keeps, per endpoint, the last few
conversations it has read: the body text up to the end of the last message, the parsed
messages and their neutral form. A body that starts with the same text (every byte of
the keys before the message list and of the messages up to there) continues that
conversation: only the messages after it and the keys after the list are parsed, and
only the new messages are converted. Anything else (an edited or truncated history, a
different conversation, a body whose layout it does not follow) is read in full, exactly
as ``json.loads`` reads it, and becomes a conversation of its own.

Each message converts on its own (``convert``), so the neutral form of a known message
is the one made when it was new. Callers hold the wire's lock: one request at a time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_ws = json.decoder.WHITESPACE.match  # type: ignore[attr-defined]  # JSON's own whitespace rule
_value = json.JSONDecoder().raw_decode
KEEP = 8  # conversations remembered per endpoint (agents that run sub-agents side by side)
Convert = Callable[[Any], list[dict[str, Any]]]


class _Layout(ValueError):
    """A body this reader does not follow: read it with ``json.loads``."""


@dataclass
class _Conversation:
    prefix: str  # the body text up to the end of the last message read
    head: dict[str, Any]  # the keys before the message list (their text is in the prefix)
    raw: list[Any]  # the messages as parsed
    neutral: list[dict[str, Any]]  # the neutral messages of raw[:converted]
    converted: int = 0


class Conversations:
    """The bodies of one wire's requests, read incrementally (see the module docstring)."""

    def __init__(self, key: str = "messages", keep: int = KEEP) -> None:
        self.key = key
        self.keep = keep
        self._known: dict[str, list[_Conversation]] = {}
        self._latest: tuple[list[Any], _Conversation] | None = None  # the message list read last, and its conversation
        self.reads = {"full": 0, "continued": 0}  # how bodies were read (for tests and benchmarks)

    def read(self, endpoint: str, content: bytes) -> Any:
        """The body as ``json.loads(content)`` gives it; raises what it raises."""
        self._latest = None
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            return json.loads(content)  # UTF-16/32 bodies: json.loads detects them; not kept
        known = self._known.setdefault(endpoint, [])
        for i, conv in enumerate(known):
            if text.startswith(conv.prefix):
                try:
                    body = self._continue(conv, text)
                except (_Layout, ValueError, IndexError):
                    break
                known.insert(0, known.pop(i))
                self.reads["continued"] += 1
                return body
        self.reads["full"] += 1
        try:
            new, body = self._full(text)
        except (_Layout, ValueError, IndexError):
            return json.loads(content)  # the same value or error as before (BOMs, odd layouts, bad JSON)
        if new is not None:
            known.insert(0, new)
            del known[self.keep:]
            self._latest = (body[self.key], new)
        return body

    def messages(self, body: Any, convert: Convert) -> list[dict[str, Any]]:
        """The neutral messages of ``body[key]``: only those not converted before are converted now."""
        latest = self._latest
        raw = body.get(self.key) if isinstance(body, dict) else None
        if latest is None or latest[0] is not raw:  # not the body read last: convert it all
            return [n for m in raw or () for n in convert(m)]
        conv = latest[1]
        if conv.converted < len(raw):
            fresh = [n for m in raw[conv.converted:] for n in convert(m)]
            conv.neutral = conv.neutral + fresh  # a new list: an earlier request's view keeps its own
            conv.converted = len(raw)
        return list(conv.neutral)

    # --- reading ---------------------------------------------------------------------------

    def _full(self, text: str) -> tuple[_Conversation | None, dict[str, Any]]:
        """Read a whole body; a conversation when it is an object with a non-empty message list."""
        i = _ws(text, 0).end()
        if text[i] != "{":
            raise _Layout
        head: dict[str, Any] = {}
        i, found = self._keys(text, i + 1, head, allow_list=True)
        if found is None:
            return None, head
        start, raw, end = found
        conv = _Conversation(text[:end], {k: head[k] for k in list(head)[:start]}, raw, [])
        return conv, head

    def _continue(self, conv: _Conversation, text: str) -> dict[str, Any]:
        """Read a body that starts with ``conv.prefix``: the new messages and the keys after the list."""
        raw = list(conv.raw)
        i, end = self._elements(text, len(conv.prefix), raw, first=False)
        body = dict(conv.head)
        body[self.key] = raw
        self._keys(text, i, body, allow_list=False)
        if len(raw) > len(conv.raw):
            if end is None:  # the last new element is not an object: a later body could extend it
                return body
            conv.prefix = text[:end]
        conv.raw = raw
        self._latest = (raw, conv)
        return body

    def _keys(self, text: str, i: int, out: dict[str, Any], *, allow_list: bool
              ) -> tuple[int, tuple[int, list[Any], int] | None]:
        """The object's members to its closing brace (the message list kept apart).

        ``i`` is just after the opening brace (``allow_list``: a whole body) or just after the
        message list's closing bracket (the rest of a continued body).
        """
        found = None
        i = _ws(text, i).end()
        if text[i] == "}" and allow_list:
            return self._end(text, i), None
        if not allow_list:  # after the list: a comma and more members, or the end
            if text[i] == "}":
                return self._end(text, i), None
            if text[i] != ",":
                raise _Layout
            i = _ws(text, i + 1).end()
        while True:
            key, i = _value(text, i)
            if not isinstance(key, str):
                raise _Layout
            i = _ws(text, i).end()
            if text[i] != ":":
                raise _Layout
            i = _ws(text, i + 1).end()
            if key in out or (key == self.key and not allow_list):
                raise _Layout  # a repeated key, or the list again after it: json.loads decides
            if key == self.key and text[i] == "[":
                raw: list[Any] = []
                i, end = self._elements(text, i + 1, raw, first=True)
                out[key] = raw
                if end is not None:
                    found = (len(out) - 1, raw, end)
            else:
                out[key], i = _value(text, i)
            i = _ws(text, i).end()
            if text[i] == "}":
                return self._end(text, i), found
            if text[i] != ",":
                raise _Layout
            i = _ws(text, i + 1).end()

    @staticmethod
    def _elements(text: str, i: int, out: list[Any], *, first: bool) -> tuple[int, int | None]:
        """Array elements from ``i`` (just after ``[``, or after an element) to the closing bracket.

        Returns the index after ``]`` and where the last element ends, if it is an object: the
        text up to there is a prefix no later body can extend into a different value.
        """
        end = None
        i = _ws(text, i).end()
        if first and text[i] != "]":
            value, i = _value(text, i)
            out.append(value)
            end = i if isinstance(value, dict) else None
            i = _ws(text, i).end()
        while text[i] == ",":
            value, i = _value(text, _ws(text, i + 1).end())
            out.append(value)
            end = i if isinstance(value, dict) else None
            i = _ws(text, i).end()
        if text[i] != "]":
            raise _Layout
        return i + 1, end

    @staticmethod
    def _end(text: str, i: int) -> int:
        """After the body's closing brace only whitespace may follow."""
        i = _ws(text, i + 1).end()
        if i != len(text):
            raise _Layout
        return i
