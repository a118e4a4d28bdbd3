"""The ``python`` preset's agent, handing every tool result to its model the way Codex CLI does.

Codex puts an MCP tool's result under a header, ``Wall time: {seconds:.4} seconds\\nOutput:``
(codex-rs ``McpToolOutput``), then the result's text: right after the header when the result
comes as content items (the wire joins them), after a newline when it is one text. This agent
does both, in turn, with wall times drawn from a seeded generator that includes 0.0503 and
0.0429 (digits an HTTP status reader would take for 503 and 429). Run as
``python codex_wrapped_agent.py TASK``; ``AGENT_WRAP=bare`` hands the results back as they
are, so one script gives both sides of the comparison.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import os
import random
from typing import Any

from toolchaos._agents._presets import script

_spec = importlib.util.spec_from_file_location("python_agent", script("python_agent.py"))
assert _spec is not None and _spec.loader is not None
agent: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agent)

_rng = random.Random(503)
_forms = itertools.cycle(("", "\n"))  # content items (joined), one text
_bare = agent._text


def wall_time() -> str:
    return _rng.choice(("0.0503", "0.0429", "503.0429", f"{_rng.random():.4f}"))


def wrapped(result: Any) -> str:
    text = _bare(result)
    header = f"Wall time: {wall_time()} seconds\nOutput:"
    return header + next(_forms) + text if text else header


if os.environ.get("AGENT_WRAP", "codex") == "codex":
    agent._text = wrapped

if __name__ == "__main__":
    try:
        asyncio.run(agent.main())
    finally:
        print("TOOLCHAOS_COUNTS " + json.dumps(agent.COUNTS), flush=True)
