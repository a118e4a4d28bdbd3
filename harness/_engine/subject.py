"""``AgentUnderTest``: an agent of any kind, resolved, with the run of its kind.

It lives with the registry of kinds (``toolchaos._agents``, ``toolchaos.kinds``); the engine
takes one like any agent and calls its ``runner`` with the run's ``RunSpec``.
"""

from toolchaos._agents import AgentUnderTest

__all__ = ["AgentUnderTest"]
