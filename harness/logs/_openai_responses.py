"""``openai-responses``: OpenAI Responses logs.

``function_call`` items (``call_id``, ``name``, ``arguments``), ``function_call_output``
items (``call_id``, ``output``) and ``message`` items, as a list, a request
(``{"input": [...]}``), a response (``{"output": [...]}``) or both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolchaos.logs._conversation import RecordedCall, RecordedTurn
from toolchaos.logs._documents import Estimator, Usage, apply_usage, attach, document_format, usage_of
from toolchaos.logs._fields import BadField, as_args, as_list, as_map, as_str, text_of

Item = tuple[str, Any]  # (field path, item)

_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
# Item types only the Responses API writes: one of them, without a role, is a Responses record.
_ITEMS = {"function_call", "function_call_output", "reasoning", "message", "input_text", "web_search_call",
          "file_search_call", "computer_call", "computer_call_output", "custom_tool_call", "custom_tool_call_output"}


def turns(data: Any) -> list[RecordedTurn]:
    """The model turns of one conversation: function calls in a row are one turn."""
    items, usage = _items(data)
    out: list[RecordedTurn] = []
    est = Estimator()
    current: RecordedTurn | None = None  # the turn consecutive function calls belong to
    for where, raw in items:
        item = as_map(raw, where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind is None:
            raise BadField(f"{where}.type", "missing: every item has a type (message, function_call, "
                                            "function_call_output, ...)")
        if kind in _CALLS:
            if current is None:
                current = RecordedTurn(tokens_in=est.tokens(), estimated=True)
                out.append(current)
            current.calls.append(_call(item, kind, where))
        elif kind in _OUTPUTS:
            current = None
            cid = item.get("call_id")
            if cid is None:
                raise BadField(f"{where}.call_id", "missing: a function_call_output names the call_id it answers")
            attach(out, str(cid), item.get("output"), None, f"{where}.call_id")
        elif kind == "message":
            current = None
            if item.get("role") == "assistant":
                out.append(RecordedTurn(text=text_of(item.get("content")) or "", tokens_in=est.tokens(),
                                        estimated=True))
        # any other item (reasoning, hosted tools) is no decision of the agent's runtime
        est.add(item)
    apply_usage(out, usage)
    return out


def _items(data: Any) -> tuple[list[Item], Usage]:
    """The items of a list, or of a request's input followed by its response's output, and its usage."""
    if not isinstance(data, Mapping):
        return [(f"[{i}]", x) for i, x in enumerate(as_list(data, "items"))], (None, None)
    response: Mapping[str, Any] = data["response"] if isinstance(data.get("response"), Mapping) else data
    if "input" not in data and "output" not in response:
        raise BadField("input", "missing: expected a list of items, a request with `input` or a response with "
                                "`output`")
    items: list[Item] = []
    if "input" in data:
        inp = data["input"]
        if isinstance(inp, str):
            inp = [{"type": "message", "role": "user", "content": inp}]
        items += [(f"input[{i}]", x) for i, x in enumerate(as_list(inp, "input"))]
    if "output" not in response:
        return items, (None, None)
    base = "response.output" if response is not data else "output"
    items += [(f"{base}[{i}]", x) for i, x in enumerate(as_list(response["output"], base))]
    return items, usage_of(response)


def _call(item: Mapping[str, Any], kind: str, where: str) -> RecordedCall:
    cid = item.get("call_id", item.get("id"))
    if cid is None:
        raise BadField(f"{where}.call_id", "missing: a function_call names its call_id")
    name = as_str(item.get("name"), f"{where}.name")
    raw_args = item.get("arguments") if kind == "function_call" else {"input": item.get("input")}
    return RecordedCall(str(cid), name, as_args(raw_args, f"{where}.arguments"))


def _is_record(data: Mapping[str, Any]) -> bool:
    """A response, a request (``input``), or one item of its own type."""
    if data.get("object") == "response" or isinstance(data.get("output"), list) or isinstance(data.get("input"), list):
        return True
    return (data.get("type") in _ITEMS and "role" not in data) or data.get("type") == "function_call"


def _is_item(item: Mapping[str, Any]) -> bool:
    """A function call or its output, reasoning, or a message with typed ``input_``/``output_`` parts."""
    t = item.get("type")
    if t in ("function_call", "function_call_output", "reasoning"):
        return True
    content = item.get("content")
    return t == "message" and "role" in item and isinstance(content, list) and any(
        isinstance(b, Mapping) and str(b.get("type", "")).startswith(("input_", "output_")) for b in content)


def _is_one_item(record: Any) -> bool:
    """A JSON Lines record that is one item of a conversation, not a whole request or response."""
    return isinstance(record, Mapping) and "type" in record and record.get("object") != "response" \
        and "output" not in record


FORMAT = document_format(
    "openai-responses", "OpenAI Responses: function_call and function_call_output items, a request or a response",
    "OpenAI Responses items", 30, turns, message_like=_is_one_item, record=_is_record, message=_is_item)
