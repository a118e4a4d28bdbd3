"""The naive agent: the plain loop most people write, and the baseline that loops.

It calls the model, runs every tool the model asks for, feeds results (or the error
text, with the usual "please try again") back, and stops when the model answers or
after 40 steps. It has no guard: nothing counts repeats, nothing refuses a call.
"""

from __future__ import annotations

from typing import Any

from toolchaos._internal.model import tool_message

MAX_STEPS = 40


def naive(task: str, model: Any, tools: Any, max_steps: int = MAX_STEPS) -> str | None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(max_steps):
        turn = model.complete(messages, tools.specs)
        messages.append(turn.as_message())
        if turn.final:
            return str(turn.text)
        for call in turn.tool_calls:
            try:
                result: Any = tools.call(call.name, call.arguments, call_id=call.id)
            except Exception as exc:  # the model sees the error as prose, as in most hand-written loops
                result = f"Error: {exc}. Please try again."
            messages.append(tool_message(call, result))
    return None
