"""OpenAI Agents SDK (``openai-agents``): ``Runner`` with its default settings.

    from toolchaos import wire
    from toolchaos.adapters import openai_agents

    result = wire.run(openai_agents.agent(), task=..., tools=[...], policy=...)

``agent()`` builds an ``agents.Agent`` whose tools are the fake tools (``FunctionTool``s
with the SDK's default error handling: a tool that raises is reported to the model as
"An error occurred while running the tool. Please try again.", the text the SDK really
sends), runs ``Runner.run`` with the SDK's defaults (``max_turns`` 10, the Responses
API on the default ``AsyncOpenAI`` client) and maps the ending (``MaxTurnsExceeded`` ->
STOPPED_LOOP_GUARD, guard ``max_turns``). Tracing is switched off for the run (it
would export to the OpenAI API in a background thread).

``agent(build=...)`` runs your own agent: ``build(tools)`` receives the fake tools as
``FunctionTool``s and returns your ``agents.Agent`` (or pass ``base=your_agent`` to have it
cloned with the fake tools).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from toolchaos.adapters._common import ending, require, tool_result_text

require("openai-agents")

import agents  # noqa: E402
from agents.tool import default_tool_error_function  # noqa: E402


def function_tools(env: Any) -> list[Any]:
    """The run's fake tools as Agents SDK ``FunctionTool``s (default error handling)."""
    out = []
    for tool in env.tools:
        async def invoke(ctx: Any, raw: str, _tool: Any = tool) -> Any:
            try:
                args = json.loads(raw) if raw else {}
                call_id = getattr(ctx, "tool_call_id", None)
                return tool_result_text(_tool.call(args, call_id=call_id))
            except Exception as exc:  # the decorator's default: the model sees a fixed text
                return default_tool_error_function(ctx, exc)

        out.append(agents.FunctionTool(name=tool.name, description=tool.description,
                                       params_json_schema=tool.parameters, on_invoke_tool=invoke,
                                       strict_json_schema=False))
    return out


def agent(*, build: Callable[[list[Any]], Any] | None = None, base: Any = None,
          instructions: str = "You are a helpful assistant. Use the tools to complete the task.",
          max_turns: int | None = None, run_config: Any = None) -> Callable[[str, Any], Any]:
    """An agent for ``wire.run`` driving the Agents SDK's ``Runner`` (defaults unless given)."""

    async def run(task: str, env: Any) -> Any:
        tools = function_tools(env)
        if build is not None:
            sdk_agent = build(tools)
        elif base is not None:
            sdk_agent = base.clone(tools=tools)
        else:
            sdk_agent = agents.Agent(name="agent", instructions=instructions, tools=tools)
        config = run_config or agents.RunConfig(tracing_disabled=True)
        kwargs: dict[str, Any] = {"run_config": config}
        if max_turns is not None:
            kwargs["max_turns"] = max_turns
        try:
            result = await agents.Runner.run(sdk_agent, task, **kwargs)
        except agents.MaxTurnsExceeded as exc:
            return ending(limit="max_turns", error=exc)
        except agents.AgentsException as exc:
            return ending(error=exc)
        return ending(answer=result.final_output)

    return run
