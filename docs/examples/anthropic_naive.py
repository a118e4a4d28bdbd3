"""A naive tool loop on the Anthropic SDK (Messages, streamed), its tool patched by import path.

``lookup_invoice`` is the application's own tool function; the loop looks it up at
module level, so a test replaces it with a fake tool by import path
(``patch={"<this module>:lookup_invoice": "fetch_invoice"}``) and restores it afterwards.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx

TOOLS = [{"name": "fetch_invoice", "description": "Fetch an invoice and its total.",
          "input_schema": {"type": "object", "properties": {"invoice_id": {"type": "string"}},
                           "required": ["invoice_id"]}}]


def lookup_invoice(invoice_id: str) -> dict[str, Any]:
    """The real tool: the billing API (never reached under test)."""
    response = httpx.get(f"https://billing.example.com/invoices/{invoice_id}", timeout=10)
    response.raise_for_status()
    return dict(response.json())


def agent(task: str) -> str | None:
    client = anthropic.Anthropic()
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(10):
        with client.messages.stream(model="claude-sonnet-4-6", max_tokens=1024, tools=TOOLS,
                                    messages=messages) as stream:
            message = stream.get_final_message()
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        if message.stop_reason != "tool_use":
            return "".join(b.text for b in message.content if b.type == "text")
        results = []
        for block in message.content:
            if block.type == "tool_use":
                try:
                    content, is_error = json.dumps(lookup_invoice(**block.input), default=str), False
                except Exception as exc:
                    content, is_error = str(exc), True
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": content,
                                "is_error": is_error})
        messages.append({"role": "user", "content": results})
    return None


if __name__ == "__main__":
    from toolchaos import policies, wire
    from toolchaos.fake_tools import catalogue, faults

    result = wire.run(agent, task="Get the total of invoice inv_1",
                      tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30), delivery="raise")],
                      policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
                      patch={f"{__spec__.name if __spec__ else __name__}:lookup_invoice": "fetch_invoice"})
    print(result.trace.table())
    print(result.summary())
