"""Runs served to agents in any process: ``toolchaos serve`` and the chaos MCP server.

    from toolchaos.certification import judge, scenario_spec
    from toolchaos.scenario import load_file
    from toolchaos.serve import Server

    (scenario,) = load_file("payment.chaos.yaml")
    with Server(scenario_spec(scenario, seed=1)) as srv:   # or Server(task=..., tools=[...], policy=...)
        client = openai.OpenAI(base_url=srv.base_urls["openai"], api_key="x")
        ...                                # any process may use srv.urls() instead
        srv.end()                          # or POST srv.end_url; or the ceiling, the watchdog
    judge(scenario, srv.result), srv.result.trace, srv.result.ledger

Modules: ``_server`` (``Server``: the run in a thread, uvicorn in another), ``_asgi`` (ASGI
requests to the wire's ``dispatch`` and back), ``_mcp`` (the MCP server, streamable HTTP and
stdio), ``_tools`` (one MCP tool call into the run), ``_pace`` (real waits credited to the
run's virtual clock), ``_stdio`` (``toolchaos mcp``'s run), ``_control`` (what ``POST /toolchaos/end``
may carry). See docs/serve.md.
"""

from toolchaos._internal.limits import SERVE_REAL_SECONDS
from toolchaos.serve._server import ENDED_STATUS, Server
from toolchaos.serve._stdio import serve_mcp_stdio

# isort: split
# What other packages of toolchaos (the command line) need beyond the public names: importable from this facade,
# not part of the API (not in __all__).
from toolchaos.serve._asgi import check_max_body as check_max_body

__all__ = ["ENDED_STATUS", "SERVE_REAL_SECONDS", "Server", "serve_mcp_stdio"]
