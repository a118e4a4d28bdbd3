"""A port of the window/threshold loop breaker: 3 identical calls among the last 5 stop the run.

Design: each call is hashed as md5 of the tool name and its parameters sorted by name; the
breaker keeps the hashes of the last 5 calls (a sliding window, the current call included) and
trips when 3 of them are the same: that call is refused through ``tools.refuse`` before it
executes and the run stops (STOPPED_LOOP_GUARD).

So an exact repeat gets 2 real executions, A-B-A-B gets 4 (the 5th call is the third A in the
window), and anything spread wider than the window (A-B-C-A-B-C) never trips it. What it does
not do: tell a productive repeat from a loop (polling a job 3 times trips it), normalise values
(whitespace or a fresh request id makes a new hash), classify errors, honour Retry-After, keep
idempotency records, watch budgets other than the host loop's 40-turn cap.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from typing import Any

from toolchaos._agents._host import Block, host_loop
from toolchaos._internal.model import ToolCall

WINDOW = 5
THRESHOLD = 3


class Breaker:
    """The sliding window of call hashes."""

    def __init__(self) -> None:
        self.window: deque[str] = deque(maxlen=WINDOW)

    def __call__(self, call: ToolCall, turn: int) -> Block | None:
        params = json.dumps(sorted(call.arguments.items()), default=str)
        digest = hashlib.md5(f"{call.name}|{params}".encode(), usedforsecurity=False).hexdigest()
        self.window.append(digest)
        same = self.window.count(digest)
        if same < THRESHOLD:
            return None
        return Block("loop_breaker", f"{call.name} with the same parameters {same} times in the last {WINDOW} calls",
                     stop=True)


def breaker(task: str, model: Any, tools: Any) -> Any:
    """The window/threshold breaker in a plain tool loop."""
    return host_loop(task, model, tools, Breaker())
