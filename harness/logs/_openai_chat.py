"""``openai-chat``: OpenAI Chat Completions logs.

A list of messages, a request body (``{"messages": [...]}``, optionally with its
``response``), or a ``chat.completion`` response; assistant ``tool_calls``
(``function.name``, ``function.arguments`` as JSON text) and ``tool`` messages answering
them by ``tool_call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolchaos.logs._conversation import RecordedCall, RecordedTurn
from toolchaos.logs._documents import Estimator, Usage, apply_usage, attach, document_format, usage_of
from toolchaos.logs._fields import BadField, as_args, as_list, as_map, as_str, number, text_of

Item = tuple[str, Any]  # (field path, message)


def turns(data: Any) -> list[RecordedTurn]:
    """The model turns of one conversation, tool results attached to the calls they answer."""
    items, usage = _messages(data)
    out: list[RecordedTurn] = []
    est = Estimator()
    for where, raw in items:
        m = as_map(raw, where)
        role = m.get("role")
        if role is None:
            raise BadField(f"{where}.role", "missing: every message has a role (system, user, assistant, tool)")
        if role == "assistant":
            out.append(_assistant_turn(m, where, est.tokens()))
        elif role in ("tool", "function"):
            _answer(out, m, role, where)
        est.add(m)
    apply_usage(out, usage)
    return out


def _messages(data: Any) -> tuple[list[Item], Usage]:
    """The messages of a list, a request or a response (the response's message last), and its usage."""
    if not isinstance(data, Mapping):
        return _numbered(as_list(data, "messages")), (None, None)
    response = data.get("response") if isinstance(data.get("response"), Mapping) else None
    if "messages" in data:
        items = _numbered(as_list(data["messages"], "messages"))
    elif "choices" in data:
        items, response = [], data
    else:
        raise BadField("messages", "missing: expected a list of messages, a request with `messages` or a "
                                   "chat.completion response with `choices`")
    if response is None:
        return items, (None, None)
    return items + _first_choice(response, "response." if response is not data else ""), usage_of(response)


def _numbered(messages: list[Any]) -> list[Item]:
    return [(f"messages[{i}]", m) for i, m in enumerate(messages)]


def _first_choice(response: Mapping[str, Any], base: str) -> list[Item]:
    """The message of the response's first choice: the one the agent used."""
    for i, choice in enumerate(as_list(response.get("choices"), f"{base}choices")):
        return [(f"{base}choices[{i}].message", as_map(choice, f"{base}choices[{i}]").get("message"))]
    return []


def _assistant_turn(m: Mapping[str, Any], where: str, tokens_in: int) -> RecordedTurn:
    turn = RecordedTurn(t=number(m.get("created")), tokens_in=tokens_in, estimated=True)
    for j, call in enumerate(m.get("tool_calls") or []):
        cw = f"{where}.tool_calls[{j}]"
        c = as_map(call, cw)
        fn = c.get("function")
        if fn is None and "name" in c:  # the harness's neutral format: {"id", "name", "arguments"}
            fn = c
        fn = as_map(fn, f"{cw}.function")
        name = as_str(fn.get("name"), f"{cw}.function.name")
        turn.calls.append(RecordedCall(c.get("id"), name, as_args(fn.get("arguments"), f"{cw}.function.arguments")))
    if not turn.calls:
        turn.text = text_of(m.get("content")) or ""
    return turn


def _answer(turns: list[RecordedTurn], m: Mapping[str, Any], role: str, where: str) -> None:
    """A ``tool`` message answers its ``tool_call_id``; a legacy ``function`` message the last call
    of its name."""
    if role == "function":
        name = m.get("name")
        cid = next((c.id for t in reversed(turns) for c in t.calls if c.tool == name), None)
    else:
        cid = m.get("tool_call_id")
        if cid is None:
            raise BadField(f"{where}.tool_call_id", "missing: a tool message names the call it answers")
    attach(turns, cid, m.get("content"), None, f"{where}.tool_call_id")


def _is_response(data: Mapping[str, Any]) -> bool:
    return data.get("object") == "chat.completion" or "choices" in data


def _is_chat_message(item: Mapping[str, Any]) -> bool:
    return bool(item.get("tool_calls")) or item.get("role") == "tool"


def _all_messages(data: list[Any]) -> bool:
    """Plain text messages (no tool call anywhere): the chat shape reads them."""
    return all(isinstance(x, Mapping) and "role" in x for x in data)


FORMAT = document_format(
    "openai-chat", "OpenAI Chat Completions: messages (tool_calls, tool messages), a request or a response",
    "OpenAI chat messages", 50, turns, record=_is_response, message=_is_chat_message, fallback=_all_messages)
