"""The pydantic-ai kind: a pydantic_ai.Agent.

Recognised by its type (``pydantic_ai``'s ``AbstractAgent`` anywhere in its hierarchy, no import of
the framework); run as your Agent.run with the scenario's tools in place of its own, through the
wire (``toolchaos.adapters.pydantic_ai``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import AgentKind, Capabilities, register_kind
from toolchaos._agents._registry import of_type
from toolchaos._engine import RunResult, RunSpec


def recognise(obj: Any) -> bool:
    return of_type(obj, "pydantic_ai", "AbstractAgent")


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def run(spec: RunSpec) -> RunResult:
        from toolchaos import wire
        from toolchaos.adapters import pydantic_ai  # the framework's SDK: imported for its agents only

        return wire.run(pydantic_ai.agent(base=agent), spec)

    return run


KIND = register_kind(AgentKind(
    name="pydantic-ai", help="a pydantic_ai.Agent",
    form="a pydantic_ai.Agent", runner=runner, recognise=recognise, by_type=True,
    capabilities=Capabilities(reports_stop=True)))
