"""``AgentUnderTest``: an agent of any kind, resolved, with the run of its kind.

The engine drives in-process agents itself. An SDK or framework agent runs through
``toolchaos.wire`` (which sits above the engine), so its run is handed in:
``toolchaos.adapters.agent_under_test`` builds one for any reference or object, and
``toolchaos.run(agent_under_test, ...)`` calls its ``runner`` with the run's ``RunSpec``.
The chaos fixture and the certification runner, which call ``toolchaos.run``, therefore
take an agent of any kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolchaos._engine.result import RunResult
from toolchaos._engine.spec import RunSpec


@dataclass(frozen=True)
class AgentUnderTest:
    label: str  # how messages and reports name it: the reference as given
    kind: str  # toolchaos._agents.KINDS: in-process, sdk, openai-agents, pydantic-ai, langgraph
    runner: Callable[[RunSpec], RunResult]  # the run of its kind, for one RunSpec

    def __str__(self) -> str:
        return self.label
