"""``anthropic``: Anthropic Messages logs.

``tool_use`` blocks (``id``, ``name``, ``input``) in assistant messages, ``tool_result``
blocks (``tool_use_id``, ``content``, ``is_error``) in user messages; a list, a request
(``{"messages": [...]}``, optionally with its ``response``) or a ``message`` response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolchaos.logs._conversation import RecordedCall, RecordedTurn
from toolchaos.logs._documents import Estimator, Usage, apply_usage, attach, document_format, usage_of
from toolchaos.logs._fields import BadField, as_args, as_list, as_map, as_str, kind_of, text_of

Item = tuple[str, Any]  # (field path, message)


def turns(data: Any) -> list[RecordedTurn]:
    """The model turns of one conversation, tool results attached to the calls they answer."""
    messages, usage = _messages(data)
    out: list[RecordedTurn] = []
    est = Estimator()
    for where, raw in messages:
        m = as_map(raw, where)
        role = m.get("role")
        if role not in ("user", "assistant"):
            raise BadField(f"{where}.role", f"expected 'user' or 'assistant', got {kind_of(role)}")
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if role == "assistant":
            out.append(_assistant_turn(blocks, where, est.tokens()))
        else:
            _attach_results(out, blocks, where)
        est.add(m)
    apply_usage(out, usage)
    return out


def _messages(data: Any) -> tuple[list[Item], Usage]:
    """The messages of a list, a request (its response last) or a lone response, and the usage."""
    if not isinstance(data, Mapping):
        return _numbered(as_list(data, "messages")), (None, None)
    if data.get("type") == "message" and "content" in data:
        return [("message", data)], usage_of(data)
    if "messages" not in data:
        raise BadField("messages", "missing: expected a list of messages, a request with `messages` or a "
                                   "message response")
    messages = as_list(data["messages"], "messages")
    response = data.get("response")
    if isinstance(response, Mapping):
        return _numbered([*messages, response]), usage_of(response)
    return _numbered(messages), (None, None)


def _numbered(messages: list[Any]) -> list[Item]:
    return [(f"messages[{i}]", m) for i, m in enumerate(messages)]


def _assistant_turn(blocks: list[Any], where: str, tokens_in: int) -> RecordedTurn:
    turn = RecordedTurn(tokens_in=tokens_in, estimated=True)
    for j, raw_block in enumerate(blocks):
        bw = f"{where}.content[{j}]"
        b = as_map(raw_block, bw)
        if b.get("type") == "tool_use":
            cid = b.get("id")
            if cid is None:
                raise BadField(f"{bw}.id", "missing: a tool_use block has an id")
            turn.calls.append(RecordedCall(str(cid), as_str(b.get("name"), f"{bw}.name"),
                                           as_args(b.get("input"), f"{bw}.input")))
    if not turn.calls:
        turn.text = text_of([b for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"]) or ""
    return turn


def _attach_results(turns: list[RecordedTurn], blocks: list[Any], where: str) -> None:
    """A user message's ``tool_result`` blocks answer the calls they name; other blocks are the user's."""
    for j, raw_block in enumerate(blocks):
        bw = f"{where}.content[{j}]"
        b = raw_block if isinstance(raw_block, Mapping) else {}
        if b.get("type") != "tool_result":
            continue
        cid = b.get("tool_use_id")
        if cid is None:
            raise BadField(f"{bw}.tool_use_id", "missing: a tool_result block names the tool_use_id it answers")
        result = b.get("content")
        if isinstance(result, list):
            result = text_of(result)
        err = b.get("is_error")
        attach(turns, str(cid), result, bool(err) if err is not None else None, f"{bw}.tool_use_id")


def _is_response(data: Mapping[str, Any]) -> bool:
    return data.get("type") == "message" and isinstance(data.get("content"), list)


def _has_tool_blocks(item: Mapping[str, Any]) -> bool:
    content = item.get("content")
    return isinstance(content, list) and any(isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result")
                                             for b in content)


FORMAT = document_format(
    "anthropic", "Anthropic Messages: tool_use and tool_result blocks, a list, a request or a message response",
    "Anthropic messages", 40, turns, record=_is_response, message=_has_tool_blocks)
