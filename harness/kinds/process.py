"""The process kind: a program in any language, run as a contained child (``toolchaos.process``).

Named ``cmd:COMMAND LINE`` or ``preset:NAME``, or given as a ``ProcessAgent`` (a scenario's
``agent: {command: [...]}``). Its model is answered over HTTP and its tools served over MCP by a
served run (``toolchaos.serve``); its exit ends the run. It reports a stop only by what it
sends to the run's end URL, which a coding CLI does not: it ends by exiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import (
    CMD_PREFIX,
    PRESET_PREFIX,
    PROCESS,
    AgentKind,
    Capabilities,
    ProcessAgent,
    process_ref,
    register_kind,
)
from toolchaos._engine import RunResult, RunSpec


def recognise(obj: Any) -> bool:
    return isinstance(obj, ProcessAgent)


def runner(agent: Any, label: str) -> Callable[[RunSpec], RunResult]:
    def run(spec: RunSpec) -> RunResult:
        from toolchaos import process  # the server (uvicorn, starlette, mcp): only for a process agent

        return process.run(agent, spec)

    return run


KIND = register_kind(AgentKind(
    name=PROCESS, help="a program in any language run as a child process (cmd:COMMAND LINE or preset:NAME, or a "
                       "ProcessAgent), its model and tools served over HTTP and MCP (toolchaos.process)",
    form="cmd:COMMAND LINE or preset:NAME", runner=runner, recognise=recognise, by_type=True,
    prefixes=(CMD_PREFIX, PRESET_PREFIX), load=process_ref,
    # A program of its own: it ends by exiting (no stop report unless it posts one), sleeps and times out in
    # real seconds, is not told the run's budgets (its limits are its own configuration), keeps no store
    # across a restart, and its calls reach the server in the order it chooses.
    capabilities=Capabilities(reports_stop=False, out_of_process=True, virtual_time=False, budgets=False,
                              restart=False, concurrent_workers=False)))
