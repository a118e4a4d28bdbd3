"""The openai-agents kind: an agents.Agent (OpenAI Agents SDK), run by its Runner.

Recognised by its type (``agents``'s ``Agent`` anywhere in its hierarchy, no import of the
framework); run as a clone of your agents.Agent with the scenario's tools, run by the Agents SDK's
Runner, through the wire (``toolchaos.adapters.openai_agents``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import AgentKind, Capabilities, of_type, register_kind
from toolchaos._engine import RunResult, RunSpec
from toolchaos.kinds._wire import run_over_wire


def recognise(obj: Any) -> bool:
    return of_type(obj, "agents", "Agent")


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def adapted() -> Any:
        from toolchaos.adapters import openai_agents  # the framework's SDK: imported for its agents only, after the wire

        return openai_agents.agent(base=agent)

    def run(spec: RunSpec) -> RunResult:
        return run_over_wire(spec, adapted)

    return run


KIND = register_kind(AgentKind(
    name="openai-agents", help="an agents.Agent (OpenAI Agents SDK), run by its Runner",
    form="an agents.Agent", runner=runner, recognise=recognise, by_type=True,
    capabilities=Capabilities(reports_stop=True)))
