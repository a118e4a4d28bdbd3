"""The model APIs on the wire (OpenAI Chat Completions and Responses, Anthropic Messages, Gemini
generateContent): what the agent sent, and what the policy answers.

Requests are read into the harness's neutral chat format (``toolchaos._internal.model``), so the
policy sees exactly what the agent fed back: the tool results and error texts it sent,
which calls it answered and which it did not (a field of a JSON type the API does not take
there raises ``_shapes.Malformed``: a 400, see ``_shapes``). Answers are encoded as each API encodes
them, non-streamed (one JSON body) and streamed (server-sent events, in the order the
SDKs' stream parsers expect):

- Chat Completions: chunks with ``choices[].delta``; a tool call starts with its id, type
  and name at ``tool_calls[].index`` and continues with argument fragments; a last chunk
  carries ``finish_reason``, then (with ``stream_options.include_usage``) a usage chunk
  with empty ``choices``, then ``data: [DONE]``.
- Responses: ``response.created`` first, every event with a ``sequence_number`` and the
  same response id; ``output_item.added`` before any delta of that item; text parts
  through ``content_part.added``/``output_text.delta``/``output_text.done``/``content_part.done``;
  function calls through ``function_call_arguments.delta``/``.done``; ``output_item.done``;
  ``response.completed`` with the usage.
- Anthropic Messages: named events (``event:`` lines); ``message_start`` with usage;
  per block ``content_block_start``/``content_block_delta`` (``text_delta`` or
  ``input_json_delta``)/``content_block_stop``; ``message_delta`` with the stop reason and
  output usage; ``message_stop``.
- Gemini ``generateContent``: one ``GenerateContentResponse`` (``candidates[0].content.parts``:
  ``text`` parts and whole ``functionCall`` parts, with their ``id``; ``finishReason``;
  ``usageMetadata``). ``streamGenerateContent`` sends the same object in pieces: text
  fragments, then the function calls, the last piece with the finish reason and usage; as
  server-sent events (``data:`` lines) with ``alt=sse``, else one JSON array.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolchaos._internal.model import ModelTurn
from toolchaos.wire._shapes import array, obj

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


def sse(data: Mapping[str, Any], event: str | None = None) -> bytes:
    if event is None:
        return b"data: " + _dumps(data).encode() + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + _dumps(data).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


def fragments(text: str, parts: int = 3) -> list[str]:
    """``text`` in up to ``parts`` pieces (so clients really assemble deltas)."""
    if len(text) < 2 * parts:
        return [text] if text else []
    step = -(-len(text) // parts)
    return [text[i:i + step] for i in range(0, len(text), step)]


def text_of(content: Any) -> str:
    """The text of a message content: a string, or a list of text parts / blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        return str(content.get("text") or content.get("output") or "")
    if isinstance(content, Iterable):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    out.append(text)
                elif part.get("type") in ("tool_result", "input_json"):
                    out.append(text_of(part.get("content")))
        return "".join(out)
    return str(content)


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as sent: a JSON object text (OpenAI) or an object (Anthropic)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except ValueError:
            return {"_unparsed": raw}
        return dict(value) if isinstance(value, Mapping) else {"_value": value}
    return {}


def _call(cid: Any, name: Any, args: Any) -> dict[str, Any]:
    return {"id": str(cid), "name": str(name), "arguments": parse_arguments(args)}


# --- requests -> neutral messages ------------------------------------------------------


