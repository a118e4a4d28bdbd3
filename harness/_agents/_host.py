"""The plain host loop that the detector-only ports (doomloop, gemini, breaker) sit in.

Those designs are loop detectors bolted onto an ordinary tool loop, not whole runtimes: they
classify no errors, keep no idempotency records and watch no budget but a step cap. This loop is
that ordinary loop: ask the model, run each tool call it asks for unless the detector blocks it,
hand every result (an error payload as it came, a raised exception as its text) back, stop when
the model answers or after ``max_steps`` model turns. A blocked call is refused through
``tools.refuse`` before it executes; the detector says whether the run goes on (the model is told
and decides again) or stops there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolchaos._internal.model import ToolCall, tool_message
from toolchaos._internal.types import AgentResult

MAX_STEPS = 40  # the cap of the study's harness the doom-loop figures come from (and of builtin:naive)


@dataclass(frozen=True)
class Block:
    """A detector's decision not to execute a call."""

    guard: str
    reason: str
    stop: bool  # end the run here (else the model is told and asked again)
    say: Any = None  # the design's own words to the model; None: what tools.refuse returns


Detector = Callable[[ToolCall, int], "Block | None"]  # (call, model turn number) -> block or None


def host_loop(task: str, model: Any, tools: Any, detect: Detector, max_steps: int = MAX_STEPS) -> AgentResult:
    """Run the plain loop with ``detect`` asked before every tool execution."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    completed: list[str] = []
    for turn_no in range(1, max_steps + 1):
        turn = model.complete(messages, tools.specs)
        messages.append(turn.as_message())
        if turn.final:
            return AgentResult("COMPLETED", answer=turn.text)
        for call in turn.tool_calls:
            block = detect(call, turn_no)
            if block is None:
                result = _execute(tools, call)
                if not _is_error(result):
                    completed.append(f"{call.name}({args_text(call.arguments)})")
                messages.append(tool_message(call, result))
                continue
            told = tools.refuse(call.name, call.arguments, guard=block.guard, reason=block.reason, call_id=call.id)
            if block.stop:
                return _stopped(block.guard, block.reason, completed, "change the approach, then run again")
            messages.append(tool_message(call, told if block.say is None else block.say))
    return _stopped("max_steps", f"{max_steps} model turns without a final answer", completed,
                    "raise the step cap or narrow the task")


def _execute(tools: Any, call: ToolCall) -> Any:
    try:
        return tools.call(call.name, call.arguments, call_id=call.id)
    except Exception as exc:  # a raised tool error goes back to the model as its text, like any plain loop
        return f"Error: {type(exc).__name__}: {exc}"


def _is_error(result: Any) -> bool:
    return (isinstance(result, dict) and "error" in result) or (isinstance(result, str) and result.startswith("Error:"))


def args_text(args: Any) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(dict(args).items()))


def _stopped(guard: str, reason: str, completed: list[str], resume: str) -> AgentResult:
    # The report keys of the README's example agent: these ports were written from the README.
    return AgentResult("STOPPED_LOOP_GUARD", report={"guard": guard, "reason": reason, "completed": completed,
                                                     "resume_condition": resume})
