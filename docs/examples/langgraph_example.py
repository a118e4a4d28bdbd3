"""A LangGraph agent with ChatOpenAI, its tool calling an HTTP API.

Built with the current agent API and its defaults: ``langchain.agents.create_agent(ChatOpenAI(...),
tools=[tool])`` (a LangGraph compiled graph; it replaces ``langgraph.prebuilt.create_react_agent``),
invoked with no ``recursion_limit``. Under test the billing API is an HTTP-backed fake tool and
Chat Completions is answered by the policy.

    python docs/examples/langgraph_example.py   # runs it under chaos and prints the trace
"""

from __future__ import annotations

import httpx
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def fetch_invoice(invoice_id: str) -> str:
    """Fetch an invoice and its total from the billing system."""
    response = httpx.get(f"https://billing.example.com/invoices/{invoice_id}", timeout=10.0)
    if response.is_error:  # LangGraph's ToolNode re-raises tool exceptions by default: report errors as text
        return f"Error {response.status_code}: {response.text}"
    return response.text


def agent(task: str) -> str:
    from langchain.agents import create_agent

    graph = create_agent(ChatOpenAI(model="gpt-4o-mini"), tools=[fetch_invoice])
    state = graph.invoke({"messages": [("user", task)]})
    return str(state["messages"][-1].content)


if __name__ == "__main__":
    from toolchaos import policies, wire
    from toolchaos.fake_tools import catalogue, faults

    result = wire.run(agent, task="What is the total of invoice inv_1?",
                      tools=[catalogue.get("fetch_invoice", faults=faults.transient(503))],
                      policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
                      http_tools=[wire.http_tool("fetch_invoice", "GET https://billing.example.com/invoices/{invoice_id}")])
    print(result.trace.table())
    print(result.summary())
