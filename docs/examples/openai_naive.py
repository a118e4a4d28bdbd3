"""A naive tool loop on the OpenAI SDK (Chat Completions), tools passed in.

The agent is an ordinary program: it builds an ``openai.OpenAI()`` client, sends the
conversation, runs the tool calls it gets back and feeds the results in, up to 10 steps.
It has no guard: nothing counts repeats. Under test it receives the fake tools through
``env`` (``agent(task, env)``); in production you would pass your own.

    python docs/examples/openai_naive.py      # runs it under chaos and prints the trace
"""

from __future__ import annotations

import json
from typing import Any

import openai

MAX_STEPS = 10


def agent(task: str, env: Any) -> str | None:
    client = openai.OpenAI()  # OPENAI_API_KEY / OPENAI_BASE_URL from the environment, as usual
    tools = {t.name: t for t in env.tools}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Use the tools to complete the task."},
                                      {"role": "user", "content": task}]
    for _ in range(MAX_STEPS):
        message = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                 tools=env.openai_tools).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            try:
                result: Any = tools[call.function.name](**json.loads(call.function.arguments))
            except Exception as exc:
                result = f"Error: {exc}. Please try again."
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, default=str)})
    return None  # out of steps


if __name__ == "__main__":
    from toolchaos import invariants, policies, wire
    from toolchaos.fake_tools import catalogue, faults

    result = wire.run(agent, task="Get the total of invoice inv_1",
                      tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
                      policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}))
    print(result.trace.table())
    print(result.summary())
    print(result.violations(invariants.bounded(executions=3)))
