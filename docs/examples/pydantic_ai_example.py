"""A pydantic-ai agent on an OpenAI model, its tool patched by import path.

The tool body calls ``lookup_invoice`` at module level, so a test patches
``<this module>:lookup_invoice``; the agent is built at import time, as applications do.

    python docs/examples/pydantic_ai_example.py   # runs it under chaos and prints the trace
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent


def lookup_invoice(invoice_id: str) -> dict[str, Any]:
    """The application's real tool (never reached under test)."""
    raise RuntimeError("the real billing system was called")


billing_agent = Agent("openai:gpt-4o-mini", instructions="Answer with the invoice total.", defer_model_check=True)


@billing_agent.tool_plain
def fetch_invoice(invoice_id: str) -> dict[str, Any]:
    """Fetch an invoice and its total from the billing system."""
    return lookup_invoice(invoice_id)


def agent(task: str) -> str:
    return str(billing_agent.run_sync(task).output)  # default UsageLimits


if __name__ == "__main__":
    from toolchaos import policies, wire
    from toolchaos.fake_tools import catalogue, faults

    result = wire.run(agent, task="What is the total of invoice inv_1?",
                      tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
                      policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
                      patch={f"{__name__}:lookup_invoice": "fetch_invoice"})
    print(result.trace.table())
    print(result.summary())
