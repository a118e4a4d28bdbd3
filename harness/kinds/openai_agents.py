"""The openai-agents kind: an agents.Agent (OpenAI Agents SDK), run by its Runner.

Recognised by its type (``agents``'s ``Agent`` anywhere in its hierarchy, no import of the
framework); run as a clone of your agents.Agent with the scenario's tools, run by the Agents SDK's
Runner, through the wire (``toolchaos.adapters.openai_agents``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import AgentKind, Capabilities, register_kind
from toolchaos._agents._registry import of_type
from toolchaos._engine import RunResult, RunSpec


def recognise(obj: Any) -> bool:
    return of_type(obj, "agents", "Agent")


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def run(spec: RunSpec) -> RunResult:
        from toolchaos import wire
        from toolchaos.adapters import openai_agents  # the framework's SDK: imported for its agents only

        return wire.run(openai_agents.agent(base=agent), spec)

    return run


KIND = register_kind(AgentKind(
    name="openai-agents", help="an agents.Agent (OpenAI Agents SDK), run by its Runner",
    form="an agents.Agent", runner=runner, recognise=recognise, by_type=True,
    capabilities=Capabilities(reports_stop=True)))
