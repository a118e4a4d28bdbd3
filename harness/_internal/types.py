"""Leaf types of a run shared by every layer: terminal states, stop-report fields, ``AgentResult``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TERMINAL_STATES = ("COMPLETED", "STOPPED_LOOP_GUARD", "NEEDS_HUMAN", "FAILED", "PARTIAL")
HARNESS_STATES = ("CRASHED", "HARD_CEILING", "WATCHDOG")
REPORT_FIELDS = ("state", "guard", "reason", "completed", "unmet_precondition", "last_checkpoint",
                 "resume_condition")


@dataclass
class AgentResult:
    """What an agent may return: its terminal state, final answer and stop report."""

    state: str
    answer: str | None = None
    report: dict[str, Any] | None = None
