"""Minimal agent loops over each SDK call style, for the wire tests.

Each loop asks the model, runs every tool call it gets through ``env.call`` and feeds the
results back in the API's own format, until a final answer; every tool call the SDK
parsed is appended to ``seen`` so tests can compare it with what the policy asked.
"""

from __future__ import annotations

import json
from typing import Any

MODEL = "gpt-test"
CLAUDE = "claude-test"


def _run_call(env: Any, seen: list[tuple[str, str, dict[str, Any]]], cid: str, name: str, args: Any) -> str:
    parsed = json.loads(args) if isinstance(args, str) else dict(args)
    seen.append((cid, name, parsed))
    return json.dumps(env.call(name, parsed, call_id=cid), default=str)


# --- Chat Completions ----------------------------------------------------------------------


def chat_loop(client: Any, mode: str, env: Any, seen: list[Any], steps: int = 8) -> str | None:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": env.task}]
    for _ in range(steps):
        if mode == "create":
            msg = client.chat.completions.create(model=MODEL, messages=msgs, tools=env.openai_tools).choices[0].message
        elif mode == "stream":
            text, calls = "", {}
            for chunk in client.chat.completions.create(model=MODEL, messages=msgs, tools=env.openai_tools, stream=True,
                                                        stream_options={"include_usage": True}):
                if not chunk.choices:
                    assert chunk.usage is not None and chunk.usage.total_tokens > 0
                    continue
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for tc in delta.tool_calls or ():
                    entry = calls.setdefault(tc.index, {"id": "", "name": "", "args": ""})
                    entry["id"] = tc.id or entry["id"]
                    entry["name"] = (tc.function.name if tc.function else None) or entry["name"]
                    entry["args"] += (tc.function.arguments if tc.function else None) or ""
            msg = _ChatMsg(text or None, [calls[i] for i in sorted(calls)])
        else:  # the .stream() helper
            with client.chat.completions.stream(model=MODEL, messages=msgs, tools=env.openai_tools) as stream:
                for _event in stream:
                    pass
                msg = stream.get_final_completion().choices[0].message
        calls = [(c.id, c.function.name, c.function.arguments) for c in (msg.tool_calls or ())] \
            if not isinstance(msg, _ChatMsg) else [(c["id"], c["name"], c["args"]) for c in msg.tool_calls]
        msgs.append({"role": "assistant", "content": msg.content,
                     **({"tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                        for i, n, a in calls]} if calls else {})})
        if not calls:
            return str(msg.content)
        for cid, name, args in calls:
            msgs.append({"role": "tool", "tool_call_id": cid, "content": _run_call(env, seen, cid, name, args)})
    return None


class _ChatMsg:
    def __init__(self, content: str | None, tool_calls: list[dict[str, str]]) -> None:
        self.content = content
        self.tool_calls = tool_calls


async def achat_loop(client: Any, mode: str, env: Any, seen: list[Any], steps: int = 8) -> str | None:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": env.task}]
    for _ in range(steps):
        if mode == "create":
            completion = await client.chat.completions.create(model=MODEL, messages=msgs, tools=env.openai_tools)
            msg = completion.choices[0].message
        else:
            async with client.chat.completions.stream(model=MODEL, messages=msgs, tools=env.openai_tools) as stream:
                async for _event in stream:
                    pass
                msg = (await stream.get_final_completion()).choices[0].message
        calls = [(c.id, c.function.name, c.function.arguments) for c in (msg.tool_calls or ())]
        msgs.append(msg.model_dump(exclude_none=True))
        if not calls:
            return str(msg.content)
        for cid, name, args in calls:
            msgs.append({"role": "tool", "tool_call_id": cid, "content": _run_call(env, seen, cid, name, args)})
    return None


# --- Responses API ---------------------------------------------------------------------------


def responses_loop(client: Any, mode: str, env: Any, seen: list[Any], steps: int = 8) -> str | None:
    """``mode``: create | stream | helper | stateful (previous_response_id, only new items sent)."""
    items: list[Any] = [{"role": "user", "content": env.task}]
    previous: str | None = None
    for _ in range(steps):
        kwargs: dict[str, Any] = {"model": MODEL, "input": items, "tools": env.responses_tools,
                                  "instructions": "Be brief."}
        if previous is not None:
            kwargs["previous_response_id"] = previous
        if mode in ("create", "stateful"):
            response = client.responses.create(**kwargs)
        elif mode == "stream":
            response = None
            kinds = []
            for event in client.responses.create(stream=True, **kwargs):
                kinds.append(event.type)
                if event.type == "response.completed":
                    response = event.response
            assert kinds[0] == "response.created" and response is not None, kinds
        else:
            with client.responses.stream(**kwargs) as stream:
                for _event in stream:
                    pass
                response = stream.get_final_response()
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            return str(response.output_text)
        outputs = [{"type": "function_call_output", "call_id": c.call_id,
                    "output": _run_call(env, seen, c.call_id, c.name, c.arguments)} for c in calls]
        if mode == "stateful":
            previous, items = response.id, outputs
        else:
            items = [*items, *[o.model_dump(exclude_none=True) for o in response.output], *outputs]
    return None


async def aresponses_loop(client: Any, mode: str, env: Any, seen: list[Any], steps: int = 8) -> str | None:
    items: list[Any] = [{"role": "user", "content": env.task}]
    previous: str | None = None
    for _ in range(steps):
        kwargs: dict[str, Any] = {"model": MODEL, "input": items, "tools": env.responses_tools}
        if previous is not None:
            kwargs["previous_response_id"] = previous
        if mode == "create":
            response = await client.responses.create(**kwargs)
        else:
            async with client.responses.stream(**kwargs) as stream:
                async for _event in stream:
                    pass
                response = await stream.get_final_response()
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            return str(response.output_text)
        previous = response.id
        items = [{"type": "function_call_output", "call_id": c.call_id,
                  "output": _run_call(env, seen, c.call_id, c.name, c.arguments)} for c in calls]
    return None


# --- Anthropic Messages ----------------------------------------------------------------------


def _blocks(message: Any) -> list[dict[str, Any]]:
    return [b.model_dump(exclude_none=True) for b in message.content]


class _Block:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    def model_dump(self, exclude_none: bool = True) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


def _assemble(events: list[Any]) -> Any:
    """A message from raw stream events (as a hand-written streaming client would)."""
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
    blocks: dict[int, dict[str, Any]] = {}
    stop = None
    for e in events:
        if e.type == "content_block_start":
            blocks[e.index] = e.content_block.model_dump(exclude_none=True)
            if blocks[e.index]["type"] == "tool_use":
                blocks[e.index]["_json"] = ""
        elif e.type == "content_block_delta":
            if e.delta.type == "text_delta":
                blocks[e.index]["text"] += e.delta.text
            else:
                blocks[e.index]["_json"] += e.delta.partial_json
        elif e.type == "message_delta":
            stop = e.delta.stop_reason
            assert e.usage.output_tokens > 0
    content = []
    for i in sorted(blocks):
        b = blocks[i]
        if b["type"] == "tool_use":
            b["input"] = json.loads(b.pop("_json") or "{}")
        content.append(_Block(**b))
    return _Block(content=content, stop_reason=stop)


def messages_loop(client: Any, mode: str, env: Any, seen: list[Any], steps: int = 8) -> str | None:
    """``mode``: create | stream | helper | thread (server-held thread: only new messages sent)."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": env.task}]
    previous: str | None = None
    for _ in range(steps):
        kwargs: dict[str, Any] = {"model": CLAUDE, "max_tokens": 256, "messages": msgs}
        if mode == "thread":
            if previous is None:
                kwargs.update(system="Be brief.", tools=env.anthropic_tools, thread={"type": "create"})
            else:
                kwargs["thread"] = {"type": "continue", "previous_message_id": previous}
            message = client.beta.messages.create(**kwargs)
        else:
            kwargs.update(system="Be brief.", tools=env.anthropic_tools)
            if mode == "create":
                message = client.messages.create(**kwargs)
            elif mode == "stream":
                message = _assemble(list(client.messages.create(stream=True, **kwargs)))
            else:
                with client.messages.stream(**kwargs) as stream:
                    for _event in stream:
                        pass
                    message = stream.get_final_message()
        uses = [b for b in message.content if b.type == "tool_use"]
        if message.stop_reason != "tool_use":
            return "".join(b.text for b in message.content if b.type == "text")
        results = [{"type": "tool_result", "tool_use_id": b.id, "content": _run_call(env, seen, b.id, b.name, b.input)}
                   for b in uses]
        if mode == "thread":
            previous, msgs = message.id, [{"role": "user", "content": results}]
        else:
            msgs = [*msgs, {"role": "assistant", "content": _blocks(message)}, {"role": "user", "content": results}]
    return None


async def amessages_loop(client: Any, mode: str, env: Any, seen: list[Any], steps: int = 8) -> str | None:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": env.task}]
    for _ in range(steps):
        kwargs: dict[str, Any] = {"model": CLAUDE, "max_tokens": 256, "messages": msgs, "tools": env.anthropic_tools}
        if mode == "create":
            message = await client.messages.create(**kwargs)
        else:
            async with client.messages.stream(**kwargs) as stream:
                async for _event in stream:
                    pass
                message = await stream.get_final_message()
        uses = [b for b in message.content if b.type == "tool_use"]
        if message.stop_reason != "tool_use":
            return "".join(b.text for b in message.content if b.type == "text")
        results = [{"type": "tool_result", "tool_use_id": b.id, "content": _run_call(env, seen, b.id, b.name, b.input)}
                   for b in uses]
        msgs = [*msgs, {"role": "assistant", "content": _blocks(message)}, {"role": "user", "content": results}]
    return None
