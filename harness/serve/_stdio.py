"""``toolchaos mcp SCENARIO``: one run whose only client is an MCP client on stdin/stdout.

The run's agent is the stdio MCP server itself (on a real-time event loop): it serves the
scenario's tools until the client closes stdin, then returns; the run then ends as an
agent's plain return does. No model is served: the policy is never asked, so the trace
holds the tool calls (and their ledger) of whatever model drives the client.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolchaos._engine import ModelClient, RunSpec, Toolbox
from toolchaos._engine import run as engine_run
from toolchaos._plumbing import clock as _clock
from toolchaos.fake_tools import World
from toolchaos.serve._mcp import mcp_server, serve_stdio
from toolchaos.serve._server import _with_watchdog


def serve_mcp_stdio(scenario: Any, *, seed: int | None = None, artifacts: str | Path | None = None,
                    real_seconds: float | None = None, total_seconds: float | None = None) -> Any:
    """Serve ``scenario``'s tools over stdio until the client leaves; the run's ``RunResult``."""
    def agent(task: str, model: ModelClient, toolbox: Toolbox) -> None:
        server = mcp_server(lambda: toolbox)
        loop = _clock.RealTimeEventLoop()
        try:
            loop.run_until_complete(serve_stdio(server))
        finally:
            loop.close()

    spec = RunSpec.of(task=scenario.task, tools=scenario.tools, policy=scenario.policy(),
                      seed=scenario.seed if seed is None else seed, budgets=scenario.budgets,
                      ceiling=_with_watchdog(scenario.ceiling, real_seconds), name=scenario.name,
                      artifacts=artifacts, world=World(scenario.world), total_seconds=total_seconds)
    return engine_run(agent, spec.staying(STDIO))


STDIO = "toolchaos serve over stdio: stdin and stdout are the client's, so the run stays with them here"
