"""Request bodies read per conversation: each request costs what is new in it, not its history.

An SDK agent sends the whole conversation with every request, so a run of n turns would
parse and convert n²/2 messages. ``Conversations`` keeps, per endpoint, the last few
conversations it has read: the last body's bytes and where its last message ends in them,
the parsed messages and their neutral form. A body whose bytes start with the same bytes
up to there (every byte of the keys before the message list and of the messages) continues
that conversation: one byte comparison, then only the bytes after it are decoded and parsed
(the new messages and the keys after the list), and only the new messages are converted.
Anything else (an edited or truncated history, a different conversation, a body whose layout
it does not follow) is read in full, exactly as ``json.loads`` reads it, and becomes a
conversation of its own.

Each message converts on its own (``convert``), so the neutral form of a known message
is the one made when it was new, the same object every time: ``handed`` says how many of
the messages it hands out are the objects it handed out with that conversation last time,
which lets the token meter skip them. Callers hold the wire's lock: one request at a time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolchaos.wire._shapes import array

_ws = json.decoder.WHITESPACE.match  # type: ignore[attr-defined]  # JSON's own whitespace rule
_value = json.JSONDecoder().raw_decode
KEEP = 8  # conversations remembered per endpoint (agents that run sub-agents side by side)
Convert = Callable[[Any], list[dict[str, Any]]]


class _Layout(ValueError):
    """A body this reader does not follow: read it with ``json.loads``."""


@dataclass(eq=False)
class _Conversation:
    data: bytes  # the last body read in it (kept, not copied: the client built it anyway)
    end: int  # where its last message read ends in ``data``: ``data[:end]`` is what a continuation starts with
    head: dict[str, Any]  # the keys before the message list (their bytes are in the prefix)
    raw: list[Any]  # the messages as parsed
    neutral: list[dict[str, Any]]  # the neutral messages of raw[:converted]; only ever appended to
    converted: int = 0
    lead: list[dict[str, Any]] = field(default_factory=list)  # neutral messages handed before them last time


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
        known = self._known.setdefault(endpoint, [])
        for i, conv in enumerate(known):
            # one C-level comparison of the known prefix, in place (a memoryview slice copies nothing)
            if len(content) > conv.end and content.startswith(memoryview(conv.data)[:conv.end]):
                try:
                    body = self._continue(conv, content)
                except (_Layout, ValueError, IndexError):  # UnicodeDecodeError included
                    break
                known.insert(0, known.pop(i))
                self.reads["continued"] += 1
                return body
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            return json.loads(content)  # UTF-16/32 bodies: json.loads detects them; not kept
        self.reads["full"] += 1
        try:
            new, body = self._full(text, content)
        except (_Layout, ValueError, IndexError):
            return json.loads(content)  # the same value or error as before (BOMs, odd layouts, bad JSON)
        if new is not None:
            known.insert(0, new)
            del known[self.keep:]
            self._latest = (body[self.key], new)
        return body

    def messages(self, body: Any, convert: Convert) -> list[dict[str, Any]]:
        """The neutral messages of ``body[key]``: only those not converted before are converted now."""
        return self.handed(body, convert)[0]

    def handed(self, body: Any, convert: Convert, lead: Sequence[dict[str, Any]] = ()
               ) -> tuple[list[dict[str, Any]], int, object | None]:
        """``lead`` and the neutral messages of ``body[key]``, as a new list; how many of its first
        messages are the objects handed out with the same conversation last time (unchanged: the
        harness never edits them); and that conversation (None: not the body read last).

        ``lead`` (the wire's neutral system message) is compared with last time's: when equal,
        last time's objects are handed again, so they count as unchanged too.
        """
        latest = self._latest
        raw = body.get(self.key) if isinstance(body, dict) else None
        if latest is None or latest[0] is not raw:  # not the body read last: convert it all
            return [*lead, *(n for m in array(raw, self.key) for n in convert(m))], 0, None
        conv = latest[1]
        unchanged = len(conv.neutral)  # what was handed out with it last time (it is only appended to)
        if conv.converted < len(raw):
            conv.neutral += [n for m in raw[conv.converted:] for n in convert(m)]
            conv.converted = len(raw)
        if conv.lead != list(lead):
            conv.lead, unchanged = list(lead), 0
        elif unchanged:
            unchanged += len(conv.lead)
        return conv.lead + conv.neutral, unchanged, conv

    # --- reading ---------------------------------------------------------------------------

    def _full(self, text: str, content: bytes) -> tuple[_Conversation | None, dict[str, Any]]:
        """Read a whole body; a conversation when it is an object with a non-empty message list."""
        i = _ws(text, 0).end()
        if text[i] != "{":
            raise _Layout
        head: dict[str, Any] = {}
        i, found = self._keys(text, i + 1, head, allow_list=True)
        if found is None:
            return None, head
        start, raw, end = found
        conv = _Conversation(content, _byte_offset(text, content, end), {k: head[k] for k in list(head)[:start]},
                             raw, [])
        return conv, head

    def _continue(self, conv: _Conversation, content: bytes) -> dict[str, Any]:
        """Read a body that starts with ``conv``'s prefix: the new messages and the keys after the list.

        Only the bytes after the prefix are decoded: the prefix ends just after a ``}``, never
        inside a character, and its bytes decoded when they were new.
        """
        tail_bytes = content[conv.end:]
        tail = tail_bytes.decode("utf-8")
        fresh, i, end = _fresh(tail)
        body = dict(conv.head)
        raw = body[self.key] = conv.raw + fresh  # a list of its own: an earlier request's body keeps its own
        self._rest(tail, i, body)
        if fresh:
            if end is None:  # the last new element is not an object: a later body could extend it
                return body
            conv.end += _byte_offset(tail, tail_bytes, end)
            conv.data = content
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
                i, end = self._elements(text, i + 1, raw)
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
    def _elements(text: str, i: int, out: list[Any]) -> tuple[int, int | None]:
        """Array elements from ``i`` (just after ``[``) to the closing bracket.

        Returns the index after ``]`` and where the last element ends, if it is an object: the
        text up to there is a prefix no later body can extend into a different value.
        """
        end = None
        i = _ws(text, i).end()
        if text[i] != "]":
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

    def _rest(self, tail: str, i: int, body: dict[str, Any]) -> None:
        """The members after the message list (``i``: just after its ``]``) into ``body``, in one C call."""
        i = _ws(tail, i).end()
        if tail[i] == "}":
            self._end(tail, i)
            return
        if tail[i] != ",":
            raise _Layout
        text = "{" + tail[i + 1:]  # the brace stands in for the comma
        rest, j = _value(text, 0)
        if not rest or _ws(text, j).end() != len(text):
            raise _Layout  # ",}" (not JSON), or something after the body
        if self.key in rest or any(k in body for k in rest):
            raise _Layout  # a key again (json.loads keeps its last value, at its first place): read it in full
        body.update(rest)

    @staticmethod
    def _end(text: str, i: int) -> int:
        """After the body's closing brace only whitespace may follow."""
        i = _ws(text, i + 1).end()
        if i != len(text):
            raise _Layout
        return i


def _fresh(tail: str) -> tuple[list[Any], int, int | None]:
    """The elements after a known prefix (``tail`` starts just after its last element), in one C call.

    Returns them, the index after the list's ``]``, and where the last of them ends if it is an
    object (else None: a later body could extend it, see ``_elements``).
    """
    i = _ws(tail, 0).end()
    if tail[i] == "]":
        return [], i + 1, None
    if tail[i] != ",":
        raise _Layout
    fresh, j = _value("[" + tail[i + 1:], 0)  # the bracket stands in for the comma: same indices from i on
    if not fresh:
        raise _Layout  # "[..., ]": not JSON
    j += i
    end = len(tail[:j - 1].rstrip(" \t\n\r"))  # the last element ends at the last non-space before "]"
    return fresh, j, end if isinstance(fresh[-1], dict) else None


def _byte_offset(text: str, data: bytes, i: int) -> int:
    """Where ``text[:i]`` ends in ``data``, the UTF-8 bytes ``text`` was decoded from."""
    return i if len(text) == len(data) else len(text[:i].encode("utf-8"))
