"""The pydantic-ai kind: a pydantic_ai.Agent.

Recognised by its type (``pydantic_ai``'s ``AbstractAgent`` anywhere in its hierarchy, no import of
the framework); run as your Agent.run with the scenario's tools in place of its own, through the
wire (``toolchaos.adapters.pydantic_ai``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import AgentKind, Capabilities, of_type, register_kind
from toolchaos._engine import RunResult, RunSpec
from toolchaos.kinds._wire import run_over_wire


def recognise(obj: Any) -> bool:
    return of_type(obj, "pydantic_ai", "AbstractAgent")


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def adapted() -> Any:
        from toolchaos.adapters import pydantic_ai  # the framework's SDK: imported for its agents only, after the wire

        return pydantic_ai.agent(base=agent)

    def run(spec: RunSpec) -> RunResult:
        return run_over_wire(spec, adapted)

    return run


KIND = register_kind(AgentKind(
    name="pydantic-ai", help="a pydantic_ai.Agent",
    form="a pydantic_ai.Agent", runner=runner, recognise=recognise, by_type=True,
    capabilities=Capabilities(reports_stop=True)))
