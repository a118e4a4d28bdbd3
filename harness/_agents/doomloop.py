"""A port of the published doom-loop ladder: observe at 2 repeats in a row, block at 3, stop at 6.

Design: each call gets a loop key, the tool name plus its arguments normalised where a difference
is meaningless (key order, surrounding and repeated whitespace, letter case, request ids and
nonces), so a model that rewords an argument slightly still repeats. A call is a repeat only
when it has the previous call's key and the model already saw that previous result (it came
back in an earlier turn; two identical calls in one turn are not a repeat). On consecutive
repeats the ladder climbs:

- 2 in a row: observe (noted, the call runs);
- 3 in a row: block: the call is refused through ``tools.refuse`` before it executes and the
  model is told it is repeating; the model usually answers on its own then;
- 6 in a row: stop the run (STOPPED_LOOP_GUARD).

So a stubborn model gets 2 real executions, then refusals, and the run ends at the 6th call
unless the model answers first. What it does not do: classify errors (a permission-denied call
is resent until the ladder blocks it), honour Retry-After, keep idempotency records (a side
effect may run twice before the block), detect cycles (A-B-A-B never repeats consecutively),
watch budgets other than the host loop's 40-turn cap.
"""

from __future__ import annotations

import json
from typing import Any

from toolchaos._agents._host import Block, host_loop
from toolchaos._internal.model import ToolCall

OBSERVE_AT = 2
BLOCK_AT = 3
STOP_AT = 6

# Argument names whose values are random per request: not part of what the call asks for.
_VOLATILE = ("request_id", "requestid", "nonce", "trace_id", "traceparent")


def loop_key(name: str, args: Any) -> str:
    """The tool name and its arguments, normalised where a difference means nothing."""
    return name + json.dumps(_normalised(args), sort_keys=True, default=str)


def _normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).lower(): _normalised(v) for k, v in value.items() if str(k).lower() not in _VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_normalised(v) for v in value]
    if isinstance(value, str):
        return " ".join(value.split()).lower()
    return value


class Ladder:
    """The detector: the streak of consecutive repeats and where it stands on the ladder."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.turn = 0
        self.streak = 0
        self.observed_at: int | None = None  # the turn the streak first reached OBSERVE_AT

    def __call__(self, call: ToolCall, turn: int) -> Block | None:
        key = loop_key(call.name, call.arguments)
        if key != self.key:
            self.key, self.streak, self.observed_at = key, 1, None
        elif turn > self.turn:  # the model saw the previous result and asked again
            self.streak += 1
        self.turn = turn
        if self.streak >= OBSERVE_AT and self.observed_at is None:
            self.observed_at = turn
        if self.streak < BLOCK_AT:
            return None
        reason = (f"{call.name} called {self.streak} times in a row with the same arguments "
                  f"(repeating since turn {self.observed_at}); the result will not change")
        return Block("doom_loop", reason, stop=self.streak >= STOP_AT)


def doomloop(task: str, model: Any, tools: Any) -> Any:
    """The doom-loop ladder in a plain tool loop."""
    return host_loop(task, model, tools, Ladder())
