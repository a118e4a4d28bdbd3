"""openai-agents with its default tracing on: the exporter's thread cannot move the run's clock or leave the wire."""

from __future__ import annotations

import time
from typing import Any

import pytest
from toolchaos import policies
from toolchaos.fake_tools import catalogue
from toolchaos.wire import run

agents = pytest.importorskip("agents")


@agents.function_tool
def lookup_invoice(invoice_id: str) -> str:
    """The invoice's total."""
    time.sleep(30)  # virtual: the run's clock moves 30 s per lookup, whatever the exporter does
    return "42 EUR"


BILLING = agents.Agent(name="billing", instructions="Use the tools.", tools=[lookup_invoice])


def traced_agent(task: str) -> Any:
    return agents.Runner.run_sync(BILLING, task).final_output  # default RunConfig: tracing on


def _once() -> Any:
    policy = policies.scripted([{"call": "lookup_invoice", "args": {"invoice_id": "i"}}, {"final": "42 EUR"}])
    return run(traced_agent, task="Get the total", tools=[catalogue.get("search")], policy=policy)


def test_default_tracing_cannot_move_the_clock_and_every_request_is_answered() -> None:
    """In a fresh process: the SDK's tracing (its provider, exporter thread and HTTP client) is process-wide state."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_background_threads as m\n"
              "for r in (m._once(), m._once()):\n"
              "    print(json.dumps([r.terminal_state, r.unmatched, r.model_requests, r.virtual_seconds, r.error,\n"
              "                      r.trace.jsonl()]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    first, second = (json.loads(line) for line in out.stdout.strip().splitlines()[-2:])
    # both runs COMPLETED with every request answered and 30 virtual seconds (the tool's sleep, in the SDK's
    # reused worker thread; none of the exporter's), and the same trace
    for once in (first, second):
        assert once[:5] == ["COMPLETED", [], 2, 30.0, None], once[:5]
    assert first[5] == second[5]
