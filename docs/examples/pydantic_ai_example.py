"""A pydantic-ai agent on an OpenAI model, its tool patched by import path.

The tool body calls ``lookup_invoice`` at module level, so a test patches
``<this module>:lookup_invoice``; the agent is built at import time, as applications do.
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
