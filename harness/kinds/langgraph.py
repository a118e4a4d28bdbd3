"""The langgraph kind: a LangGraph compiled graph (create_agent, create_react_agent, StateGraph.compile()).

Recognised by its type (``langgraph``'s ``Pregel`` anywhere in its hierarchy, no import of the
framework); run as your compiled graph's invoke with the scenario's tools in its tool nodes, through
the wire (``toolchaos.adapters.langgraph``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import AgentKind, Capabilities, of_type, register_kind
from toolchaos._engine import RunResult, RunSpec
from toolchaos.kinds._wire import run_over_wire


def recognise(obj: Any) -> bool:
    return of_type(obj, "langgraph", "Pregel")


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def adapted() -> Any:
        from toolchaos.adapters import langgraph  # the framework's SDK: imported for its agents only, after the wire

        return langgraph.agent(graph=agent)

    def run(spec: RunSpec) -> RunResult:
        return run_over_wire(spec, adapted)

    return run


KIND = register_kind(AgentKind(
    name="langgraph", help="a LangGraph compiled graph (create_agent, create_react_agent, StateGraph.compile())",
    form="a LangGraph compiled graph", runner=runner, recognise=recognise, by_type=True,
    capabilities=Capabilities(reports_stop=True)))
