"""An OpenAI Agents SDK agent whose tool calls an HTTP API (tested with an HTTP-backed fake tool).

The agent is built the usual way (``@function_tool``, ``Agent``, ``Runner``); its tool
calls the billing API over ``httpx``. Under test, respx answers that API from the fake
tool's fault schedule (``http_tools=[wire.http_tool("fetch_invoice", "GET https://billing.example.com/invoices/{invoice_id}")]``)
and the Responses API from the policy. Nothing in this file knows about the harness.
"""

from __future__ import annotations

import httpx
from agents import Agent, RunConfig, Runner, function_tool


@function_tool
def fetch_invoice(invoice_id: str) -> str:
    """Fetch an invoice and its total from the billing system."""
    response = httpx.get(f"https://billing.example.com/invoices/{invoice_id}", timeout=10.0)
    response.raise_for_status()  # a 503 becomes an exception: the SDK tells the model "An error occurred..."
    return response.text


billing_agent = Agent(name="billing", instructions="Answer with the invoice total.", tools=[fetch_invoice])


def agent(task: str) -> str:
    result = Runner.run_sync(billing_agent, task, run_config=RunConfig(tracing_disabled=True))  # default max_turns
    return str(result.final_output)


if __name__ == "__main__":
    from toolchaos import policies, wire
    from toolchaos.fake_tools import catalogue, faults

    result = wire.run(agent, task="What is the total of invoice inv_1?",
                      tools=[catalogue.get("fetch_invoice", faults=faults.transient(503))],
                      policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
                      http_tools=[wire.http_tool("fetch_invoice", "GET https://billing.example.com/invoices/{invoice_id}")])
    print(result.trace.table())
    print(result.summary())
