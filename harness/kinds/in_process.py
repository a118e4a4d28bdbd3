"""The in-process kind: ``agent(task, model, tools)``, driven by the engine itself (``toolchaos.run``).

The last resort of recognition: an object no other kind recognises is called this way, and
one that cannot be called so ends ERROR, naming the forms the harness accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import IN_PROCESS, AgentKind, Capabilities, register_kind
from toolchaos._engine import RunResult, RunSpec
from toolchaos._engine.runner import run_in_process


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def run(spec: RunSpec) -> RunResult:
        return run_in_process(agent, label, spec)

    return run


KIND = register_kind(AgentKind(
    name=IN_PROCESS, help="agent(task, model, tools): the in-process contract", form="agent(task, model, tools)",
    runner=runner, capabilities=Capabilities(reports_stop=True, isolatable=True)))
