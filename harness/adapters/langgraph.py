"""LangGraph: LangChain's agent (``create_agent``) with ``ChatOpenAI``, default settings.

    from toolchaos.adapters import langgraph as lg

    wire.run(lg.agent(), task=..., tools=[...], policy=...)

The fake tools become LangChain ``StructuredTool``s (JSON Schema arguments); the graph is
``langchain.agents.create_agent(ChatOpenAI(...), tools=...)``, the current agent API (a LangGraph
compiled graph), with its defaults: its ``ToolNode`` re-raises a tool's own exception (the graph
run fails), and the recursion limit is LangGraph's default (10007 super-steps today): effectively
unbounded, so a looping run ends at the harness ceiling (HARD_CEILING) rather than at
``GraphRecursionError``. ``GraphRecursionError`` (with a ``recursion_limit`` you pass) maps
to STOPPED_LOOP_GUARD, guard ``recursion_limit``. Without ``langchain`` installed (``langgraph``
alone), or with ``prebuilt="create_react_agent"``, the graph is LangGraph's deprecated
``create_react_agent`` with the same model and tools.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from toolchaos.adapters._common import ending, require, tool_result_text

require("langgraph")

from langchain_core.tools import StructuredTool  # noqa: E402
from langgraph.errors import GraphRecursionError  # noqa: E402
from langgraph.prebuilt import ToolNode  # noqa: E402


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


PREBUILT = ("create_agent", "create_react_agent")


def agent(*, build: Callable[[Any, list[Any]], Any] | None = None, graph: Any = None,
          recursion_limit: int | None = None, prompt: str | None = None,
          prebuilt: str | None = None) -> Callable[[str, Any], Any]:
    """An agent for ``wire.run`` driving a LangGraph graph (``create_agent`` unless ``build(model, tools)``).

    ``graph`` is your own compiled graph (``create_agent``, ``create_react_agent``,
    ``StateGraph(...).compile()``) as it is, its model and all, with the fake tools in its
    tool nodes for the length of the run. ``prebuilt`` picks the prebuilt agent when neither is
    given: ``"create_agent"`` (the default when ``langchain`` is installed) or ``"create_react_agent"``.
    """
    if prebuilt is not None and prebuilt not in PREBUILT:
        raise ValueError(f"langgraph.agent(prebuilt={prebuilt!r}): expected one of {', '.join(PREBUILT)}")

    def run(task: str, env: Any) -> Any:
        fake = tools(env)
        if graph is not None:
            with tools_in(graph, fake):
                return _invoke(graph, task, recursion_limit)
        model = chat_model(env)
        if build is not None:
            return _invoke(build(model, fake), task, recursion_limit)
        return _invoke(prebuilt_agent(model, fake, prompt, prebuilt), task, recursion_limit)

    return run


def prebuilt_agent(model: Any, fake: list[Any], prompt: str | None, prebuilt: str | None = None) -> Any:
    """``create_agent(model, tools=..., system_prompt=...)``, or ``create_react_agent`` when asked or without langchain."""
    if prebuilt is None:
        prebuilt = "create_agent" if importlib.util.find_spec("langchain") is not None else "create_react_agent"
    if prebuilt == "create_agent":
        from langchain.agents import create_agent

        return create_agent(model, tools=fake, system_prompt=prompt)
    with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain's create_agent
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, fake, prompt=prompt)


def _invoke(graph: Any, task: str, recursion_limit: int | None) -> Any:
    config: dict[str, Any] = {}
    if recursion_limit is not None:
        config["recursion_limit"] = recursion_limit
    try:
        state = graph.invoke({"messages": [("user", task)]}, config or None)
    except GraphRecursionError as exc:
        return ending(limit="recursion_limit", error=exc)
    last = state["messages"][-1]
    return ending(answer=getattr(last, "content", None) if not getattr(last, "tool_calls", None) else None)


# What a ToolNode dispatches on. Not public API: LangGraph has no way to give a compiled graph
# other tools, so the node's own tables are swapped for those of a ToolNode of the fake tools.
_TOOL_TABLES = ("_tools_by_name", "_injected_args")


@contextmanager
def tools_in(graph: Any, fake: list[Any]) -> Iterator[None]:
    """The fake tools in every tool node of ``graph`` (``ToolNode``, as prebuilt agents use), then its own again."""
    nodes = [n.bound for n in graph.nodes.values() if all(hasattr(n.bound, t) for t in _TOOL_TABLES)]
    if not nodes:
        raise ValueError(f"the LangGraph graph has no ToolNode to give the scenario's tools to "
                         f"(nodes: {', '.join(graph.nodes)})")
    fresh = ToolNode(fake)
    saved = [(node, [getattr(node, t) for t in _TOOL_TABLES]) for node in nodes]
    for node in nodes:
        for t in _TOOL_TABLES:
            setattr(node, t, getattr(fresh, t))
    try:
        yield
    finally:
        for node, tables in saved:
            for t, table in zip(_TOOL_TABLES, tables):
                setattr(node, t, table)
