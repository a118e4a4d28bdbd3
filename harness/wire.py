"""Drive real agents: SDK agents whose model requests the policy answers over HTTP (respx).

    from harness import wire

    result = wire.run(my_agent, task="Get the invoice total", tools=[...], policy=...,
                      api_faults={1: "429"}, patch={"myapp.tools:fetch": "fetch_invoice"})

See ``docs/agents.md``. Importing this module makes respx's default mocker cover both
``httpx`` and ``httpx2`` (the transport of ``openai`` >= 3 and ``anthropic`` >= 2).
"""

from ._wire import *  # noqa: F403
from ._wire import __all__  # noqa: F401
