"""One tool call from outside the process: the run's toolbox, answered as an MCP tool result.

Shared by the streamable HTTP endpoint of ``toolchaos serve`` and by ``toolchaos mcp``
(stdio), so a call is executed, traced and counted exactly as an in-process
``tools.execute`` is (the same trace event, the same ledger entry). What the tool
answers becomes the result's text: data as JSON (a malformed payload as the broken text
it is), an error payload with ``isError: true``; a call the run can no longer take
(the run ended, the ceiling) is a tool error that says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp.types as types
from toolchaos._engine import Toolbox
from toolchaos._internal.model import served_text
from toolchaos.errors import HarnessStop, RunClosed
from toolchaos.fake_tools import OutcomeClass

_ANSWERED = (OutcomeClass.SUCCESS, OutcomeClass.PENDING)


def tool_list(toolbox: Toolbox) -> list[types.Tool]:
    """The run's tools with their JSON schemas, as MCP lists them."""
    out = []
    for spec in toolbox.specs:
        schema = dict(spec.get("parameters") or {"type": "object", "properties": {}})
        schema.setdefault("type", "object")
        out.append(types.Tool(name=spec["name"], description=spec.get("description") or "", input_schema=schema))
    return out


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def call_tool(toolbox: Toolbox | None, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
    """Execute one call in the run and answer it (see the module docstring)."""
    if toolbox is None:
        return error_result("toolchaos: the run has not started or has ended; no tool call is executed")
    if name not in toolbox.names:
        return error_result(f"unknown tool {name!r}; the tools are: {', '.join(toolbox.names)}")
    try:
        _, outcome = toolbox.execute(name, dict(arguments or {}))
    except (HarnessStop, RunClosed) as exc:
        return error_result(f"toolchaos: the run has ended ({exc}); the call was not executed")
    # whatever the tool's delivery: over MCP a failure is a tool error carrying the payload; the
    # model double finds these bytes again in the agent's text (toolchaos._internal.model.served_text)
    return types.CallToolResult(content=[types.TextContent(type="text", text=served_text(outcome))],
                                is_error=outcome.cls not in _ANSWERED)
