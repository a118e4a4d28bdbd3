"""What the kinds whose agents talk HTTP share: the run through ``toolchaos.wire.run``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._engine import RunResult, RunSpec


def run_over_wire(spec: RunSpec, agent: Callable[[], Any]) -> RunResult:
    """The agent ``agent()`` gives (an SDK loop), run by ``toolchaos.wire.run``.

    The wire is imported first: its import readies pydantic and LangChain for virtual time, so a
    framework's adapter, whose import loads the framework, must come after it (``agent()`` imports it).
    """
    from toolchaos import wire  # respx and the SDK shims: only for an agent that talks HTTP

    return wire.run(agent(), spec)
