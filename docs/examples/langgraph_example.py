"""A LangGraph prebuilt ReAct agent with ChatOpenAI, its tool calling an HTTP API.

Built with LangGraph's defaults: ``create_react_agent(ChatOpenAI(...), [tool])``,
invoked with no ``recursion_limit``. Under test the billing API is an HTTP-backed fake
tool and Chat Completions is answered by the policy.
"""

from __future__ import annotations

import warnings

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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent moved to langchain.agents.create_agent
        from langgraph.prebuilt import create_react_agent

        graph = create_react_agent(ChatOpenAI(model="gpt-4o-mini"), [fetch_invoice])
    state = graph.invoke({"messages": [("user", task)]})
    return str(state["messages"][-1].content)
