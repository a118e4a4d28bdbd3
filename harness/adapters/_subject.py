"""Any agent under test, resolved to the run of its kind: ``agent_under_test(reference or object)``.

The kind is named in the reference (``sdk:myapp.agent:run``) or recognised from the object;
the registry of kinds (``toolchaos.kinds``, one module per kind) says how each runs. The result
is an ``AgentUnderTest``: ``toolchaos.run`` takes it like any agent, so do the chaos fixture and
the certification runner. ``toolchaos certify --agent``, ``toolchaos run --agent``,
``pytest --chaos-agent`` and a scenario's ``agent:`` resolve their reference the same way.
"""

from __future__ import annotations

from typing import Any

from toolchaos._agents import AgentUnderTest, resolve


def agent_under_test(agent: Any, kind: str | None = None) -> AgentUnderTest:
    """``agent`` (a reference, an object, or already an ``AgentUnderTest``) with the run of its kind.

    ``kind`` names the kind when the reference does not; by default it is recognised from the object.
    """
    return resolve(agent, kind)
