"""Framework adapters: run an agent framework's own loop under chaos, with its default settings.

Each adapter returns an agent for ``toolchaos.wire.run`` (``agent(task, env)``): it builds
the framework's tool objects from the fake tools, points the framework's model at the
wire (the policy answers over HTTP) or, for pydantic-ai's ``FunctionModel``, at the run's
model client, runs the framework's loop, and maps how the run ended to a terminal state
(``ending``). The frameworks are optional extras; importing an adapter module without its
framework raises ``ImportError`` naming the extra to install.

- ``toolchaos.adapters.openai_agents``: OpenAI Agents SDK (``Runner``)
- ``toolchaos.adapters.pydantic_ai``: pydantic-ai ``Agent`` (OpenAI model, or ``FunctionModel``)
- ``toolchaos.adapters.langgraph``: LangGraph prebuilt ReAct agent with ``ChatOpenAI``

``agent_under_test(reference or object)`` resolves an agent of any kind (in-process, SDK, or a
framework's own agent object: an ``agents.Agent``, a pydantic-ai ``Agent``, a LangGraph
compiled graph) to the run of its kind; ``toolchaos.run`` then takes it like any agent.
"""

from toolchaos.adapters._common import FRAMEWORKS, ending, require
from toolchaos.adapters._subject import agent_under_test

__all__ = ["FRAMEWORKS", "agent_under_test", "ending", "require"]
