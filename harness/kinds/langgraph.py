"""The langgraph kind: a LangGraph compiled graph (create_agent, create_react_agent, StateGraph.compile()).

Recognised by its type (``langgraph``'s ``Pregel`` anywhere in its hierarchy, no import of the
framework); run as your compiled graph's invoke with the scenario's tools in its tool nodes, through
the wire (``toolchaos.adapters.langgraph``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import AgentKind, Capabilities, register_kind
from toolchaos._agents._registry import of_type
from toolchaos._engine import RunResult, RunSpec


def recognise(obj: Any) -> bool:
    return of_type(obj, "langgraph", "Pregel")


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def run(spec: RunSpec) -> RunResult:
        from toolchaos import wire
        from toolchaos.adapters import langgraph  # the framework's SDK: imported for its agents only

        return wire.run(langgraph.agent(graph=agent), spec)

    return run


KIND = register_kind(AgentKind(
    name="langgraph", help="a LangGraph compiled graph (create_agent, create_react_agent, StateGraph.compile())",
    form="a LangGraph compiled graph", runner=runner, recognise=recognise, by_type=True,
    capabilities=Capabilities(reports_stop=True)))