def chat_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Chat Completions ``messages`` as neutral messages."""
    return [n for m in array(body.get("messages"), "messages") for n in chat_message_in(m)]


def chat_message_in(m: Any) -> list[dict[str, Any]]:
    """One Chat Completions message as a neutral message (each reads on its own: see ``_conversation``)."""
    return [_chat_message(obj(m, "messages[]"))]


def _chat_message(m: Mapping[str, Any]) -> dict[str, Any]:
    role = m.get("role")
    if role == "assistant":
        msg: dict[str, Any] = {"role": "assistant", "content": text_of(m.get("content")) or None}
        calls = [_chat_call(tc) for tc in array(m.get("tool_calls"), "messages[].tool_calls")]
        if calls:
            msg["tool_calls"] = calls
        return msg
    if role == "tool":
        return {"role": "tool", "tool_call_id": str(m.get("tool_call_id")), "content": tool_content(m.get("content"))}
    if role in ("system", "developer"):
        return {"role": "system", "content": text_of(m.get("content"))}
    return {"role": "user", "content": text_of(m.get("content"))}


def _chat_call(tc: Any) -> dict[str, Any]:
    tc = obj(tc, "messages[].tool_calls[]")
    fn = tc.get("function")
    fn = {} if fn is None else obj(fn, "messages[].tool_calls[].function")
    return _call(tc.get("id"), fn.get("name"), fn.get("arguments"))


def tool_content(content: Any) -> Any:
    """A tool result's content as the model reads it (text; structured parts joined)."""
    if isinstance(content, str) or content is None:
        return content
    return text_of(content)


def responses_items(items: Any) -> list[dict[str, Any]]:
    """Responses API ``input`` (a string or a list of items) as neutral messages."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    out: list[dict[str, Any]] = []
    for item in array(items, "input", "a string or an array of items"):
        item = obj(item, "input[]")
        kind = item.get("type")
        if kind == "function_call":
            call = _call(item.get("call_id") or item.get("id"), item.get("name"), item.get("arguments"))
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":  # one model turn: text and calls together
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": str(item.get("call_id")),
                        "content": tool_content(item.get("output"))})
        elif kind in (None, "message"):
            role = item.get("role", "user")
            text = text_of(item.get("content"))
            if role == "assistant":
                last = out[-1] if out else None
                if last is not None and last["role"] == "assistant":
                    last["content"] = (last["content"] or "") + text
                else:
                    out.append({"role": "assistant", "content": text})
            else:
                out.append({"role": "system" if role in ("system", "developer") else "user", "content": text})
        # reasoning items, item references and hosted-tool items carry nothing a policy reads
    return out


def anthropic_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Anthropic ``messages`` (content strings or blocks) as neutral messages (``system`` apart)."""
    out: list[dict[str, Any]] = []
    for m in array(body.get("messages"), "messages"):
        out += anthropic_message_in(m)
    return out


def anthropic_message_in(m: Any) -> list[dict[str, Any]]:
    """One Anthropic message as neutral messages: a user message's tool results are one message each
    (each reads on its own: see ``_conversation``)."""
    m = obj(m, "messages[]")
    content = m.get("content")
    if m.get("role") == "assistant":
        if isinstance(content, str):
            return [{"role": "assistant", "content": content}]
        texts, calls = [], []
        for block in _blocks(content):
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind in ("tool_use", "server_tool_use"):
                calls.append(_call(block.get("id"), block.get("name"), block.get("input")))
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
        if calls:
            msg["tool_calls"] = calls
        return [msg]
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    out: list[dict[str, Any]] = []
    texts = []
    for block in _blocks(content):
        if block.get("type") == "tool_result":
            result = tool_content(block.get("content"))
            if block.get("is_error"):
                result = _as_error(result)
            out.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id")), "content": result})
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    if texts:
        out.append({"role": "user", "content": "".join(texts)})
    return out


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    """An Anthropic message's content blocks (its content is not a string)."""
    return [obj(b, "messages[].content[]")
            for b in array(content, "messages[].content", "a string or an array of content blocks")]


def _as_error(content: Any) -> Any:
    """A tool result flagged ``is_error``: the model reads it as an error, whatever its words."""
    if isinstance(content, str):
        try:
            parsed = json.loads(content)
        except ValueError:
            parsed = None
        if isinstance(parsed, Mapping) and parsed.get("error"):
            return parsed
    return {"error": content if content not in (None, "") else "the tool failed"}


