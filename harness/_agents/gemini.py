"""A port of gemini-cli's loop detection: 5 identical calls in a row, feedback first, halt on the second.

Design: every call is keyed by a hash of its tool name and its arguments exactly as the model
sent them (serialised in the model's key order, as gemini-cli hashes ``name`` + JSON of the
args). Identical consecutive calls are counted; when 5 in a row are identical, a loop is
detected:

- the first detection does not execute the call: it is refused through ``tools.refuse`` and the
  model gets gemini-cli's feedback text ("Potential loop detected ... try something different")
  as the call's result, in the design's own words;
- the second detection (the count is not reset within the task, so the next identical call)
  halts the run (STOPPED_LOOP_GUARD).

So a stubborn model gets 4 real executions, one refusal with feedback, and the run halts at the
6th identical call. Nothing else: no error classes (a permission-denied call is resent), no
Retry-After, no idempotency (a side effect can run 4 times), no normalisation (a reordered key or
a fresh request id is a different call), no cycle detection, no budget but the host loop's
40-turn cap.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from toolchaos._agents._host import Block, host_loop
from toolchaos._internal.model import ToolCall

THRESHOLD = 5  # gemini-cli's TOOL_CALL_LOOP_THRESHOLD
HALT_ON_DETECTION = 2
FEEDBACK = ("Potential loop detected: {tool} was called with the same arguments {n} times in a row. "
            "Take a step back and confirm you are making progress; if not, try something different.")


class LoopDetector:
    """Counts identical consecutive calls; feedback on the first detection, halt on the second."""

    def __init__(self) -> None:
        self.key = ""
        self.count = 0
        self.detections = 0

    def __call__(self, call: ToolCall, turn: int) -> Block | None:
        key = hashlib.sha256(f"{call.name}:{json.dumps(call.arguments, default=str)}".encode()).hexdigest()
        self.count = self.count + 1 if key == self.key else 1
        self.key = key
        if self.count < THRESHOLD:
            return None
        self.detections += 1
        reason = f"{call.name} called {self.count} times in a row with identical arguments"
        return Block("loop_detected", reason, stop=self.detections >= HALT_ON_DETECTION,
                     say=FEEDBACK.format(tool=call.name, n=self.count))


def gemini(task: str, model: Any, tools: Any) -> Any:
    """gemini-cli's loop detection in a plain tool loop."""
    return host_loop(task, model, tools, LoopDetector())
