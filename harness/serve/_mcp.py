"""The chaos MCP server: the run's fake tools over MCP (the official ``mcp`` SDK's low-level server).

``mcp_server(get_toolbox, before, after)`` builds the server whose ``tools/list`` lists the
run's tools with their JSON schemas and whose ``tools/call`` is ``_tools.call_tool``;
``before``/``after`` let ``toolchaos serve`` credit real waits to the run's clock (see
``_pace``). The SDK's own input validation is left to the fake tools: a call that breaks
the schema reaches the tool, which answers PRECONDITION naming the field, and is traced.

Transports: streamable HTTP inside ``toolchaos serve`` (``streamable_app``), stdio for
``toolchaos mcp SCENARIO`` (``serve_stdio``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server as McpServer
from starlette.applications import Starlette
from toolchaos._engine import Toolbox
from toolchaos._internal.version import VERSION
from toolchaos.serve._tools import call_tool, tool_list

MCP_PATH = "/mcp"


def mcp_server(get_toolbox: Callable[[], Toolbox | None], before: Callable[[], None] = lambda: None,
               after: Callable[[], None] = lambda: None) -> McpServer[Any]:
    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        toolbox = get_toolbox()
        return types.ListToolsResult(tools=tool_list(toolbox) if toolbox is not None else [])

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        before()
        try:
            return call_tool(get_toolbox(), params.name, params.arguments)
        finally:
            after()

    return McpServer("toolchaos", version=VERSION, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def streamable_app(server: McpServer[Any], host: str) -> Starlette:
    """The streamable HTTP endpoint at ``/mcp`` (stateless, JSON answers), with its lifespan."""
    return server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
                                      host=host)


async def serve_stdio(server: McpServer[Any]) -> None:
    """Serve over this process's stdin/stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