def system_text(value: Any) -> str:
    return text_of(value)


# --- neutral turn -> API bodies ----------------------------------------------------------


def _args_text(args: Mapping[str, Any]) -> str:
    return _dumps(dict(args))


def chat_completion(turn: ModelTurn, *, rid: str, model: str, created: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
    if turn.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": _args_text(c.arguments)}}
                                 for c in turn.tool_calls]
    u = turn.usage
    return {"id": rid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if turn.tool_calls else "stop"}],
            "usage": {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
                      "total_tokens": u.total}}


def chat_chunks(turn: ModelTurn, *, rid: str, model: str, created: int, include_usage: bool) -> list[bytes]:
    base = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": ""})]
    for piece in fragments(turn.text or ""):
        out.append(chunk({"content": piece}))
    for i, c in enumerate(turn.tool_calls):
        out.append(chunk({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                          "function": {"name": c.name, "arguments": ""}}]}))
        for piece in fragments(_args_text(c.arguments)):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if turn.tool_calls else "stop"))
    if include_usage:
        u = turn.usage
        out.append(sse({**base, "choices": [], "usage": {"prompt_tokens": u.input_tokens,
                                                         "completion_tokens": u.output_tokens,
                                                         "total_tokens": u.total}}))
    out.append(DONE)
    return out


def _responses_usage(turn: ModelTurn) -> dict[str, Any]:
    u = turn.usage
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "total_tokens": u.total,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}


def responses_output(turn: ModelTurn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if turn.text is not None:
        out.append({"type": "message", "id": f"msg_{turn.step}", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}]})
    for i, c in enumerate(turn.tool_calls):
        item = {"type": "function_call", "id": f"fc_{turn.step}_{i}", "call_id": c.id, "name": c.name,
                "arguments": _args_text(c.arguments), "status": "completed"}
        namespace = getattr(c, "namespace", None)  # a tool the client declared inside a namespace
        if namespace is not None:
            item["namespace"] = namespace
        out.append(item)
    return out


def response_object(turn: ModelTurn | None, *, rid: str, model: str, created: int, body: Mapping[str, Any],
                    status: str = "completed") -> dict[str, Any]:
    return {
        "id": rid, "object": "response", "created_at": created, "model": model, "status": status,
        "output": responses_output(turn) if turn is not None and status == "completed" else [],
        "usage": _responses_usage(turn) if turn is not None and status == "completed" else None,
        "error": None, "incomplete_details": None, "instructions": body.get("instructions"),
        "metadata": body.get("metadata") or {}, "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"), "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0), "top_p": body.get("top_p", 1.0),
        "tool_choice": body.get("tool_choice", "auto"), "tools": list(body.get("tools") or []),
        "text": {"format": {"type": "text"}}, "truncation": "disabled",
    }


def response_events(turn: ModelTurn, *, rid: str, model: str, created: int, body: Mapping[str, Any]) -> list[bytes]:
    seq = iter(range(1_000_000))
    out: list[bytes] = []

    def ev(kind: str, **fields: Any) -> None:
        out.append(sse({"type": kind, "sequence_number": next(seq), **fields}, kind))

    pending = response_object(turn, rid=rid, model=model, created=created, body=body, status="in_progress")
    ev("response.created", response=pending)
    ev("response.in_progress", response=pending)
    items = responses_output(turn)
    for idx, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            ev("response.output_item.added", output_index=idx, item={**item, "status": "in_progress", "content": []})
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            ev("response.content_part.added", item_id=item["id"], output_index=idx, content_index=0, part=part)
            for piece in fragments(text):
                ev("response.output_text.delta", item_id=item["id"], output_index=idx, content_index=0, delta=piece,
                   logprobs=[])
            ev("response.output_text.done", item_id=item["id"], output_index=idx, content_index=0, text=text,
               logprobs=[])
            ev("response.content_part.done", item_id=item["id"], output_index=idx, content_index=0,
               part={**part, "text": text})
        else:
            ev("response.output_item.added", output_index=idx, item={**item, "arguments": "", "status": "in_progress"})
            for piece in fragments(item["arguments"]):
                ev("response.function_call_arguments.delta", item_id=item["id"], output_index=idx, delta=piece)
            ev("response.function_call_arguments.done", item_id=item["id"], output_index=idx,
               arguments=item["arguments"], name=item["name"])
        ev("response.output_item.done", output_index=idx, item=item)
    ev("response.completed", response=response_object(turn, rid=rid, model=model, created=created, body=body))
    return out


