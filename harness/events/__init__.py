"""The domain's core types, as users read them: trace events, tool calls, model turns, limits, terminal states.

A run's trace (``RunResult.trace``, ``<name>.trace.jsonl``) is a list of plain dicts, one per
event, typed here: ``ModelEvent``, ``ToolEvent``, ``RefusalEvent``, ``SkippedEvent``,
``LateEvent``, ``ApiEvent``, ``SideEvent``, ``EndEvent`` (``Event`` is any of them; ``Trace`` reads, writes and
prints them). An in-process agent is handed ``ToolCall``s in ``ModelTurn``s; ``Budgets`` are
what its runtime should enforce, ``Ceiling`` the harness's own fuse. ``TERMINAL_STATES`` are the
states an agent reports, ``HARNESS_STATES`` those the harness ends a run with.

Import them from here: where they are defined is the harness's own business.
"""

from toolchaos._internal.events import (
    ApiEvent,
    AskedCall,
    CallEvent,
    EndEvent,
    Event,
    LateEvent,
    ModelEvent,
    RefusalEvent,
    Shown,
    SideEvent,
    SkippedEvent,
    ToolEvent,
)
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.model import Decision, ModelTurn, ToolCall, Usage, tool_message
from toolchaos._internal.trace import Trace
from toolchaos._internal.types import HARNESS_STATES, REPORT_FIELDS, TERMINAL_STATES, AgentResult

__all__ = ["HARNESS_STATES", "REPORT_FIELDS", "TERMINAL_STATES", "AgentResult", "ApiEvent", "AskedCall", "Budgets",
           "CallEvent", "Ceiling", "Decision", "EndEvent", "Event", "LateEvent", "ModelEvent", "ModelTurn", "RefusalEvent",
           "Shown", "SideEvent", "SkippedEvent", "ToolCall", "ToolEvent", "Trace", "Usage", "tool_message"]
