"""Agents in any process and language: ``toolchaos.process.run(ProcessAgent(...), ...)``.

A process agent is a command (``ProcessAgent(command=[...], env=..., cwd=..., task="arg"|"stdin")``)
or a ready-made recipe (``ProcessAgent(preset="codex")``; ``toolchaos._agents.PRESETS``). Its run
serves the scenario's model and tools over HTTP and MCP (``toolchaos.serve``) and starts the agent
as a contained child (``toolchaos._plumbing.children``); see ``_run`` and docs/process-agents.md.
``toolchaos.adapters.agent_under_test`` resolves ``cmd:...``, ``preset:...`` and a ``ProcessAgent``
to this run, so ``toolchaos.run``, scenarios, ``--chaos-agent`` and certification take one.
"""

from toolchaos._agents import PRESETS, ProcessAgent
from toolchaos.process._run import ProcessOutcome, ProcessRunResult, launch, run

__all__ = ["PRESETS", "ProcessAgent", "ProcessOutcome", "ProcessRunResult", "launch", "run"]
