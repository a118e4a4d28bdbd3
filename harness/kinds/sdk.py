"""The sdk kind: ``agent(task)`` or ``agent(task, env)``, an SDK loop whose model is answered over HTTP.

Recognised by its signature: a parameter annotated ``toolchaos.wire.Env`` (or
``@toolchaos.wire.takes_env``), or one or two positional parameters where the in-process
contract's three do not fit. Run by ``toolchaos.wire.run``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import SDK, AgentKind, Capabilities, binds, env_parameter, register_kind
from toolchaos._engine import RunResult, RunSpec
from toolchaos.kinds._wire import run_over_wire


def recognise(obj: Any) -> bool:
    if env_parameter(obj) is not None:
        return True
    return not binds(obj, 3) and (binds(obj, 1) or binds(obj, 2))


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def run(spec: RunSpec) -> RunResult:
        return run_over_wire(spec, lambda: agent)

    return run


KIND = register_kind(AgentKind(
    name=SDK, help="agent(task) or agent(task, env): an SDK loop, its model answered over HTTP (toolchaos.wire)",
    form="agent(task) or agent(task, env)", runner=runner, recognise=recognise,
    capabilities=Capabilities(reports_stop=True)))
