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
    first, second = _once(), _once()
    for r in (first, second):
        assert (r.terminal_state, r.unmatched, r.model_requests) == ("COMPLETED", [], 2), r.error
        assert r.virtual_seconds == 30  # the tool's sleep, in the SDK's reused worker thread; none of the exporter's
    assert first.trace.jsonl() == second.trace.jsonl()
    processor = agents.tracing.get_trace_provider()
    assert processor is not None  # the SDK's tracing was on: its exporter thread ran beside the runs