def _anthropic_content(turn: ModelTurn) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if turn.text is not None:
        content.append({"type": "text", "text": turn.text, "citations": None})
    for c in turn.tool_calls:
        content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)})
    return content


def anthropic_message(turn: ModelTurn, *, mid: str, model: str) -> dict[str, Any]:
    u = turn.usage
    return {"id": mid, "type": "message", "role": "assistant", "model": model, "content": _anthropic_content(turn),
            "stop_reason": "tool_use" if turn.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def anthropic_events(turn: ModelTurn, *, mid: str, model: str) -> list[bytes]:
    u = turn.usage
    head: dict[str, Any] = {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": u.input_tokens, "output_tokens": 1,
                                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
    out = [sse({"type": "message_start", "message": head}, "message_start")]
    for idx, block in enumerate(_anthropic_content(turn)):
        if block["type"] == "text":
            out.append(sse({"type": "content_block_start", "index": idx,
                            "content_block": {"type": "text", "text": ""}}, "content_block_start"))
            for piece in fragments(block["text"]):
                out.append(sse({"type": "content_block_delta", "index": idx,
                                "delta": {"type": "text_delta", "text": piece}}, "content_block_delta"))
        else:
            out.append(sse({"type": "content_block_start", "index": idx,
                            "content_block": {**block, "input": {}}}, "content_block_start"))
            for piece in fragments(_args_text(block["input"])):
                out.append(sse({"type": "content_block_delta", "index": idx,
                                "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta"))
        out.append(sse({"type": "content_block_stop", "index": idx}, "content_block_stop"))
    out.append(sse({"type": "message_delta", "delta": {"stop_reason": "tool_use" if turn.tool_calls else "end_turn",
                                                       "stop_sequence": None},
                    "usage": {"output_tokens": u.output_tokens}}, "message_delta"))
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return out


def tool_specs(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Declared tools (any of the four shapes) as neutral ``{"name", "description", "parameters"}``."""
    out = []
    for t in tools or ():
        if not isinstance(t, Mapping):
            continue
        declared = t.get("functionDeclarations") or t.get("function_declarations")
        for fn in (declared if isinstance(declared, list) else
                   [t["function"] if isinstance(t.get("function"), Mapping) else t]):
            if isinstance(fn, Mapping):
                out.append({"name": fn.get("name"), "description": fn.get("description", ""),
                            "parameters": (fn.get("parameters") or fn.get("input_schema")
                                           or fn.get("parametersJsonSchema") or {})})
    return out


# --- Gemini ----------------------------------------------------------------------------


def gemini_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Gemini ``contents`` (and ``systemInstruction``) as neutral messages.

    A ``functionResponse`` answers the call with its ``id``; without one (clients that drop
    ids), the first unanswered call of the same name in the model turn before it.
    """
    system = body.get("systemInstruction") or body.get("system_instruction")
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": text_of(system.get("parts") if isinstance(system, Mapping)
                                                         else system)})
    open_calls: list[dict[str, Any]] = []  # the last model turn's calls not answered yet
    for content in array(body.get("contents"), "contents"):
        if not isinstance(content, Mapping):
            continue
        parts = [p for p in array(content.get("parts"), "contents[].parts") if isinstance(p, Mapping)]
        if content.get("role") == "model":
            msg, calls = _gemini_model_turn(parts)
            out.append(msg)
            open_calls = list(calls)
        else:
            out += _gemini_user_turn(parts, open_calls)
    return out


def _gemini_model_turn(parts: list[Mapping[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A ``model`` content as an assistant message (its thoughts left out), and the calls it makes."""
    texts = [str(p["text"]) for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    calls = [_gemini_call(p.get("functionCall") or p.get("function_call"), i)
             for i, p in enumerate(parts) if p.get("functionCall") or p.get("function_call")]
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        msg["tool_calls"] = calls
    return msg, calls


def _gemini_user_turn(parts: list[Mapping[str, Any]], open_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ``user`` content: a tool message per ``functionResponse`` (each answers, and closes, one of
    ``open_calls``), then its text, if any, as one user message."""
    out: list[dict[str, Any]] = []
    texts = []
    for p in parts:
        resp = p.get("functionResponse") or p.get("function_response")
        if isinstance(resp, Mapping):
            out.append({"role": "tool", "tool_call_id": _answered(resp, open_calls),
                        "content": _gemini_result(resp.get("response"))})
        elif isinstance(p.get("text"), str):
            texts.append(p["text"])
    if texts:
        out.append({"role": "user", "content": "".join(texts)})
    return out


def _gemini_call(fc: Any, i: int) -> dict[str, Any]:
    fc = obj(fc, "contents[].parts[].functionCall")
    name = str(fc.get("name"))
    return _call(fc.get("id") or f"{name}_{i}", name, fc.get("args") or {})


def _answered(resp: Mapping[str, Any], open_calls: list[dict[str, Any]]) -> str:
    rid = resp.get("id")
    for i, call in enumerate(open_calls):
        if (rid and call["id"] == rid) or (not rid and call["name"] == resp.get("name")):
            return str(open_calls.pop(i)["id"])
    return str(rid or resp.get("name"))


def _gemini_result(response: Any) -> Any:
    """A ``functionResponse.response``: ``{"output": X}`` is X; an ``{"error": ...}`` stays an error."""
    if isinstance(response, Mapping) and set(response) == {"output"}:
        return tool_content(response["output"])
    if isinstance(response, Mapping) and set(response) == {"content"}:
        return tool_content(response["content"])
    return response


def _gemini_parts(turn: ModelTurn) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if turn.text is not None:
        parts.append({"text": turn.text})
    for c in turn.tool_calls:
        parts.append({"functionCall": {"id": c.id, "name": c.name, "args": dict(c.arguments)}})
    return parts


def _gemini_usage(turn: ModelTurn) -> dict[str, Any]:
    u = turn.usage
    return {"promptTokenCount": u.input_tokens, "candidatesTokenCount": u.output_tokens, "totalTokenCount": u.total}


def gemini_response(turn: ModelTurn, *, rid: str, model: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": _gemini_parts(turn)}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": _gemini_usage(turn), "modelVersion": model, "responseId": rid}


def gemini_chunks(turn: ModelTurn, *, rid: str, model: str, sse_format: bool) -> list[bytes]:
    """``streamGenerateContent``: text fragments, then the calls; the last piece finishes (``alt=sse`` or an array)."""
    pieces: list[list[dict[str, Any]]] = [[{"text": t}] for t in fragments(turn.text or "")]
    calls = [p for p in _gemini_parts(turn) if "functionCall" in p]
    if calls or not pieces:
        pieces.append(calls)
    objs: list[dict[str, Any]] = []
    for i, parts in enumerate(pieces):
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        obj: dict[str, Any] = {"candidates": [cand], "modelVersion": model, "responseId": rid}
        if i == len(pieces) - 1:
            cand["finishReason"] = "STOP"
            obj["usageMetadata"] = _gemini_usage(turn)
        objs.append(obj)
    if sse_format:
        return [sse(o) for o in objs]
    body = [b"[" + _dumps(objs[0]).encode()] + [b",\r\n" + _dumps(o).encode() for o in objs[1:]] + [b"]"]
    return body
