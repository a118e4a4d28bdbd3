"""An agent loop in its own Python process, on the openai package, its tools from the harness's MCP server.

Run by the ``python`` preset (``agent: {preset: python}``); the harness sets OPENAI_BASE_URL,
OPENAI_API_KEY and TOOLCHAOS_MCP_URL. Stops at the model's final answer or at its own turn
limit (AGENT_MAX_TURNS, default 10), then prints one line of what it counted.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openai import AsyncOpenAI

COUNTS: dict[str, Any] = {"model_requests": 0, "tool_calls": 0, "tool_errors": 0, "turns": 0, "stopped": "unknown"}


async def _count_request(request: httpx2.Request) -> None:
    COUNTS["model_requests"] += 1  # every request the SDK sends, retries included


def _task() -> str:
    if len(sys.argv) > 1:
        return sys.argv[-1]
    return os.environ.get("TOOLCHAOS_TASK") or sys.stdin.read()


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", None) or json.dumps(c.model_dump()) for c in result.content)


async def main() -> None:
    task = _task()
    http = httpx2.AsyncClient(event_hooks={"request": [_count_request]})
    model = AsyncOpenAI(http_client=http)
    async with streamable_http_client(os.environ["TOOLCHAOS_MCP_URL"]) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        specs: Any = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                        "parameters": t.input_schema}} for t in tools]
        messages: list[Any] = [{"role": "user", "content": task}]
        COUNTS["stopped"] = "turn_limit"
        for _turn in range(int(os.environ.get("AGENT_MAX_TURNS", "10"))):
            COUNTS["turns"] += 1
            res = await model.chat.completions.create(model=os.environ.get("TOOLCHAOS_MODEL", "gpt-4o-mini"),
                                                      messages=messages, tools=specs)
            msg: Any = res.choices[0].message
            messages.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls:
                COUNTS["stopped"] = "final"
                break
            for call in msg.tool_calls:
                COUNTS["tool_calls"] += 1
                result: Any = await session.call_tool(call.function.name,
                                                      json.loads(call.function.arguments or "{}"))
                COUNTS["tool_errors"] += bool(result.is_error)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": _text(result)})


if __name__ == "__main__":
    try:
        asyncio.run(main())
    finally:
        print("TOOLCHAOS_COUNTS " + json.dumps(COUNTS), flush=True)
