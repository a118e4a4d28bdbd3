"""LangGraph: the prebuilt ReAct agent with ``ChatOpenAI``, default settings.

    from toolchaos.adapters import langgraph as lg

    wire.run(lg.agent(), task=..., tools=[...], policy=...)

The fake tools become LangChain ``StructuredTool``s (JSON Schema arguments); the graph is
``create_react_agent(ChatOpenAI(...), tools)`` with LangGraph's defaults: its
``ToolNode`` turns a tool exception into an error message for the model, and the
recursion limit is LangGraph's default (10007 super-steps today): effectively unbounded,
so a looping run ends at the harness ceiling (HARD_CEILING) rather than at
``GraphRecursionError``. ``GraphRecursionError`` (with a ``recursion_limit`` you pass) maps
to STOPPED_LOOP_GUARD, guard ``recursion_limit``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from toolchaos.adapters._common import ending, require, tool_result_text

require("langgraph")

from langchain_core.tools import StructuredTool  # noqa: E402
from langgraph.errors import GraphRecursionError  # noqa: E402


def tools(env: Any) -> list[Any]:
    """The run's fake tools as LangChain structured tools."""
    out = []
    for tool in env.tools:
        def call(_tool: Any = tool, **kwargs: Any) -> str:
            return tool_result_text(_tool.call(kwargs))

        out.append(StructuredTool.from_function(func=call, name=tool.name, description=tool.description,
                                                args_schema=tool.parameters, infer_schema=False))
    return out


def chat_model(env: Any, model: str = "gpt-4o-mini") -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=model, base_url=env.openai_base_url, api_key=env.api_key)


def agent(*, build: Callable[[Any, list[Any]], Any] | None = None, recursion_limit: int | None = None,
          prompt: str | None = None) -> Callable[[str, Any], Any]:
    """An agent for ``wire.run`` driving a LangGraph graph (``create_react_agent`` unless ``build(model, tools)``)."""

    def run(task: str, env: Any) -> Any:
        model, fake = chat_model(env), tools(env)
        if build is not None:
            graph = build(model, fake)
        else:
            with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain's create_agent
                warnings.simplefilter("ignore")
                from langgraph.prebuilt import create_react_agent

                graph = create_react_agent(model, fake, prompt=prompt)
        config: dict[str, Any] = {}
        if recursion_limit is not None:
            config["recursion_limit"] = recursion_limit
        try:
            state = graph.invoke({"messages": [("user", task)]}, config or None)
        except GraphRecursionError as exc:
            return ending(limit="recursion_limit", error=exc)
        last = state["messages"][-1]
        return ending(answer=getattr(last, "content", None) if not getattr(last, "tool_calls", None) else None)

    return run
